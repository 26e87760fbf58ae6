/* tests/escapes/join_test.c — issue 10 item 2, the exec-join window: a
 * process the host adds to a live sandbox (the engine's exec, used by
 * `agentnest exec` and by `agentnest-oci exec`) must never be seen inside
 * the sandbox while it still holds host state.  A racer in the sandbox
 * (tests/helpers/join_racer.c) opens /proc/PID/{mountinfo,net/tcp,net/unix,
 * cmdline,environ} of every new pid while the host runs a few thousand
 * execs, and looks for markers only the host side has: a tmpfs mounted in
 * the test's (private) mount namespace, a TCP listener and an abstract unix
 * socket in the host network namespace, the test's and the CLI's argv, and
 * a variable in the CLI's environment.  Before the fix the process was
 * visible in the sandbox's pid namespace before it had joined the others;
 * the racer read all of these. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include "escape_fixture.h"
#include "util.h"

#define ENGINE_EXECS 1500
#define CLI_EXECS 400

static struct esc_sandbox S;
static char markdir[64];
static bool mounted;

static void setup(void) { esc_sandbox_init(&S, "busybox"); }
static void teardown(void) {
  if (mounted) umount2(markdir, MNT_DETACH);
  if (markdir[0]) rmdir(markdir);
  esc_sandbox_fini(&S);
}

TestSuite(join, .init = setup, .fini = teardown, .timeout = 900);

/* argv[0] of this process, from /proc/self/cmdline */
static void self_argv0(char *buf, size_t len) {
  size_t n = 0;
  char *c = an_test_read_file("/proc/self/cmdline", &n);
  cr_assert(c && n > 0);
  snprintf(buf, len, "%s", c);
  free(c);
}

static int run_oci_exec(const char *oci, const char *env_mark, bool quiet) {
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    if (quiet) dup2(null, 2);
    char proc[PATH_MAX];
    snprintf(proc, sizeof proc, "%s/process.json", S.dir);
    char *argv[] = {(char *) oci, "--root", S.state, "exec", "--process", proc, S.id, NULL};
    char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", (char *) env_mark, NULL};
    execve(oci, argv, envp);
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(join, exec_is_never_visible_with_host_state) {
  char racer[PATH_MAX], to[PATH_MAX + 64];
  esc_helper_path("join_racer", racer, sizeof racer);
  snprintf(to, sizeof to, "%s/probes/join_racer", S.ws);
  an_test_copy_file(racer, to, 0755);
  esc_start(&S, "/workspace/probes/join_racer /workspace/markers /workspace/race.out "
                "/workspace/stop 600 2>/workspace/race.err; echo > /workspace/raced; exec sleep 600",
            NULL);

  /* host-only state, made after the sandbox exists: a mount in this
   * process's own (private) mount namespace, a loopback TCP listener and an
   * abstract unix socket in the host network namespace */
  cr_assert(unshare(CLONE_NEWNS) == 0, "unshare mount namespace: %s", strerror(errno));
  cr_assert(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
  snprintf(markdir, sizeof markdir, "/tmp/an-join-mark-%d-XXXXXX", getpid());
  cr_assert(mkdtemp(markdir));
  cr_assert(mount("an-join-mark", markdir, "tmpfs", 0, "size=64k") == 0);
  mounted = true;
  int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  cr_assert(tcp >= 0 && bind(tcp, (struct sockaddr *) &sin, sizeof sin) == 0 && listen(tcp, 1) == 0);
  socklen_t sl = sizeof sin;
  cr_assert(getsockname(tcp, (struct sockaddr *) &sin, &sl) == 0);
  int ux = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  int ul = snprintf(sun.sun_path + 1, sizeof sun.sun_path - 1, "an-join-mark-%d", getpid());
  cr_assert(ux >= 0 && bind(ux, (struct sockaddr *) &sun,
                            (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + ul)) == 0 &&
            listen(ux, 1) == 0);

  char argv0[PATH_MAX], env_mark[64];
  self_argv0(argv0, sizeof argv0);
  snprintf(env_mark, sizeof env_mark, "AN_JOIN_ENV_MARK=%d-%ld", getpid(), random());
  char markers[8192];
  int n = snprintf(markers, sizeof markers, "%s\n0100007F:%04X 00000000:0000 0A\n@%s\n%s\n%s\n%s\n",
                   markdir, ntohs(sin.sin_port), sun.sun_path + 1, argv0, S.state, env_mark);
  cr_log_info("markers:\n%s", markers);
  /* a sandbox path would make a false alarm: none of them may be inside */
  cr_assert(!strstr(argv0, "/workspace") && !strstr(argv0, "/bin/true"));
  char tmp[PATH_MAX + 32], fin[PATH_MAX + 32];
  snprintf(tmp, sizeof tmp, "%s/markers.tmp", S.ws);
  snprintf(fin, sizeof fin, "%s/markers", S.ws);
  an_test_write_file(tmp, markers, (size_t) n, 0644);
  cr_assert(rename(tmp, fin) == 0);

  int ok = 0;
  for (int i = 0; i < ENGINE_EXECS; i++) {
    struct esc_result r = {0};
    char *argv[] = {"/bin/true", NULL};
    int st = esc_exec(&S, argv, &r);
    if (st == 0) ok++;
    else if (ok == i) cr_log_error("exec %d: status %d: %s", i, st, r.err);
    esc_result_free(&r);
  }
  cr_assert_eq(ok, ENGINE_EXECS, "engine execs failed: %d of %d ran", ok, ENGINE_EXECS);
  char oci[PATH_MAX];
  const char *b = getenv("AN_TEST_BUILD");
  snprintf(oci, sizeof oci, "%s/agentnest-oci", b && *b ? b : "build");
  /* the sandbox user, no capabilities, no_new_privs, as the sandbox layer's exec */
  static const char proc[] = "{\"user\":{\"uid\":65532,\"gid\":65532},\"args\":[\"/bin/true\"],"
                             "\"cwd\":\"/\",\"env\":[\"PATH=/bin\"],\"noNewPrivileges\":true}";
  snprintf(tmp, sizeof tmp, "%s/process.json", S.dir);
  an_test_write_file(tmp, proc, sizeof proc - 1, 0644);
  int cli_ok = 0;
  for (int i = 0; i < CLI_EXECS; i++) {
    int st = run_oci_exec(oci, env_mark, i > 0);
    if (st == 0) cli_ok++;
    else if (cli_ok == i) cr_log_error("agentnest-oci exec %d: status %d", i, st);
  }
  cr_assert_eq(cli_ok, CLI_EXECS, "agentnest-oci exec failed: %d of %d ran", cli_ok, CLI_EXECS);

  snprintf(tmp, sizeof tmp, "%s/stop", S.ws);
  an_test_write_file(tmp, "", 0, 0644);
  cr_assert(esc_wait_file(&S, "raced"), "the racer did not finish");
  char outp[PATH_MAX + 32];
  snprintf(outp, sizeof outp, "%s/race.out", S.ws);
  char *out = an_test_read_file(outp, NULL);
  if (!out) {
    snprintf(outp, sizeof outp, "%s/race.err", S.ws);
    char *e = an_test_read_file(outp, NULL);
    cr_assert_fail("racer wrote no result (stderr: %s)", e ? e : "?");
  }
  cr_log_info("racer:\n%s", out);
  unsigned long opened = 0;
  cr_assert(sscanf(out, "opened %lu", &opened) == 1);
  /* the race was run: the racer opened files of processes the host added */
  cr_assert(opened > 0, "the racer never opened an exec'd process's /proc files");
  cr_assert(!strstr(out, "HIT "), "sandbox code read host state through an exec'd process:\n%s", out);
  free(out);
  close(tcp);
  close(ux);
}
