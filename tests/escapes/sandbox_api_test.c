/* tests/escapes/sandbox_api_test.c — the escape basics again, through the
 * product path: an_sandbox_create (agentnest-init as pid 1, the monitor, a
 * workspace, an id range from the store) and an_sandbox_exec (setns into
 * the live sandbox, its own child cgroup).  The other escape files run the
 * sandbox's spec with the engine directly; this one checks that what
 * agents actually get — execs into a live sandbox — is confined the same:
 * identity, capabilities, no_new_privs, seccomp (BL-12..16 probes), no
 * leaked fds in an exec (BL-02), the runtime binary unreachable while 50
 * execs enter (BL-01), read-only root, noexec /dev/shm, no network, masked
 * /proc, invisible host processes, two live sandboxes on distinct host uids.
 *
 * Store: /tmp/an-esc-store-<runner pid>, images imported from the image
 * cache once per run (under a lock), removed by the POST_ALL hook. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agentnest.h"
#include "agentnest/sandbox.h"
#include "escape_fixture.h"
#include "store_fixture.h"
#include "util.h"
#include "ws_fixture.h"
#include "ctx_fixture.h"

#define CACHE "/var/cache/agentnest/images"
#define PROBE "/workspace/probe"

static char g_store[PATH_MAX];
static struct an_sandbox *SB, *SB2;
static struct an_sandbox_opts *OPTS;
static struct esc_host_evidence E;

static struct an_sandbox *create_sandbox(void) {
  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_create(g_store, OPTS, &sb, &err) == 0, "create: %s", err ? err->msg : "");
  char probe[PATH_MAX];
  esc_helper_path("probe", probe, sizeof probe);
  cr_assert(an_sandbox_put(sb, probe, "probe", &err) == 0, "put probe: %s", err ? err->msg : "");
  return sb;
}

static void setup(void) {
  an_test_lib_env(NULL, 0);   /* the build under test ($AN_TEST_BUILD: build-asan in check-asan) */
  snprintf(g_store, sizeof g_store, "/tmp/an-esc-store-%d", (int) getppid());
  an_test_store_make(g_store);
  an_test_store_image(g_store, "busybox", false);
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_new_ctx(an_test_ctx(), &OPTS, &err) == 0);
  cr_assert(an_sandbox_opts_set_image(OPTS, "busybox", &err) == 0);
  esc_evidence_record(&E);
  SB = create_sandbox();
}

static void destroy(struct an_sandbox **sb) {
  if (!*sb) return;
  an_error_t err = NULL;
  an_sandbox_destroy(*sb, 0, &err);
  an_error_free(&err);
  an_sandbox_close(*sb);
  *sb = NULL;
}

static void teardown(void) {
  destroy(&SB);
  destroy(&SB2);
  an_sandbox_opts_free(OPTS);
  OPTS = NULL;
  esc_evidence_fini(&E);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
  (void) stats;
  char root[PATH_MAX];
  snprintf(root, sizeof root, "/tmp/an-esc-store-%d", (int) getpid());
  an_test_store_remove(root);
}

TestSuite(sandbox_api, .init = setup, .fini = teardown, .timeout = 180);

/* exec `sh -c script`; returns stdout (heap); status in *st. */
static char *sh(struct an_sandbox *sb, const char *script, int *st) {
  char *argv[] = {"sh", "-c", (char *) script, NULL};
  struct an_exec_opts eo = {.timeout_ms = 60000};
  struct an_exec_result res;
  an_error_t err = NULL;
  cr_assert(an_sandbox_exec(sb, argv, &eo, &res, &err) == 0, "exec %s: %s", script, err ? err->msg : "");
  if (st) *st = res.status;
  char *out = strdup(res.output.stdout_buf ? res.output.stdout_buf : "");
  an_exec_result_release(&res);
  return out;
}

Test(sandbox_api, exec_identity_caps_nnp_seccomp) {
  char *out = sh(SB, "id -u; id -g; id -G; grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp|Groups):' "
                     "/proc/self/status", NULL);
  cr_assert_str_eq(out, "65532\n65532\n65532\nGroups:\t \nCapInh:\t0000000000000000\nCapPrm:\t0000000000000000\n"
                        "CapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\n"
                        "NoNewPrivs:\t1\nSeccomp:\t2\n", "%s", out);
  free(out);
}

Test(sandbox_api, exec_denied_syscalls_bl_12_to_16) {
  static const char *acts = "unshare_user clone_newuser_newns setns mount_tmpfs:/tmp umount2:/tmp "
                            "pivot_root:/tmp fsopen fsconfig fsmount keyctl add_key request_key "
                            "userfaultfd perf_event_open bpf_prog_load kexec_load finit_module "
                            "open_by_handle_at swapon reboot process_vm_writev:1 ptrace_attach:1 "
                            "io_uring_setup x32_unshare_user i386_unshare_user i386_keyctl "
                            "tiocsti:0 tiocsti_own_pty tiocsti_own_pty_high_bits";
  char script[1024];
  snprintf(script, sizeof script, PROBE " %s", acts);
  char *out = sh(SB, script, NULL);
  esc_assert_probe_all(out, acts, "EPERM ENOSYS SIGSYS ENOTTY");
  esc_assert_probe(out, "tiocsti_own_pty", "EPERM");
  free(out);
  out = sh(SB, PROBE " clone3 clone3_newuser_newns open_dev_userfaultfd", NULL);
  esc_assert_probe(out, "clone3", "ENOSYS");
  esc_assert_probe(out, "clone3_newuser_newns", "ENOSYS");
  esc_assert_probe(out, "open_dev_userfaultfd", "ENOENT");
  free(out);
  esc_evidence_assert_unchanged(&E);
}

Test(sandbox_api, exec_has_no_leaked_fds_and_pid1_is_init) {
  char *out = sh(SB, PROBE " fds fds:1; cat /proc/1/cmdline | tr '\\0' ' '", NULL);
  char buf[256];
  cr_assert_str_eq(esc_probe_result(out, "fds", buf, sizeof buf), "none", "exec leaked fds: %s", out);
  /* pid 1 (agentnest-init) holds nothing that leads to the host */
  const char *p1 = strstr(out, "\nfds ");
  cr_assert(p1, "%s", out);
  cr_assert(!strstr(p1, "->/tmp") && !strstr(p1, "->/var") && !strstr(p1, "->/work") &&
                !strstr(p1, "->/home") && !strstr(p1, "->/root"),
            "pid 1 holds host paths: %s", out);
  cr_assert(strstr(out, "agentnest-init"), "%s", out);
  free(out);
}

static void *watcher(void *arg) {
  char *argv[] = {PROBE, "exe_watch:4", NULL};
  struct an_exec_opts eo = {.timeout_ms = 60000};
  struct an_exec_result res;
  an_error_t err = NULL;
  if (an_sandbox_exec(arg, argv, &eo, &res, &err) != 0) {
    an_error_free(&err);
    return NULL;
  }
  char *out = strdup(res.output.stdout_buf ? res.output.stdout_buf : "");
  an_exec_result_release(&res);
  return out;
}

Test(sandbox_api, bl_01_runtime_unreachable_while_execs_enter) {
  char self_before[65], self_after[65];
  cr_assert(ws_file_sha256("/proc/self/exe", self_before));
  an_error_t err = NULL;
  cr_assert(an_sandbox_put_data(SB, "selfexe.sh", "#!/proc/self/exe\n", 17, 0755, &err) == 0);
  /* the watcher is an exec of its own (a second handle, another thread);
   * an exec's leftovers are killed when it ends, so it cannot be detached */
  struct an_sandbox *watch_sb = NULL;
  cr_assert(an_sandbox_open_ctx(an_test_ctx(), g_store, an_sandbox_id(SB), &watch_sb, &err) == 0, "%s", err ? err->msg : "");
  pthread_t th;
  cr_assert(pthread_create(&th, NULL, watcher, watch_sb) == 0);
  usleep(200000);
  for (int i = 0; i < 50; i++) {
    char *argv[] = {"/bin/true", NULL};
    struct an_exec_result res;
    cr_assert(an_sandbox_exec(SB, argv, NULL, &res, &err) == 0, "%s", err ? err->msg : "");
    an_exec_result_release(&res);
  }
  char *argv[] = {"/workspace/selfexe.sh", NULL};
  struct an_exec_result res;
  if (an_sandbox_exec(SB, argv, NULL, &res, &err) == 0) {
    cr_assert(res.status != 0, "#!/proc/self/exe ran successfully: %s", res.output.stdout_buf);
    cr_assert_null(strstr(res.output.stdout_buf, "Synthesis"), "the runtime re-ran inside");
    an_exec_result_release(&res);
  }
  an_error_free(&err);
  char *out = NULL;
  cr_assert(pthread_join(th, (void **) &out) == 0);
  an_sandbox_close(watch_sb);
  cr_assert(out, "the watcher exec failed");
  cr_assert(strncmp(out, "exe_watch NONE:", 15) == 0, "an exe was writable from inside: %s", out);
  cr_assert(atol(out + 15) > 0, "watcher saw nothing: %s", out);
  free(out);
  cr_assert(ws_file_sha256("/proc/self/exe", self_after));
  cr_assert_str_eq(self_before, self_after);
  esc_evidence_assert_unchanged(&E);
}

Test(sandbox_api, exec_filesystem_and_network_confined) {
  char *out = sh(SB, PROBE " create:/x create:/usr/x connect:10.255.255.1,80 read:/proc/kcore "
                     "read:/proc/timer_list write:/proc/sys/kernel/core_pattern,x; "
                     "cp " PROBE " /dev/shm/p; chmod 755 /dev/shm/p; " PROBE " exec:/dev/shm/p; "
                     "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '",
                 NULL);
  cr_assert_eq(esc_count_lines(out, "create EROFS"), 2, "%s", out);
  esc_assert_probe(out, "connect", "ENETUNREACH");
  cr_assert_eq(esc_count_lines(out, "read OK"), 0, "masked path readable: %s", out);
  esc_assert_probe(out, "write", "EROFS EACCES");
  esc_assert_probe(out, "exec", "EACCES");
  cr_assert(strstr(out, "\nlo\n"), "interfaces: %s", out);
  cr_assert_eq(esc_count_lines(out, ""), 8, "more than lo: %s", out);
  free(out);
  esc_evidence_assert_unchanged(&E);
}

Test(sandbox_api, host_processes_invisible_and_live_sandboxes_on_distinct_uids) {
  pid_t victim = fork();
  cr_assert(victim >= 0);
  if (victim == 0) {
    for (;;) pause();
  }
  char script[256];
  snprintf(script, sizeof script, PROBE " kill9:%d; ls /proc | grep -cE '^[0-9]+$'", (int) victim);
  char *out = sh(SB, script, NULL);
  esc_assert_probe(out, "kill9", "ESRCH");
  cr_assert(atoi(strchr(out, '\n') + 1) < 20, "many pids visible: %s", out);
  free(out);
  int st;
  cr_assert_eq(waitpid(victim, &st, WNOHANG), 0, "host process died");
  kill(victim, SIGKILL);
  waitpid(victim, &st, 0);

  SB2 = create_sandbox();
  pid_t a = an_sandbox_init_pid(SB), b = an_sandbox_init_pid(SB2);
  char pa[64], pb[64], sa[4096], sb2[4096];
  snprintf(pa, sizeof pa, "/proc/%d/status", a);
  snprintf(pb, sizeof pb, "/proc/%d/status", b);
  cr_assert(esc_read_file(pa, sa, sizeof sa) && esc_read_file(pb, sb2, sizeof sb2));
  uid_t ua = (uid_t) strtoul(strstr(sa, "\nUid:") + 5, NULL, 10);
  uid_t ub = (uid_t) strtoul(strstr(sb2, "\nUid:") + 5, NULL, 10);
  /* pid 1 is agentnest-init; it runs as the sandbox's mapped ids too */
  cr_assert_neq(ua, 0, "sandbox init runs as host root");
  cr_assert_neq(ub, 0);
  cr_assert_neq(ua, ub, "two live sandboxes share host uid %u", ua);
}

/* A sandbox may open its workspace to everyone (chmod 0777); host users
 * other than the sandbox's own id range still cannot reach it, so it is no
 * channel around --network none.  Control: host root reads the file. */
Test(sandbox_api, workspace_opened_by_the_sandbox_stays_closed_to_host_users) {
  free(sh(SB, "chmod 0777 /workspace; echo inside > /workspace/chan; chmod 0666 /workspace/chan", NULL));
  char path[PATH_MAX + 128], cmd[PATH_MAX * 3];
  snprintf(path, sizeof path, "%.3900s/sandboxes/%s/workspace/chan", g_store, an_sandbox_id(SB));
  snprintf(cmd, sizeof cmd, "cat %s >/dev/null 2>&1", path);
  cr_assert_eq(system(cmd), 0, "control: host root cannot read %s", path);
  snprintf(cmd, sizeof cmd,
           "setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'cat %s || echo x >> %s' "
           ">/dev/null 2>&1", path, path);
  int st = system(cmd);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "host user nobody reached the workspace");
  char *out = sh(SB, "cat /workspace/chan", NULL);
  cr_assert_str_eq(out, "inside\n", "the file was changed from the host: %s", out);
  free(out);
}

/* Follows a sandbox's events until "destroyed"; keeps whether
 * "init_exited" came first. */
struct event_watch {
  char id[64];
  bool init_exited, destroyed;
  int r;
};

static int on_event(void *data, const char *json) {
  struct event_watch *w = data;
  if (strstr(json, "\"type\":\"init_exited\"")) w->init_exited = true;
  if (strstr(json, "\"type\":\"destroyed\"")) w->destroyed = true;
  return 0;
}

static void *follow_events(void *arg) {
  struct event_watch *w = arg;
  an_error_t err = NULL;
  w->r = an_sandbox_events(g_store, w->id, true, on_event, w, &err);
  an_error_free(&err);
  return NULL;
}

/* Issue 10, item 10: `kill -TERM 1` (and every other signal, also SIGKILL,
 * which the kernel already refuses) sent to pid 1 from inside the sandbox
 * does not end it: agentnest-init drops signals whose sender is in its pid
 * namespace.  The sandbox, its workspace and its init stay; destroy still
 * works.  An exit of init (here: SIGKILL from the host) is an event. */
Test(sandbox_api, pid1_ignores_signals_from_inside_and_its_exit_is_an_event) {
  pid_t init = an_sandbox_init_pid(SB);
  int st = -1;
  char *out = sh(SB, "echo kept > /workspace/kept; for s in TERM INT HUP QUIT USR1 USR2 WINCH "
                     "KILL STOP CONT; do kill -$s 1 && echo $s; done; echo sent", &st);
  cr_assert_eq(st, 0, "%s", out);
  cr_assert(strstr(out, "TERM\nINT\nHUP\n") && strstr(out, "\nsent\n"), "%s", out);
  free(out);
  /* init has had time to act on what it was sent (a second exec enters
   * only a live sandbox); the workspace is there */
  out = sh(SB, "sleep 1; cat /workspace/kept; echo alive", &st);
  cr_assert_eq(st, 0, "exec after the signals: %s", out);
  cr_assert_str_eq(out, "kept\nalive\n");
  free(out);
  cr_assert_eq(an_sandbox_init_pid(SB), init);
  cr_assert_eq(kill(init, 0), 0, "pid 1 (host pid %d) is gone", (int) init);

  /* destroy still works */
  an_error_t err = NULL;
  cr_assert(an_sandbox_destroy(SB, 0, &err) == 0, "destroy: %s", err ? err->msg : "");
  an_sandbox_close(SB);
  SB = NULL;

  /* an exit of init is an event (then the monitor tears the sandbox down) */
  SB2 = create_sandbox();
  struct event_watch w = {0};
  snprintf(w.id, sizeof w.id, "%s", an_sandbox_id(SB2));
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, follow_events, &w), 0);
  free(sh(SB2, "true", NULL));   /* the follower is reading by now or replays */
  cr_assert_eq(kill(an_sandbox_init_pid(SB2), SIGKILL), 0);
  pthread_join(t, NULL);
  cr_assert_eq(w.r, 0);
  cr_assert(w.destroyed, "no destroyed event");
  cr_assert(w.init_exited, "the exit of init was not an event");
  an_sandbox_close(SB2);
  SB2 = NULL;
}
