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
#include <yajl/yajl_tree.h>
#include <time.h>
#include <unistd.h>
#include "escape_fixture.h"
#include "rm_tree.h"
#include "util.h"

#define ENGINE_EXECS 1500
#define CLI_EXECS 400
#define AN_EXECS 400
#define CACHE "/var/cache/agentnest/images"

static struct esc_sandbox S;
static char markdir[64];
static bool mounted;
static char store[64];      /* the agentnest CLI test's store (a temp dir) */
static char an_id[64];      /* its sandbox */

static void setup(void) { esc_sandbox_init(&S, "busybox"); }
static void teardown(void) {
  if (mounted) umount2(markdir, MNT_DETACH);
  if (markdir[0]) rmdir(markdir);
  if (an_id[0]) an_test_sh("'%s/agentnest' --root '%s/root' destroy '%s' >/dev/null 2>&1",
                           getenv("AN_TEST_BUILD") ? getenv("AN_TEST_BUILD") : "build", store, an_id);
  if (store[0]) {
    char root[128];
    snprintf(root, sizeof root, "%s/root", store);
    an_test_store_remove(root);
    rmdir(store);
  }
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

struct host_marks {
  int tcp, ux;
  char text[8192];   /* one marker per line */
  size_t len;
};

/* Host-only state, made after the sandbox exists: a mount in this
 * process's own (private) mount namespace, a loopback TCP listener and an
 * abstract unix socket in the host network namespace; plus the markers of
 * the host CLI given in `extra` (argv, environment).  Written atomically to
 * WS/markers, where the racer waits for it. */
static void make_host_marks(struct host_marks *h, const char *ws, const char *extra) {
  cr_assert(unshare(CLONE_NEWNS) == 0, "unshare mount namespace: %s", strerror(errno));
  cr_assert(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
  snprintf(markdir, sizeof markdir, "/tmp/an-join-mark-%d-XXXXXX", getpid());
  cr_assert(mkdtemp(markdir));
  cr_assert(mount("an-join-mark", markdir, "tmpfs", 0, "size=64k") == 0);
  mounted = true;
  h->tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  cr_assert(h->tcp >= 0 && bind(h->tcp, (struct sockaddr *) &sin, sizeof sin) == 0 &&
            listen(h->tcp, 1) == 0);
  socklen_t sl = sizeof sin;
  cr_assert(getsockname(h->tcp, (struct sockaddr *) &sin, &sl) == 0);
  h->ux = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sun = {.sun_family = AF_UNIX};
  int ul = snprintf(sun.sun_path + 1, sizeof sun.sun_path - 1, "an-join-mark-%d", getpid());
  cr_assert(h->ux >= 0 && bind(h->ux, (struct sockaddr *) &sun,
                               (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + ul)) == 0 &&
            listen(h->ux, 1) == 0);
  int n = snprintf(h->text, sizeof h->text, "%s\n0100007F:%04X 00000000:0000 0A\n@%s\n%s",
                   markdir, ntohs(sin.sin_port), sun.sun_path + 1, extra);
  cr_assert(n > 0 && (size_t) n < sizeof h->text);
  h->len = (size_t) n;
  cr_log_info("markers:\n%s", h->text);
  char tmp[PATH_MAX + 32], fin[PATH_MAX + 32];
  snprintf(tmp, sizeof tmp, "%s/markers.tmp", ws);
  snprintf(fin, sizeof fin, "%s/markers", ws);
  an_test_write_file(tmp, h->text, h->len, 0644);
  cr_assert(rename(tmp, fin) == 0);
}

/* Stop the racer, read its report and assert it read no host state but did
 * open files of processes the host added. */
static void check_race(struct host_marks *h, const char *ws, bool (*finished)(void)) {
  char tmp[PATH_MAX + 32];
  snprintf(tmp, sizeof tmp, "%s/stop", ws);
  an_test_write_file(tmp, "", 0, 0644);
  cr_assert(finished(), "the racer did not finish");
  char outp[PATH_MAX + 32];
  snprintf(outp, sizeof outp, "%s/race.out", ws);
  char *out = an_test_read_file(outp, NULL);
  cr_assert(out, "the racer wrote no result");
  cr_log_info("racer:\n%s", out);
  unsigned long opened = 0;
  cr_assert(sscanf(out, "opened %lu", &opened) == 1);
  /* the race was run: the racer opened files of processes the host added */
  cr_assert(opened > 0, "the racer never opened an exec'd process's /proc files");
  cr_assert(!strstr(out, "HIT "), "sandbox code read host state through an exec'd process:\n%s", out);
  free(out);
  close(h->tcp);
  close(h->ux);
}

static bool esc_raced(void) { return esc_wait_file(&S, "raced"); }

Test(join, engine_and_agentnest_oci_exec_never_show_host_state) {
  char racer[PATH_MAX], to[PATH_MAX + 64];
  esc_helper_path("join_racer", racer, sizeof racer);
  snprintf(to, sizeof to, "%s/probes/join_racer", S.ws);
  an_test_copy_file(racer, to, 0755);
  esc_start(&S, "/workspace/probes/join_racer /workspace/markers /workspace/race.out "
                "/workspace/stop 600 2>/workspace/race.err; echo > /workspace/raced; exec sleep 600",
            NULL);

  char argv0[PATH_MAX], env_mark[64], extra[PATH_MAX * 2 + 128];
  self_argv0(argv0, sizeof argv0);
  snprintf(env_mark, sizeof env_mark, "AN_JOIN_ENV_MARK=%d-%ld", getpid(), random());
  /* the test's own argv, agentnest-oci's --root argument, its environment */
  snprintf(extra, sizeof extra, "\n%s\n%s\n%s\n", argv0, S.state, env_mark);
  /* a sandbox path would make a false alarm */
  cr_assert(!strstr(argv0, "/workspace") && !strstr(argv0, "/bin/true"));
  struct host_marks h;
  make_host_marks(&h, S.ws, extra);

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
  char tmp[PATH_MAX + 32];
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

  check_race(&h, S.ws, esc_raced);
}

/* Run argv with envp; stdout into out (NUL-terminated, may be NULL), stderr
 * to /dev/null unless `show_err`.  Returns the exit status (128+N). */
static int run_cmd(char *const argv[], char *const envp[], char *out, size_t len, bool show_err) {
  int p[2];
  cr_assert(pipe2(p, O_CLOEXEC) == 0);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(p[1], 1);
    if (!show_err) dup2(null, 2);
    execve(argv[0], argv, envp);
    _exit(127);
  }
  close(p[1]);
  size_t got = 0;
  ssize_t n;
  char sink[512];
  while ((n = read(p[0], out && got + 1 < len ? out + got : sink,
                   out && got + 1 < len ? len - 1 - got : sizeof sink)) > 0)
    if (out && got + 1 < len) got += (size_t) n;
  if (out) out[got] = '\0';
  close(p[0]);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static pid_t racer_cli = -1;

static bool an_raced(void) {
  int st;
  for (int i = 0; i < 3000; i++) {
    pid_t r = waitpid(racer_cli, &st, WNOHANG);
    if (r == racer_cli) return WIFEXITED(st) && WEXITSTATUS(st) == 0;
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  }
  return false;
}

/* The same race through the sandbox layer's exec: `agentnest exec`, whose
 * argv (--workdir) and environment are the host markers here. */
Test(join, agentnest_exec_never_shows_host_state) {
  char layout[PATH_MAX];
  snprintf(layout, sizeof layout, CACHE "/busybox/layout");
  struct stat st;
  if (stat(layout, &st) != 0) cr_skip_test("no busybox image in " CACHE " (make images)");
  char an[PATH_MAX], profiles[PATH_MAX], src_profiles[PATH_MAX];
  const char *b = getenv("AN_TEST_BUILD"), *src = getenv("AN_TEST_SRC");
  snprintf(an, sizeof an, "%s/agentnest", b && *b ? b : "build");
  snprintf(src_profiles, sizeof src_profiles, "%s/profiles", src && *src ? src : ".");
  char prof_env[PATH_MAX + 32], env_mark[64];
  snprintf(prof_env, sizeof prof_env, "AGENTNEST_PROFILES=%s", realpath(src_profiles, profiles) ? profiles : src_profiles);
  snprintf(env_mark, sizeof env_mark, "AN_JOIN_ENV_MARK=%d-%ld", getpid(), random());
  char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", prof_env, env_mark, NULL};
  snprintf(store, sizeof store, "/tmp/an-join-store-%d-XXXXXX", getpid());
  cr_assert(mkdtemp(store));
  cr_assert(chmod(store, 0755) == 0);
  char root[128];
  snprintf(root, sizeof root, "%s/root", store);

  char out[8192];
  char *imp[] = {an, "--root", root, "image", "import", layout, "--name", "busybox", NULL};
  cr_assert_eq(run_cmd(imp, envp, NULL, 0, true), 0, "image import");
  char *create[] = {an, "--root", root, "create", "--image", "busybox", "--timeout", "900", NULL};
  cr_assert_eq(run_cmd(create, envp, out, sizeof out, true), 0, "create");
  snprintf(an_id, sizeof an_id, "%.*s", (int) strcspn(out, "\n"), out);
  char *insp[] = {an, "--root", root, "inspect", an_id, NULL};
  cr_assert_eq(run_cmd(insp, envp, out, sizeof out, true), 0, "inspect");
  char e[256];
  yajl_val doc = yajl_tree_parse(out, e, sizeof e);
  cr_assert(doc, "inspect JSON: %s", e);
  const char *wsp[] = {"workspace", NULL};
  const char *ws_host = YAJL_GET_STRING(yajl_tree_get(doc, wsp, yajl_t_string));
  cr_assert(ws_host, "inspect: no workspace");
  char ws[PATH_MAX];
  snprintf(ws, sizeof ws, "%s", ws_host);
  yajl_tree_free(doc);

  char racer[PATH_MAX], to[PATH_MAX + 64], workdir[64], wd_host[PATH_MAX + 64];
  esc_helper_path("join_racer", racer, sizeof racer);
  snprintf(to, sizeof to, "%s/join_racer", ws);
  an_test_copy_file(racer, to, 0755);
  /* the argv marker: a --workdir only the CLI's command line names */
  snprintf(workdir, sizeof workdir, "/workspace/an-join-argv-%d", getpid());
  snprintf(wd_host, sizeof wd_host, "%s/an-join-argv-%d", ws, getpid());
  cr_assert(mkdir(wd_host, 0755) == 0);
  racer_cli = fork();
  cr_assert(racer_cli >= 0);
  if (racer_cli == 0) {
    char *rv[] = {an, "--root", root, "exec", an_id, "--timeout", "900", "--",
                  "/workspace/join_racer", "/workspace/markers", "/workspace/race.out",
                  "/workspace/stop", "600", NULL};
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    execve(an, rv, envp);
    _exit(127);
  }

  char extra[256];
  snprintf(extra, sizeof extra, "\n%s\n%s\n", workdir, env_mark);
  struct host_marks h;
  make_host_marks(&h, ws, extra);
  int ok = 0;
  char *ev[] = {an, "--root", root, "exec", an_id, "--workdir", workdir, "--", "/bin/true", NULL};
  for (int i = 0; i < AN_EXECS; i++) {
    int r = run_cmd(ev, envp, NULL, 0, ok == i);
    if (r == 0) ok++;
    else if (ok == i) cr_log_error("agentnest exec %d: status %d", i, r);
  }
  cr_assert_eq(ok, AN_EXECS, "agentnest exec failed: %d of %d ran", ok, AN_EXECS);
  check_race(&h, ws, an_raced);
}
