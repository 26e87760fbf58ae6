/* sandbox/egress_run.c — egress for one sandbox at create and teardown:
 * its own netns (<dir>/netns, net/netns.h) with the ruleset of its policy
 * (net/ruleset.h), /etc/resolv.conf and /etc/hosts generated and bind-mounted
 * read-only, and the EGRESS PROCESS that runs the DNS filter and the
 * transparent proxy (net/dnsfilter.h, net/proxy.h) on a poll loop.
 *
 * Why a process of its own (recorded in <dir>/egress.pid) and not the
 * monitor: a one-shot `run` has no monitor (the caller keeps the sandbox),
 * and one design must serve both; the monitor's loop stays the lifetime
 * keeper only.  Like the monitor it is double-forked (its own session, stdio
 * on /dev/null) and runs in the HOST netns, so upstream DNS queries and the
 * proxy's connections leave as its own; its LISTENING sockets are made in
 * the sandbox's netns by a thread that joined it (127.0.0.1:53 UDP+TCP for
 * DNS, 127.0.0.1 and ::1 port AN_SB_EGRESS_PROXY_PORT for the proxy: ports
 * below 1024 the sandbox cannot bind, having no capability over that netns).
 * SIGUSR1 makes it reload its policy from the options record (a live
 * change, egress_change.c).  It ends on SIGTERM/SIGKILL from teardown; `prune` removes it with the rest
 * of a sandbox whose monitor or creator died.
 *
 * Fail closed: the filter and the proxy are made before the fork, in the
 * creator, so any failure refuses the sandbox with its reason; every step's
 * leftovers (netns mount, files, process) are removed by teardown. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine/process.h"
#include "net/dnsfilter.h"
#include "net/egress.h"
#include "net/netns.h"
#include "net/proxy.h"
#include "net/ruleset.h"
#include "sandbox/egress_run.h"
#include "sandbox/opts_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"

#define NETNS_FILE "netns"
#define PID_FILE "egress.pid"

struct listeners { int dns_udp, dns_tcp, proxy4, proxy6; };

static int bound(int family, int type, const char *addr, uint16_t port, an_error_t *err) {
  int fd = socket(family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return an_error_set(err, errno, "egress: socket for %s:%u", addr, port);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_storage ss = {0};
  socklen_t len;
  if (family == AF_INET) {
    struct sockaddr_in *s = (void *) &ss;
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    inet_pton(AF_INET, addr, &s->sin_addr);
    len = sizeof *s;
  } else {
    struct sockaddr_in6 *s = (void *) &ss;
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(port);
    inet_pton(AF_INET6, addr, &s->sin6_addr);
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    len = sizeof *s;
  }
  if (bind(fd, (struct sockaddr *) &ss, len) < 0 || (type == SOCK_STREAM && listen(fd, 128) < 0)) {
    int e = errno;
    close(fd);
    return an_error_set(err, e, "egress: bind %s port %u in the sandbox netns", addr, port);
  }
  return fd;
}

static int make_listeners(void *ctx, an_error_t *err) {
  struct listeners *l = ctx;
  if ((l->dns_udp = bound(AF_INET, SOCK_DGRAM, "127.0.0.1", 53, err)) < 0) return l->dns_udp;
  if ((l->dns_tcp = bound(AF_INET, SOCK_STREAM, "127.0.0.1", 53, err)) < 0) return l->dns_tcp;
  if ((l->proxy4 = bound(AF_INET, SOCK_STREAM, "127.0.0.1", AN_SB_EGRESS_PROXY_PORT, err)) < 0) return l->proxy4;
  if (access("/proc/sys/net/ipv6", F_OK) == 0 &&
      (l->proxy6 = bound(AF_INET6, SOCK_STREAM, "::1", AN_SB_EGRESS_PROXY_PORT, err)) < 0)
    return l->proxy6;
  return 0;
}

static void close_listeners(struct listeners *l) {
  int *fds[] = {&l->dns_udp, &l->dns_tcp, &l->proxy4, &l->proxy6};
  for (size_t i = 0; i < 4; i++)
    if (*fds[i] >= 0) {
      close(*fds[i]);
      *fds[i] = -1;
    }
}

static int write_file(const char *dir, const char *name, const char *text, an_error_t *err) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return an_error_set(err, errno, "egress: write %s", p);
  size_t n = strlen(text);
  bool ok = write(fd, text, n) == (ssize_t) n;
  close(fd);
  return ok ? 0 : an_error_set(err, EIO, "egress: write %s", p);
}

static int add_ro_bind(struct an_spec *spec, const char *source, const char *dest, an_error_t *err) {
  struct an_spec_mount *m = realloc(spec->mounts, (spec->n_mounts + 1) * sizeof *m);
  if (!m) return an_error_set(err, ENOMEM, "spec mounts");
  spec->mounts = m;
  m = &spec->mounts[spec->n_mounts];
  memset(m, 0, sizeof *m);
  m->options = calloc(5, sizeof *m->options);
  spec->n_mounts++;   /* an_spec_free frees what was set */
  if (!m->options || !(m->destination = strdup(dest)) || !(m->type = strdup("bind")) ||
      !(m->source = strdup(source)) || !(m->options[0] = strdup("bind")) ||
      !(m->options[1] = strdup("ro")) || !(m->options[2] = strdup("nosuid")) ||
      !(m->options[3] = strdup("nodev")))
    return an_error_set(err, ENOMEM, "spec mounts");
  return 0;
}

/* resolv.conf and hosts of the sandbox, mounted where the image has them
 * (the root is read-only: no mount point can be made).  An image without
 * /etc/resolv.conf still resolves: libc then asks 127.0.0.1, the filter. */
static int dns_files(const char *dir, const char *rootfs, struct an_spec *spec, an_error_t *err) {
  static const struct { const char *name, *dest, *text; } files[] = {
    {"resolv.conf", "/etc/resolv.conf", "# made by agentnest: the sandbox's DNS filter\nnameserver 127.0.0.1\n"},
    {"hosts", "/etc/hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"},
  };
  for (size_t i = 0; i < 2; i++) {
    int r = write_file(dir, files[i].name, files[i].text, err);
    if (r < 0) return r;
    char target[4096], src[4096];
    snprintf(target, sizeof target, "%s%s", rootfs, files[i].dest);
    struct stat st;
    if (lstat(target, &st) < 0 || !S_ISREG(st.st_mode)) continue;
    snprintf(src, sizeof src, "%s/%s", dir, files[i].name);
    if ((r = add_ro_bind(spec, src, files[i].dest, err)) < 0) return r;
  }
  return 0;
}

static int set_netns_path(struct an_spec *spec, const char *path, an_error_t *err) {
  for (size_t i = 0; i < spec->linux.n_namespaces; i++) {
    struct an_spec_namespace *ns = &spec->linux.namespaces[i];
    if (ns->clone_flag != CLONE_NEWNET) continue;
    free(ns->path);
    if (!(ns->path = strdup(path))) return an_error_set(err, ENOMEM, "spec");
    return 0;
  }
  return an_error_set(err, EINVAL, "egress: the spec has no network namespace");
}

#define FD_SET_MAX 4096

struct helper {
  const char *dir;
  struct an_egress_ctx ctx;
  /* the creator's fds open before the filter and proxy were made: the
   * egress process closes them (a caller's pipe held there would keep
   * `agentnest create | cat` waiting, a lock or workspace fd would outlive
   * the creator); what was opened after is the filter's and the proxy's */
  uint64_t inherited[FD_SET_MAX / 64];
};

static void note_open_fds(struct helper *h) {
  DIR *d = opendir("/proc/self/fd");
  struct dirent *e;
  int self = d ? dirfd(d) : -1;
  while (d && (e = readdir(d))) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == self || fd < 3 || fd >= FD_SET_MAX) continue;
    h->inherited[fd / 64] |= 1ull << (fd % 64);
  }
  if (d) closedir(d);
}

static void close_inherited(const struct helper *h, int keep) {
  for (int fd = 3; fd < FD_SET_MAX; fd++)
    if (fd != keep && (h->inherited[fd / 64] & (1ull << (fd % 64)))) close(fd);
}

static void sink(void *c, const struct an_net_event *ev) {
  struct helper *h = c;
  cleanup_free char *fields = NULL;
  an_error_t e = NULL;
  if (an_egress_event_fields(ev, &fields, &e) == 0) an_sb_event(h->dir, "egress", "%s", fields);
  an_error_free(&e);
}

/* SIGHUP: the options record changed (egress_change.c): take its policy.
 * A record that does not parse keeps the old policy (the ruleset was
 * replaced already, so the stricter of the two applies meanwhile). */
static void reload(struct helper *h) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", h->dir, AN_SB_OPTIONS_FILE);
  struct an_sandbox_opts *o = NULL;
  struct an_egress_policy *p = NULL;
  an_error_t e = NULL;
  if (an_sandbox_opts_new(&o, &e) == 0 && an_sandbox_opts_load_profile(o, path, NULL, &e) == 0 &&
      an_sb_egress_policy(o, &p, &e) == 0 && an_egress_policy_load_host_addrs(p, &e) == 0) {
    an_egress_policy_free((struct an_egress_policy *) h->ctx.policy);
    h->ctx.policy = an_steal(&p);
  }
  an_egress_policy_free(p);
  an_sandbox_opts_free(o);
  an_error_free(&e);
}

_Noreturn static void helper_main(struct helper *h, struct an_dnsfilter *df, struct an_proxy *px, int ready_fd) {
  close_inherited(h, ready_fd);
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    if (null > 2) close(null);
  }
  if (chdir("/") < 0) {}
  signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGUSR1);
  sigprocmask(SIG_BLOCK, &set, NULL);
  int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  pid_t self = getpid();
  if (sfd < 0 || write(ready_fd, &self, sizeof self) != sizeof self) _exit(1);
  close(ready_fd);
  struct pollfd p[3] = {{.fd = an_dnsfilter_fd(df), .events = POLLIN},
                        {.fd = an_proxy_fd(px), .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
  for (;;) {
    if (poll(p, 3, -1) < 0) continue;
    if (p[2].revents) {
      struct signalfd_siginfo si;
      if (read(sfd, &si, sizeof si) == (ssize_t) sizeof si && si.ssi_signo == SIGUSR1) reload(h);
      else _exit(0);
    }
    an_error_t e = NULL;
    if (p[0].revents && an_dnsfilter_dispatch(df, &e) < 0) _exit(1);
    if (p[1].revents && an_proxy_dispatch(px, &e) < 0) _exit(1);
  }
}

static int start_helper(struct an_sandbox *sb, struct helper *h, struct an_dnsfilter *df, struct an_proxy *px,
                        an_error_t *err) {
  int pfd = -1;
  int f = an_sb_fork_detached("egress", &pfd, err);
  if (f < 0) return f;
  if (f == 0) helper_main(h, df, px, pfd);
  pid_t pid = 0;
  ssize_t n;
  while ((n = read(pfd, &pid, sizeof pid)) < 0 && errno == EINTR) {}
  close(pfd);
  if (n != (ssize_t) sizeof pid || pid <= 0)
    return an_error_set(err, ECHILD, "sandbox %s: the egress process did not start", sb->rec.id);
  uint64_t start = 0;
  an_error_t e = NULL;
  an_process_start_time(pid, &start, &e);
  an_error_free(&e);
  char text[64];
  snprintf(text, sizeof text, "%d %llu\n", (int) pid, (unsigned long long) start);
  return write_file(sb->dir, PID_FILE, text, err);
}

int an_sb_egress_start(struct an_sandbox *sb, const struct an_sandbox_opts *opts, const char *rootfs,
                       struct an_spec *spec, an_error_t *err) {
  struct an_egress_policy *p = NULL;
  int r = an_sb_egress_policy(opts, &p, err);
  if (r < 0) return r;
  struct an_dnsfilter *df = NULL;
  struct an_proxy *px = NULL;
  struct listeners l = {-1, -1, -1, -1};
  struct helper h = {.dir = sb->dir};
  char ns[4096];
  snprintf(ns, sizeof ns, "%s/%s", sb->dir, NETNS_FILE);
  if (p->mode == AN_EGRESS_NONE) goto out;
  note_open_fds(&h);
  if ((r = an_egress_policy_load_host_addrs(p, err)) < 0 || (r = an_netns_create(ns, err)) < 0 ||
      (r = an_ruleset_load(ns, p, AN_SB_EGRESS_PROXY_PORT, err)) < 0 ||
      (r = an_netns_run_in(ns, make_listeners, &l, err)) < 0)
    goto out;
  h.ctx = (struct an_egress_ctx){.policy = p, .netns_path = ns, .sink = sink, .sink_ctx = &h};
  struct an_net_hooks hooks;
  an_egress_hooks(&h.ctx, &hooks);
  struct sockaddr_storage ups[AN_EGRESS_MAX_UPSTREAMS];
  for (size_t i = 0; i < p->n_upstreams; i++) ups[i] = p->upstreams[i].sa;
  struct an_dnsfilter_config dc = {.udp_fd = l.dns_udp, .tcp_fd = l.dns_tcp,
                                   .upstreams = p->n_upstreams ? ups : NULL, .n_upstreams = p->n_upstreams,
                                   .limits = {.ttl_cap_s = 300}};
  l.dns_udp = l.dns_tcp = -1;   /* the filter owns them, also on failure */
  if ((r = an_dnsfilter_new(&dc, &hooks, &df, err)) < 0) goto out;
  struct an_proxy_config pc = {.listen_fd4 = l.proxy4, .listen_fd6 = l.proxy6};
  l.proxy4 = l.proxy6 = -1;
  if ((r = an_proxy_new(&pc, &hooks, &px, err)) < 0) goto out;
  if ((r = dns_files(sb->dir, rootfs, spec, err)) < 0 || (r = set_netns_path(spec, ns, err)) < 0) goto out;
  r = start_helper(sb, &h, df, px, err);
  if (r >= 0)
    an_sb_event(sb->dir, "egress_started", ",\"mode\":\"%s\",\"entries\":%zu", an_egress_mode_name(p->mode),
                p->n_entries);
out:
  /* the egress process has its own copies of everything */
  an_proxy_free(px);
  an_dnsfilter_free(df);
  close_listeners(&l);
  an_egress_policy_free(p);
  return r < 0 ? an_error_prefix(err, "network %s", an_sandbox_opts_network(opts)) : 0;
}

/* a pidfd of the sandbox's egress process (checked against its start
 * time, so a reused pid is never signalled), or -1 */
static int egress_pidfd(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, PID_FILE);
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  int pid = 0, fd = -1;
  unsigned long long start = 0;
  if (fscanf(f, "%d %llu", &pid, &start) == 2 && pid > 0) {
    an_error_t e = NULL;
    if (an_process_pidfd_checked(pid, start, &fd, &e) < 0) fd = -1;
    an_error_free(&e);
  }
  fclose(f);
  return fd;
}

void an_sb_egress_reload(const char *dir) {
  int fd = egress_pidfd(dir);
  if (fd < 0) return;
  an_error_t e = NULL;
  an_process_signal(fd, SIGUSR1, &e);
  an_error_free(&e);
  close(fd);
}

int an_sb_egress_stop(const char *dir, an_error_t *err) {
  int fd = egress_pidfd(dir);
  if (fd >= 0) {
    an_error_t e = NULL;
    an_process_signal(fd, SIGKILL, &e);
    an_error_free(&e);
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    while (poll(&pfd, 1, 5000) < 0 && errno == EINTR) {}
    close(fd);
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, NETNS_FILE);
  return an_netns_remove(path, err);
}
