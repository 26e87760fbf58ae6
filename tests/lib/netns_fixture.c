/* tests/lib/netns_fixture.c — see netns_fixture.h. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "netns_fixture.h"
#include "util.h"

static int self_ns(void) {
  int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  cr_assert(fd >= 0, "open /proc/thread-self/ns/net: %s", strerror(errno));
  return fd;
}

void nf_enter(int fd) {
  cr_assert(setns(fd, CLONE_NEWNET) == 0, "setns net: %s", strerror(errno));
}

int nf_host_enter(void) {
  if (unshare(CLONE_NEWNET) != 0) cr_skip_test("unshare(CLONE_NEWNET): %s", strerror(errno));
  if (an_test_sh("command -v ip >/dev/null && ip link set lo up") != 0) cr_skip_test("no iproute2 `ip`");
  return self_ns();
}

int nf_netns_new(void) {
  int back = self_ns();
  cr_assert(unshare(CLONE_NEWNET) == 0, "unshare(CLONE_NEWNET): %s", strerror(errno));
  int fd = self_ns();
  cr_assert_eq(an_test_sh("ip link set lo up"), 0);
  nf_enter(back);
  close(back);
  return fd;
}

static char *vfmt(const char *fmt, va_list ap) {
  char *cmd = NULL;
  cr_assert(vasprintf(&cmd, fmt, ap) >= 0);
  return cmd;
}

int nf_sh(int ns, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *cmd = vfmt(fmt, ap);
  va_end(ap);
  int back = self_ns();
  nf_enter(ns);
  int r = an_test_sh("%s", cmd);
  nf_enter(back);
  close(back);
  free(cmd);
  return r;
}

pid_t nf_spawn(int ns, const char *log, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *cmd = vfmt(fmt, ap);
  va_end(ap);
  pid_t pid = fork();
  cr_assert(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    if (setns(ns, CLONE_NEWNET) != 0) _exit(120);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || nul < 0) _exit(121);
    dup2(nul, 0); dup2(fd, 1); dup2(fd, 2);
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", cmd, (char *) NULL);
    _exit(127);
  }
  free(cmd);
  return pid;
}

void nf_stop(pid_t pid) {
  if (pid <= 0) return;
  kill(-pid, SIGTERM);
  kill(pid, SIGTERM);
  for (int i = 0; i < 50; i++) {
    if (waitpid(pid, NULL, WNOHANG) == pid) { kill(-pid, SIGKILL); return; }
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL);
  }
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

void nf_sockaddr(const char *addr, unsigned port, struct sockaddr_storage *ss, socklen_t *len) {
  memset(ss, 0, sizeof *ss);
  struct sockaddr_in *s4 = (struct sockaddr_in *) ss;
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) ss;
  if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t) port);
    *len = sizeof *s4;
  } else {
    cr_assert_eq(inet_pton(AF_INET6, addr, &s6->sin6_addr), 1, "address %s", addr);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((uint16_t) port);
    *len = sizeof *s6;
  }
}

int nf_socket(int ns, int type, const char *addr, unsigned port) {
  struct sockaddr_storage ss;
  socklen_t len;
  nf_sockaddr(addr, port, &ss, &len);
  int back = self_ns();
  nf_enter(ns);
  int fd = socket(ss.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  cr_assert(fd >= 0, "socket: %s", strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (ss.ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  cr_assert(bind(fd, (struct sockaddr *) &ss, len) == 0, "bind %s:%u: %s", addr, port, strerror(errno));
  if (type == SOCK_STREAM) cr_assert(listen(fd, 64) == 0, "listen: %s", strerror(errno));
  nf_enter(back);
  close(back);
  return fd;
}

int nf_sandbox_netns(void) {
  int ns = nf_netns_new();
  cr_assert_eq(nf_sh(ns, "ip link add eth0 type veth peer name eth0p && ip link set eth0p up && "
                         "ip link set eth0 up && ip addr add 10.200.0.2/24 dev eth0 && "
                         "ip -6 addr add 2001:db8:ff::2/64 dev eth0 nodad && "
                         "ip route add default via 10.200.0.1 dev eth0 && "
                         "ip -6 route add default via 2001:db8:ff::1 dev eth0"), 0,
               "sandbox netns links");
  return ns;
}

bool nf_wait(bool (*cond)(void *arg), void *arg, int tries) {
  for (int i = 0; i < tries; i++) {
    if (cond(arg)) return true;
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL);
  }
  return cond(arg);
}
