/* tests/integration/engine_controls_test.c — engine controls end to end:
 * seccomp (default profile), hooks (state on stdin; a failing hook aborts
 * create and leaves nothing), process.terminal over a console socket,
 * rlimits, oomScoreAdj, sysctl (namespaced only), and BL-01: the runtime's
 * init is not reachable through /proc/1/exe before it execs. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agentnest/container.h"
#include <seccomp.h>
#include "agentnest/seccomp_profile.h"
#include "bundle.h"

static struct an_test_bundle B;

static void setup(void) { an_test_bundle_make(&B, "ctl"); }
static void teardown(void) { an_test_bundle_remove(&B); }

TestSuite(engine_controls, .init = setup, .fini = teardown, .timeout = 60);

static char **strv(const char *a, ...) {
  va_list ap;
  size_t n = 1;
  char **v = calloc(16, sizeof *v);
  v[0] = strdup(a);
  va_start(ap, a);
  const char *s;
  while ((s = va_arg(ap, const char *)) && n < 15) v[n++] = strdup(s);
  va_end(ap);
  return v;
}

static void assert_nothing_left(void) {
  cr_assert(!an_test_state_exists(&B), "state directory left behind");
  cr_assert(!an_test_cgroup_exists(B.id), "cgroup left behind");
  int st;
  cr_assert(waitpid(-1, &st, WNOHANG) < 0 && errno == ECHILD, "a child process is left");
}

Test(engine_controls, default_seccomp_profile_is_installed_and_denies_unshare) {
  const char *src = getenv("AN_TEST_SRC");
  char path[512];
  snprintf(path, sizeof path, "%s/profiles/seccomp/default.json", src ? src : ".");
  struct an_spec *spec = an_test_bundle_spec(&B, "sh", "-c",
      "grep '^Seccomp:' /proc/self/status; unshare -U true 2>/dev/null && echo UNSHARED; exit 0",
      NULL);
  an_error_t err = NULL;
  cr_assert_eq(an_seccomp_profile_load(path, &spec->linux.seccomp, &err), 0, "%s",
               err ? err->msg : "");
  char *out = NULL;
  int r = an_test_run_capture(spec, &B, &out, &err);
  cr_assert_eq(r, 0, "status %d: %s", r, err ? err->msg : "");
  cr_assert(strstr(out, "Seccomp:\t2"), "%s", out);
  cr_assert(!strstr(out, "UNSHARED"), "%s", out);
  free(out);
  an_spec_free(spec);
}

Test(engine_controls, hooks_get_the_state_on_stdin) {
  char out_path[300], script[1024];
  snprintf(out_path, sizeof out_path, "%s/hook.out", B.dir);
  snprintf(script, sizeof script, "cat >> %s; echo >> %s", out_path, out_path);
  struct an_spec *spec = an_test_bundle_spec(&B, "true", NULL);
  spec->hooks.create_runtime = calloc(1, sizeof *spec->hooks.create_runtime);
  spec->hooks.create_runtime[0].path = strdup("/bin/sh");
  spec->hooks.create_runtime[0].args = strv("sh", "-c", script, NULL);
  spec->hooks.n_create_runtime = 1;
  spec->hooks.poststop = calloc(1, sizeof *spec->hooks.poststop);
  spec->hooks.poststop[0].path = strdup("/bin/sh");
  spec->hooks.poststop[0].args = strv("sh", "-c", script, NULL);
  spec->hooks.n_poststop = 1;
  an_error_t err = NULL;
  cr_assert_eq(an_test_run_capture(spec, &B, NULL, &err), 0, "%s", err ? err->msg : "");
  FILE *f = fopen(out_path, "r");
  cr_assert(f, "hooks did not run");
  char buf[8192] = "";
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  cr_assert(strstr(buf, B.id), "state lacks the id: %s", buf);
  cr_assert(strstr(buf, "\"creating\""), "createRuntime state: %s", buf);
  cr_assert(strstr(buf, "\"stopped\""), "poststop state: %s", buf);
  an_spec_free(spec);
}

Test(engine_controls, failing_create_runtime_hook_aborts_and_leaves_nothing) {
  struct an_spec *spec = an_test_bundle_spec(&B, "true", NULL);
  spec->hooks.create_runtime = calloc(1, sizeof *spec->hooks.create_runtime);
  spec->hooks.create_runtime[0].path = strdup("/bin/false");
  spec->hooks.n_create_runtime = 1;
  struct an_container_opts o = an_test_bundle_opts(&B);
  an_error_t err = NULL;
  int r = an_container_create(spec, &o, &err);
  cr_assert_eq(r, -ECANCELED, "%d %s", r, err ? err->msg : "");
  cr_assert(strstr(err->msg, "hooks.createRuntime[0] /bin/false"), "%s", err->msg);
  an_error_free(&err);
  assert_nothing_left();
  an_spec_free(spec);
}

Test(engine_controls, hook_timeout_kills_the_hook_and_aborts) {
  struct an_spec *spec = an_test_bundle_spec(&B, "true", NULL);
  spec->hooks.prestart = calloc(1, sizeof *spec->hooks.prestart);
  spec->hooks.prestart[0].path = strdup("/bin/sleep");
  spec->hooks.prestart[0].args = strv("sleep", "30", NULL);
  spec->hooks.prestart[0].has_timeout = true;
  spec->hooks.prestart[0].timeout = 1;
  spec->hooks.n_prestart = 1;
  an_error_t err = NULL;
  int r = an_test_run_capture(spec, &B, NULL, &err);
  cr_assert_eq(r, -ETIMEDOUT, "%d %s", r, err ? err->msg : "");
  an_error_free(&err);
  assert_nothing_left();
  an_spec_free(spec);
}

Test(engine_controls, rlimits_and_oom_score_adj_apply) {
  struct an_spec *spec = an_test_bundle_spec(&B, "sh", "-c",
      "ulimit -n; cat /proc/self/oom_score_adj", NULL);
  spec->process->has_oom_score_adj = true;
  spec->process->oom_score_adj = 500;
  char *out = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_test_run_capture(spec, &B, &out, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq(out, "1024\n500\n");
  free(out);
  an_spec_free(spec);
}

static void add_sysctl(struct an_spec *spec, const char *k, const char *v) {
  struct an_spec_linux *l = &spec->linux;
  l->sysctl = realloc(l->sysctl, (l->n_sysctl + 1) * sizeof *l->sysctl);
  l->sysctl[l->n_sysctl].key = strdup(k);
  l->sysctl[l->n_sysctl++].value = strdup(v);
}

Test(engine_controls, namespaced_sysctl_is_written_in_the_container) {
  struct an_spec *spec = an_test_bundle_spec(&B, "cat", "/proc/sys/net/ipv4/ip_forward", NULL);
  add_sysctl(spec, "net.ipv4.ip_forward", "1");
  char *out = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_test_run_capture(spec, &B, &out, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq(out, "1\n");
  free(out);
  an_spec_free(spec);
}

Test(engine_controls, host_wide_sysctl_is_refused_and_nothing_left) {
  struct an_spec *spec = an_test_bundle_spec(&B, "true", NULL);
  add_sysctl(spec, "kernel.core_pattern", "|/tmp/x");
  struct an_container_opts o = an_test_bundle_opts(&B);
  an_error_t err = NULL;
  cr_assert_eq(an_container_create(spec, &o, &err), -EINVAL);
  cr_assert(strstr(err->msg, "linux.sysctl.kernel.core_pattern"), "%s", err->msg);
  an_error_free(&err);
  assert_nothing_left();
  an_spec_free(spec);
}

Test(engine_controls, terminal_master_is_sent_to_the_console_socket) {
  char sock_path[108];
  int sn = snprintf(sock_path, sizeof sock_path, "%s/console.sock", B.dir);
  cr_assert(sn > 0 && (size_t) sn < sizeof sock_path);
  int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  strcpy(sa.sun_path, sock_path);
  cr_assert(bind(ls, (struct sockaddr *) &sa, sizeof sa) == 0 && listen(ls, 1) == 0);
  struct an_spec *spec = an_test_bundle_spec(&B, "sh", "-c", "tty; echo done", NULL);
  spec->process->terminal = true;
  struct an_container_opts o = an_test_bundle_opts(&B);
  o.console_socket = sock_path;
  an_error_t err = NULL;
  cr_assert_eq(an_container_create(spec, &o, &err), 0, "%s", err ? err->msg : "");
  int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
  cr_assert(c >= 0);
  char name[64];
  struct iovec iov = {.iov_base = name, .iov_len = sizeof name};
  union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                      .msg_controllen = sizeof u.buf};
  cr_assert(recvmsg(c, &mh, 0) > 0);
  struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
  cr_assert(cm && cm->cmsg_type == SCM_RIGHTS, "no fd received");
  int master;
  memcpy(&master, CMSG_DATA(cm), sizeof master);
  cr_assert_eq(an_container_start(B.state_root, B.id, &err), 0, "%s", err ? err->msg : "");
  char out[256] = "";
  size_t len = 0;
  while (len < sizeof out - 1 && !strstr(out, "done")) {
    struct pollfd p = {.fd = master, .events = POLLIN};
    if (poll(&p, 1, 10000) <= 0) break;
    ssize_t n = read(master, out + len, sizeof out - 1 - len);
    if (n <= 0) break;
    len += n;
    out[len] = '\0';
  }
  cr_assert(strstr(out, "/dev/pts/0"), "tty output: %s", out);
  cr_assert(strstr(out, "done"), "%s", out);
  close(master);
  close(c);
  close(ls);
  cr_assert_eq(an_container_delete(B.state_root, B.id, true, &err), 0, "%s", err ? err->msg : "");
  an_spec_free(spec);
}

Test(engine_controls, bl_01_runtime_init_exe_is_not_reachable_before_exec) {
  struct an_spec *spec = an_test_bundle_spec(&B, "sleep", "60", NULL);
  struct an_container_opts o = an_test_bundle_opts(&B);
  an_error_t err = NULL;
  cr_assert_eq(an_container_create(spec, &o, &err), 0, "%s", err ? err->msg : "");
  /* pid 1 is still the runtime (waiting for start).  A process in the
   * container, even its root, must not reach its executable. */
  struct an_spec_process p = *spec->process;
  char *args[] = {"sh", "-c",
                  "readlink /proc/1/exe && echo REACHED; cat /proc/1/exe > /dev/null 2>&1 && "
                  "echo OPENED; ls /proc/1/fd 2>/dev/null && echo FDS; exit 0", NULL};
  p.args = args;
  int mfd = open(B.dir, O_TMPFILE | O_RDWR, 0600);
  cr_assert(mfd >= 0);
  /* capture through fd 1 of the test itself is not possible here; use the
   * exit status: 0 only when nothing was reachable */
  char *args2[] = {"sh", "-c",
                   "readlink /proc/1/exe >/dev/null 2>&1 && exit 11; "
                   "cat /proc/1/exe >/dev/null 2>&1 && exit 12; "
                   "ls /proc/1/fd >/dev/null 2>&1 && exit 13; exit 0", NULL};
  (void) args;
  p.args = args2;
  int r = an_container_exec(B.state_root, B.id, &p, false, NULL, NULL, NULL, &err);
  cr_assert_eq(r, 0, "runtime init reachable (status %d: 11 readlink, 12 open, 13 fds) %s", r,
               err ? err->msg : "");
  close(mfd);
  cr_assert_eq(an_container_delete(B.state_root, B.id, true, &err), 0, "%s", err ? err->msg : "");
  an_spec_free(spec);
}

Test(engine_controls, idmapped_bind_mount_shows_host_root_files_as_container_root) {
  char data[300];
  snprintf(data, sizeof data, "%s/data", B.dir);
  cr_assert(mkdir(data, 0755) == 0);
  char target[400];
  snprintf(target, sizeof target, "%s/data", B.rootfs);
  cr_assert(mkdir(target, 0755) == 0);
  struct an_spec *spec = an_test_bundle_spec(&B, "stat", "-c", "%u:%g", "/data", NULL);
  struct an_spec_mount *m = realloc(spec->mounts, (spec->n_mounts + 1) * sizeof *m);
  spec->mounts = m;
  m = &spec->mounts[spec->n_mounts++];
  memset(m, 0, sizeof *m);
  m->destination = strdup("/data");
  m->type = strdup("bind");
  m->source = strdup(data);
  m->options = strv("bind", "ro", NULL);
  m->uid_mappings = calloc(1, sizeof *m->uid_mappings);
  m->uid_mappings[0] = (struct an_spec_id_mapping){0, 100000, 65536};
  m->n_uid_mappings = 1;
  m->gid_mappings = calloc(1, sizeof *m->gid_mappings);
  m->gid_mappings[0] = (struct an_spec_id_mapping){0, 100000, 65536};
  m->n_gid_mappings = 1;
  char *out = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_test_run_capture(spec, &B, &out, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq(out, "0:0\n", "owner seen inside: %s", out);
  free(out);
  an_spec_free(spec);
}

/* exec installs the filter that create compiled and kept in the state
 * directory; a container whose state lacks it gets it compiled again. */
Test(engine_controls, exec_installs_the_seccomp_filter_kept_at_create) {
  struct an_spec *spec = an_test_bundle_spec(&B, "sleep", "60", NULL);
  struct an_spec_seccomp *sc = calloc(1, sizeof *sc);
  sc->default_action = SCMP_ACT_ALLOW;
  sc->syscalls = calloc(1, sizeof *sc->syscalls);
  sc->n_syscalls = 1;
  sc->syscalls[0].names = strv("mkdir", "mkdirat", NULL);
  sc->syscalls[0].action = SCMP_ACT_ERRNO(EPERM);
  spec->linux.seccomp = sc;
  struct an_container_opts o = an_test_bundle_opts(&B);
  o.detach = true;
  an_error_t err = NULL;
  cr_assert_eq(an_container_run(spec, &o, &err), 0, "%s", err ? err->msg : "");
  char saved[600];
  snprintf(saved, sizeof saved, "%s/%s/seccomp.bpf", B.state_root, B.id);
  struct stat st;
  cr_assert_eq(stat(saved, &st), 0, "%s missing after create", saved);
  cr_assert_eq(st.st_mode & 0077, 0, "%s mode %o", saved, st.st_mode & 0777);
  struct an_spec_process p = *spec->process;
  char *args[] = {"sh", "-c", "mkdir /tmp/d 2>/dev/null && exit 0; "
                  "grep -q '^Seccomp:.2' /proc/self/status && exit 7", NULL};
  p.args = args;
  int r = an_container_exec(B.state_root, B.id, &p, false, NULL, NULL, NULL, &err);
  cr_assert_eq(r, 7, "exec with the kept filter: status %d: %s", r, err ? err->msg : "");
  cr_assert_eq(unlink(saved), 0);
  r = an_container_exec(B.state_root, B.id, &p, false, NULL, NULL, NULL, &err);
  cr_assert_eq(r, 7, "exec with the filter compiled again: status %d: %s", r, err ? err->msg : "");
  cr_assert_eq(an_container_delete(B.state_root, B.id, true, &err), 0, "%s", err ? err->msg : "");
  an_spec_free(spec);
}

/* --- Landlock (annotation org.agentnest.landlock, engine/landlock.h) ------------ */

static void set_landlock(struct an_spec *spec, const char *value) {
  spec->annotations = calloc(1, sizeof *spec->annotations);
  spec->annotations[0].key = strdup("org.agentnest.landlock");
  spec->annotations[0].value = strdup(value);
  spec->n_annotations = 1;
}

/* /proc is mounted read-write, but it is not among the paths Landlock allows
 * writes beneath (engine/landlock.h: proc, sysfs, cgroup and mqueue mounts
 * are left out): a process may write its own /proc/self/comm unless Landlock
 * confines its writes; /dev/shm, a writable tmpfs, stays writable. */
static const char *write_probe =
  "echo probe 2>/dev/null >/proc/self/comm && echo PROC-WRITTEN; "
  "echo b > /dev/shm/probe && echo SHM-WRITTEN; exit 0";

Test(engine_controls, landlock_required_confines_init_and_exec_writes_to_writable_mounts) {
  struct an_spec *spec = an_test_bundle_spec(&B, "sh", "-c", write_probe, NULL);
  /* negative control: without the annotation /proc/self/comm is writable */
  char *out = NULL;
  an_error_t err = NULL;
  int r = an_test_run_capture(spec, &B, &out, &err);
  cr_assert_eq(r, 0, "status %d: %s", r, err ? err->msg : "");
  cr_assert(strstr(out, "PROC-WRITTEN") && strstr(out, "SHM-WRITTEN"), "control: %s", out);
  free(out);
  out = NULL;

  set_landlock(spec, "required");
  r = an_test_run_capture(spec, &B, &out, &err);
  cr_assert_eq(r, 0, "status %d: %s", r, err ? err->msg : "");
  cr_assert(!strstr(out, "PROC-WRITTEN"), "Landlock let init write /proc/self/comm: %s", out);
  cr_assert(strstr(out, "SHM-WRITTEN"), "Landlock denied a writable mount: %s", out);
  free(out);

  /* an exec'd process does not descend from init: it is confined too */
  an_test_set_args(spec, "sleep", "60", NULL);
  struct an_container_opts o = an_test_bundle_opts(&B);
  o.detach = true;
  cr_assert_eq(an_container_run(spec, &o, &err), 0, "%s", err ? err->msg : "");
  struct an_spec_process p = *spec->process;
  char *args[] = {"sh", "-c", "echo probe 2>/dev/null >/proc/self/comm && exit 3; "
                  "echo b > /dev/shm/probe || exit 4; exit 0", NULL};
  p.args = args;
  r = an_container_exec(B.state_root, B.id, &p, false, NULL, NULL, NULL, &err);
  cr_assert_eq(r, 0, "exec: status %d (3: /proc/self/comm written, 4: /dev/shm denied): %s", r,
               err ? err->msg : "");
  cr_assert_eq(an_container_delete(B.state_root, B.id, true, &err), 0, "%s", err ? err->msg : "");
  an_spec_free(spec);
}

Test(engine_controls, landlock_annotation_with_an_unknown_value_is_refused_and_nothing_left) {
  struct an_spec *spec = an_test_bundle_spec(&B, "true", NULL);
  set_landlock(spec, "sometimes");
  struct an_container_opts o = an_test_bundle_opts(&B);
  an_error_t err = NULL;
  int r = an_container_run(spec, &o, &err);
  cr_assert_eq(r, -EINVAL, "run returned %d", r);
  cr_assert(err && strstr(err->msg, "org.agentnest.landlock") && strstr(err->msg, "sometimes"),
            "%s", err ? err->msg : "");
  an_error_free(&err);
  assert_nothing_left();
  an_spec_free(spec);
}
