/* tests/integration/container_test.c — the engine end to end: run, exit
 * statuses, the create/start lifecycle, isolation seen from inside
 * (BL-02, BL-05, BL-06, BL-07, BL-09, BL-18, BL-20) and that a failed
 * create leaves nothing behind.  Run as root on the real kernel. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agentnest/container.h"
#include "bundle.h"

static struct an_test_bundle B;
/* A test's background helper (the BL-20 racer): killed by teardown before
 * the bundle is removed, also when an assertion ended the test early. */
static pid_t helper_pid;

static void setup(void) { an_test_bundle_make(&B, "ctr"); }
static void teardown(void) {
  if (helper_pid > 0) {
    kill(helper_pid, SIGKILL);
    waitpid(helper_pid, NULL, 0);
    helper_pid = 0;
  }
  an_test_bundle_remove(&B);
}

TestSuite(container, .init = setup, .fini = teardown, .timeout = 60);

/* Run `sh -c script` in the default spec; return status, output in *out. */
static int run_sh(const char *script, char **out) {
  struct an_spec *spec = an_test_bundle_spec(&B, "sh", "-c", script, NULL);
  an_error_t err = NULL;
  int r = an_test_run_capture(spec, &B, out, &err);
  cr_assert(r >= 0, "run failed: %s", err ? err->msg : "?");
  an_spec_free(spec);
  return r;
}

static void assert_nothing_left(void) {
  cr_assert(!an_test_state_exists(&B), "state directory left behind");
  cr_assert(!an_test_cgroup_exists(B.id), "cgroup left behind");
  int st;
  cr_assert(waitpid(-1, &st, WNOHANG) < 0 && errno == ECHILD, "a child process is left");
}

Test(container, run_true_exits_zero_and_leaves_nothing) {
  struct an_spec *spec = an_test_bundle_spec(&B, "true", NULL);
  an_error_t err = NULL;
  int r = an_test_run_capture(spec, &B, NULL, &err);
  cr_assert_eq(r, 0, "status %d: %s", r, err ? err->msg : "");
  an_spec_free(spec);
  assert_nothing_left();
}

Test(container, echo_output_reaches_stdout) {
  char *out = NULL;
  cr_assert_eq(run_sh("echo hi", &out), 0);
  cr_assert_str_eq(out, "hi\n");
  free(out);
}

Test(container, exit_status_propagates) {
  cr_assert_eq(run_sh("exit 3", NULL), 3);
}

Test(container, killed_by_signal_reports_128_plus_signal) {
  an_test_bundle_install_helper(&B, "segv");
  struct an_spec *spec = an_test_bundle_spec(&B, "/bin/segv", NULL);
  an_error_t err = NULL;
  int r = an_test_run_capture(spec, &B, NULL, &err);
  cr_assert_eq(r, 128 + SIGSEGV, "status %d: %s", r, err ? err->msg : "");
  an_spec_free(spec);
}

Test(container, pid_1_is_the_user_process) {
  char *out = NULL;
  run_sh("echo $$; cat /proc/1/comm; exit 0", &out);
  cr_assert_str_eq(out, "1\nsh\n");
  free(out);
}

Test(container, uid_map_inside_shows_the_mapping) {
  char *out = NULL;
  run_sh("cat /proc/self/uid_map /proc/self/gid_map; id -u", &out);
  cr_assert(strstr(out, "0     100000      65536"), "uid_map: %s", out);
  cr_assert(strstr(out, "\n0\n"), "id -u: %s", out);
  free(out);
}

Test(container, no_capabilities_and_no_new_privs) {
  char *out = NULL;
  run_sh("grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs)' /proc/self/status", &out);
  cr_assert(strstr(out, "CapInh:\t0000000000000000"), "%s", out);
  cr_assert(strstr(out, "CapPrm:\t0000000000000000"), "%s", out);
  cr_assert(strstr(out, "CapEff:\t0000000000000000"), "%s", out);
  cr_assert(strstr(out, "CapBnd:\t0000000000000000"), "%s", out);
  cr_assert(strstr(out, "CapAmb:\t0000000000000000"), "%s", out);
  cr_assert(strstr(out, "NoNewPrivs:\t1"), "%s", out);
  free(out);
}

Test(container, read_only_root_refuses_writes) {
  char *out = NULL;
  cr_assert_neq(run_sh("touch /x", &out), 0);
  cr_assert(strstr(out, "Read-only file system"), "%s", out);
  free(out);
  struct stat st;
  char path[512];
  snprintf(path, sizeof path, "%s/x", B.rootfs);
  cr_assert(stat(path, &st) < 0, "file created in the host rootfs");
}

Test(container, masked_proc_files_are_the_null_device) {
  char *out = NULL;
  run_sh("for f in /proc/keys /proc/timer_list; do stat -c '%n %t:%T' $f; done; "
         "wc -c < /proc/keys; ls /sys/firmware | wc -l", &out);
  cr_assert(strstr(out, "/proc/keys 1:3"), "%s", out);
  cr_assert(strstr(out, "/proc/timer_list 1:3"), "%s", out);
  cr_assert(strstr(out, "\n0\n0\n"), "masked content not empty: %s", out);
  free(out);
}

Test(container, bl_09_proc_sys_and_sysrq_are_read_only) {
  char *out = NULL;
  int r = run_sh("echo 1 > /proc/sys/kernel/sysrq && echo WROTE1; "
                 "echo '|/tmp/x' > /proc/sys/kernel/core_pattern && echo WROTE2; "
                 "echo 3 > /proc/sys/vm/drop_caches && echo WROTE3; "
                 "grep -E ' /proc/(sys|irq|bus|fs) ' /proc/mounts", &out);
  (void) r;
  cr_assert(!strstr(out, "WROTE"), "a /proc/sys write succeeded: %s", out);
  cr_assert(strstr(out, "/proc/sys proc ro,"), "/proc/sys not mounted ro: %s", out);
  free(out);
}

Test(container, bl_05_sys_fs_cgroup_is_read_only) {
  char *out = NULL;
  run_sh("mkdir /sys/fs/cgroup/x && echo MKDIR; echo max > /sys/fs/cgroup/pids.max && echo WROTE; "
         "cat /proc/self/cgroup | grep '^0::'", &out);
  cr_assert(!strstr(out, "MKDIR") && !strstr(out, "WROTE"), "%s", out);
  cr_assert(strstr(out, "0::/\n"), "cgroup path leaked: %s", out);
  free(out);
}

Test(container, hostname_is_set) {
  struct an_spec *spec = an_test_bundle_spec(&B, "hostname", NULL);
  free(spec->hostname);
  spec->hostname = strdup("agent-box");
  char *out = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_test_run_capture(spec, &B, &out, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq(out, "agent-box\n");
  free(out);
  an_spec_free(spec);
}

Test(container, bl_02_no_runtime_fd_survives_into_the_container) {
  char *out = NULL;
  run_sh("ls /proc/$$/fd; exit 0", &out);
  cr_assert_str_eq(out, "0\n1\n2\n", "open fds: %s", out);
  free(out);
}

Test(container, bl_07_dev_null_is_the_runtime_s_own_device) {
  /* The image plants /dev/null as a symlink to core_pattern. */
  char path[512];
  snprintf(path, sizeof path, "%s/dev/null", B.rootfs);
  cr_assert(symlink("/proc/sys/kernel/core_pattern", path) == 0);
  char *out = NULL;
  run_sh("stat -c '%F %t:%T' /dev/null", &out);
  cr_assert_str_eq(out, "character special file 1:3\n", "%s", out);
  free(out);
}

Test(container, bl_18_supplementary_groups_are_exactly_the_configured_set) {
  an_test_bundle_write(&B, "opt/denied", "secret\n", 0604);
  char path[512];
  snprintf(path, sizeof path, "%s/opt/denied", B.rootfs);
  /* owned 0:1000 inside = host 100000:101000 */
  cr_assert(chown(path, 100000, 101000) == 0);
  cr_assert(chmod(path, 0604) == 0);
  struct an_spec *spec = an_test_bundle_spec(&B, "sh", "-c",
      "grep '^Groups' /proc/self/status; id -G; cat /opt/denied || echo DENIED", NULL);
  spec->process->user.uid = 1000;
  spec->process->user.gid = 1000;
  spec->process->user.additional_gids = calloc(1, sizeof(gid_t));
  spec->process->user.additional_gids[0] = 1000;
  spec->process->user.n_additional_gids = 1;
  char *out = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_test_run_capture(spec, &B, &out, &err), 0, "%s", err ? err->msg : "");
  cr_assert(strstr(out, "Groups:\t1000 \n") || strstr(out, "Groups:\t1000\n"), "%s", out);
  cr_assert(strstr(out, "DENIED"), "group bits did not deny: %s", out);
  cr_assert(!strstr(out, "secret"), "%s", out);
  free(out);
  an_spec_free(spec);
}

static void assert_create_fails(struct an_spec *spec, int want_errno, const char *want_msg) {
  an_test_assert_create_refused(&B, spec, want_errno, want_msg);
  assert_nothing_left();
}

Test(container, failed_create_missing_rootfs_leaves_nothing) {
  struct an_spec *spec = an_test_bundle_spec(&B, "true", NULL);
  free(spec->root.path);
  spec->root.path = strdup("does-not-exist");
  assert_create_fails(spec, ENOENT, "root.path");
  an_spec_free(spec);
}

Test(container, failed_create_missing_executable_leaves_nothing) {
  struct an_spec *spec = an_test_bundle_spec(&B, "no-such-program", NULL);
  assert_create_fails(spec, ENOENT, "executable file not found");
  an_spec_free(spec);
}

/* A missing cwd is made (runc, crun); where the container's root cannot
 * make it (the image's / belongs to host root), create fails cleanly. */
Test(container, failed_create_uncreatable_cwd_leaves_nothing) {
  struct an_spec *spec = an_test_bundle_spec(&B, "true", NULL);
  free(spec->process->cwd);
  spec->process->cwd = strdup("/nonexistent");
  assert_create_fails(spec, EACCES, "process.cwd /nonexistent");
  an_spec_free(spec);
}

Test(container, bl_02_cwd_through_proc_fd_magic_link_is_refused) {
  struct an_spec *spec = an_test_bundle_spec(&B, "true", NULL);
  free(spec->process->cwd);
  spec->process->cwd = strdup("/proc/self/fd/3");
  assert_create_fails(spec, ELOOP, "process.cwd /proc/self/fd/3");
  free(spec->process->cwd);
  spec->process->cwd = strdup("/proc/1/cwd");
  assert_create_fails(spec, ELOOP, "process.cwd /proc/1/cwd");
  an_spec_free(spec);
}

/* A symlink on the way to a mount target is followed inside the root, as
 * runc and crun do (openat2 RESOLVE_IN_ROOT): "/escape" -> "/" leads to the
 * container's root, never to the host's. */
Test(container, bl_20_mount_destination_through_symlink_stays_inside_the_root) {
  char path[512];
  snprintf(path, sizeof path, "%s/escape", B.rootfs);
  cr_assert(symlink("/", path) == 0);
  snprintf(path, sizeof path, "%s/an-bl20", B.rootfs);
  cr_assert(mkdir(path, 0755) == 0);
  struct an_spec *spec = an_test_bundle_spec(&B, "sh", "-c",
      "grep -q ' /an-bl20 .* - tmpfs ' /proc/self/mountinfo", NULL);
  struct an_spec_mount *m = realloc(spec->mounts, (spec->n_mounts + 1) * sizeof *m);
  spec->mounts = m;
  m = &spec->mounts[spec->n_mounts++];
  memset(m, 0, sizeof *m);
  m->destination = strdup("/escape/an-bl20");
  m->type = strdup("tmpfs");
  m->source = strdup("tmpfs");
  an_error_t err = NULL;
  int r = an_test_run_capture(spec, &B, NULL, &err);
  cr_assert_eq(r, 0, "tmpfs not at the in-root /an-bl20: %d %s", r, err ? err->msg : "");
  struct stat st;
  cr_assert(stat("/an-bl20", &st) < 0, "created on the host");
  an_spec_free(spec);
}

/* The last component of a target is never followed (BL-20: a name swapped
 * for a symlink is refused). */
Test(container, bl_20_mount_destination_that_is_a_symlink_is_refused) {
  char path[512];
  snprintf(path, sizeof path, "%s/escape", B.rootfs);
  cr_assert(symlink("/", path) == 0);
  struct an_spec *spec = an_test_bundle_spec(&B, "true", NULL);
  struct an_spec_mount *m = realloc(spec->mounts, (spec->n_mounts + 1) * sizeof *m);
  spec->mounts = m;
  m = &spec->mounts[spec->n_mounts++];
  memset(m, 0, sizeof *m);
  m->destination = strdup("/escape");
  m->type = strdup("tmpfs");
  m->source = strdup("tmpfs");
  assert_create_fails(spec, ELOOP, "/escape");
  an_spec_free(spec);
}

Test(container, bl_06_proc_symlink_in_image_is_refused) {
  char path[512];
  snprintf(path, sizeof path, "%s/proc", B.rootfs);
  rmdir(path);
  cr_assert(symlink("tmp", path) == 0);
  struct an_spec *spec = an_test_bundle_spec(&B, "true", NULL);
  assert_create_fails(spec, ELOOP, "mount proc on");
  an_spec_free(spec);
}

Test(container, create_start_state_kill_delete) {
  struct an_spec *spec = an_test_bundle_spec(&B, "sleep", "60", NULL);
  struct an_container_opts o = an_test_bundle_opts(&B);
  an_error_t err = NULL;
  cr_assert_eq(an_container_create(spec, &o, &err), 0, "%s", err ? err->msg : "");
  struct an_container_state *st = NULL;
  cr_assert_eq(an_container_state(B.state_root, B.id, &st, &err), 0);
  cr_assert_eq(st->status, AN_STATUS_CREATED);
  pid_t pid = st->pid;
  cr_assert(pid > 0);
  an_container_state_free(st);
  /* pid 1 is still the runtime's init: not yet the user program */
  char exe[512] = "", link[64];
  snprintf(link, sizeof link, "/proc/%d/comm", pid);
  FILE *f = fopen(link, "r");
  cr_assert(f);
  cr_assert(fgets(exe, sizeof exe, f));
  fclose(f);
  cr_assert(strcmp(exe, "sleep\n") != 0);

  cr_assert_eq(an_container_start(B.state_root, B.id, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(an_container_state(B.state_root, B.id, &st, &err), 0);
  cr_assert_eq(st->status, AN_STATUS_RUNNING);
  cr_assert_eq(st->pid, pid);
  an_container_state_free(st);
  f = fopen(link, "r");
  cr_assert(f);
  cr_assert(fgets(exe, sizeof exe, f));
  fclose(f);
  cr_assert_str_eq(exe, "sleep\n");

  cr_assert_eq(an_container_start(B.state_root, B.id, &err), -EINVAL, "second start accepted");
  an_error_free(&err);
  cr_assert_eq(an_container_delete(B.state_root, B.id, false, &err), -EBUSY);
  an_error_free(&err);
  cr_assert_eq(an_container_kill(B.state_root, B.id, SIGKILL, false, &err), 0, "%s",
               err ? err->msg : "");
  for (int i = 0; i < 500; i++) {
    cr_assert_eq(an_container_state(B.state_root, B.id, &st, &err), 0);
    bool stopped = st->status == AN_STATUS_STOPPED;
    an_container_state_free(st);
    if (stopped) break;
    usleep(10000);
  }
  cr_assert_eq(an_container_state(B.state_root, B.id, &st, &err), 0);
  cr_assert_eq(st->status, AN_STATUS_STOPPED);
  an_container_state_free(st);
  cr_assert_eq(an_container_delete(B.state_root, B.id, false, &err), 0, "%s", err ? err->msg : "");
  cr_assert(!an_test_state_exists(&B));
  cr_assert(!an_test_cgroup_exists(B.id));
  cr_assert_eq(an_container_state(B.state_root, B.id, &st, &err), -ENOENT);
  an_error_free(&err);
  an_spec_free(spec);
}

Test(container, create_twice_with_same_id_is_refused) {
  struct an_spec *spec = an_test_bundle_spec(&B, "true", NULL);
  struct an_container_opts o = an_test_bundle_opts(&B);
  an_error_t err = NULL;
  cr_assert_eq(an_container_create(spec, &o, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(an_container_create(spec, &o, &err), -EEXIST);
  cr_assert(strstr(err->msg, "already exists"), "%s", err->msg);
  an_error_free(&err);
  cr_assert_eq(an_container_delete(B.state_root, B.id, true, &err), 0, "%s", err ? err->msg : "");
  an_spec_free(spec);
}

/* The bundle's container running `sleep 60` detached: its spec (free it). */
static struct an_spec *run_sleeper(void) {
  struct an_spec *spec = an_test_bundle_spec(&B, "sleep", "60", NULL);
  struct an_container_opts o = an_test_bundle_opts(&B);
  o.detach = true;
  an_error_t err = NULL;
  cr_assert_eq(an_container_run(spec, &o, &err), 0, "%s", err ? err->msg : "");
  return spec;
}

Test(container, exec_joins_the_container_with_the_same_restrictions) {
  struct an_spec *spec = run_sleeper();
  an_error_t err = NULL;
  struct an_spec_process p = *spec->process;
  char *args[] = {"sh", "-c",
                  "test \"$(cat /proc/self/uid_map | tr -s ' ')\" = ' 0 100000 65536' && "
                  "grep -q 'NoNewPrivs:.1' /proc/self/status && "
                  "grep -q 'CapEff:.0000000000000000' /proc/self/status && "
                  "test \"$(cat /proc/1/comm)\" = sleep && ! touch /exec-probe 2>/dev/null && exit 7", NULL};
  p.args = args;
  pid_t pid = 0;
  int r = an_container_exec(B.state_root, B.id, &p, false, NULL, NULL, &pid, &err);
  cr_assert_eq(r, 7, "exec status %d: %s", r, err ? err->msg : "");
  /* with its output captured through a pipe */
  int pfd[2];
  cr_assert(pipe2(pfd, O_CLOEXEC) == 0);
  char *args2[] = {"sh", "-c", "echo from-exec; echo to-stderr >&2", NULL};
  p.args = args2;
  int stdio[3] = {-1, pfd[1], pfd[1]};
  r = an_container_exec_stdio(B.state_root, B.id, &p, stdio, false, NULL, NULL, NULL, &err);
  cr_assert_eq(r, 0, "%d %s", r, err ? err->msg : "");
  close(pfd[1]);
  char buf[256] = "";
  ssize_t n = read(pfd[0], buf, sizeof buf - 1);
  cr_assert(n > 0);
  close(pfd[0]);
  cr_assert_str_eq(buf, "from-exec\nto-stderr\n");
  cr_assert_eq(an_container_delete(B.state_root, B.id, true, &err), 0, "%s", err ? err->msg : "");
  cr_assert(!an_test_cgroup_exists(B.id));
  an_spec_free(spec);
}

/* An exec that fails before its process is reported (a process.cwd that
 * does not exist fails in the joiner) leaves the container's init and an
 * earlier detached exec alone: both are children of the caller in the
 * container's cgroup, and the search for an unreported process (exec.c)
 * SIGKILLed every child of the caller's thread in it (red-team rt8). */
Test(container, failed_exec_spares_the_init_and_other_execs_of_the_caller) {
  struct an_spec *spec = run_sleeper();
  an_error_t err = NULL;
  struct an_spec_process p = *spec->process;
  char *args[] = {"sleep", "60", NULL};
  p.args = args;
  pid_t other = 0;
  cr_assert_eq(an_container_exec(B.state_root, B.id, &p, true, NULL, NULL, &other, &err), 0, "%s",
               err ? err->msg : "");
  char *t[] = {"true", NULL};
  p.args = t;
  p.cwd = "/no/such/dir";
  int r = an_container_exec(B.state_root, B.id, &p, false, NULL, NULL, NULL, &err);
  cr_expect_lt(r, 0, "exec in a missing cwd: %d", r);
  cr_expect(err && strstr(err->msg, "/no/such/dir"), "%s", err ? err->msg : "");
  an_error_free(&err);
  struct an_container_state *st = NULL;
  cr_assert_eq(an_container_state(B.state_root, B.id, &st, &err), 0, "%s", err ? err->msg : "");
  cr_expect_eq(st->status, AN_STATUS_RUNNING, "the container's init was killed: %s",
               an_container_status_name(st->status));
  an_container_state_free(st);
  cr_expect_eq(kill(other, 0), 0, "the detached exec (pid %d) was killed", (int) other);
  char path[64], stat[256] = "";
  snprintf(path, sizeof path, "/proc/%d/stat", (int) other);
  FILE *f = fopen(path, "re");
  if (f) {
    if (!fgets(stat, sizeof stat, f)) stat[0] = 0;
    fclose(f);
  }
  cr_expect(!strstr(stat, ") Z "), "the detached exec is a zombie: %s", stat);
  cr_assert_eq(an_container_delete(B.state_root, B.id, true, &err), 0, "%s", err ? err->msg : "");
  waitpid(other, NULL, 0);
  an_spec_free(spec);
}

static void drop_namespace(struct an_spec *spec, int flag) {
  struct an_spec_linux *l = &spec->linux;
  size_t k = 0;
  for (size_t i = 0; i < l->n_namespaces; i++)
    if (l->namespaces[i].clone_flag != flag) l->namespaces[k++] = l->namespaces[i];
    else free(l->namespaces[i].path);
  l->n_namespaces = k;
  l->ns_flags &= ~flag;
}

Test(container, runc_style_config_without_user_namespace_runs_as_root_without_caps) {
  struct an_spec *spec = an_test_bundle_spec(&B, "sh", "-c",
      "cat /proc/self/uid_map; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; exit 0", NULL);
  drop_namespace(spec, CLONE_NEWUSER);
  free(spec->linux.uid_mappings);
  free(spec->linux.gid_mappings);
  spec->linux.uid_mappings = spec->linux.gid_mappings = NULL;
  spec->linux.n_uid_mappings = spec->linux.n_gid_mappings = 0;
  char *out = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_test_run_capture(spec, &B, &out, &err), 0, "%s", err ? err->msg : "");
  cr_assert(strstr(out, "0          0 4294967295"), "%s", out);
  cr_assert(strstr(out, "CapEff:\t0000000000000000"), "%s", out);
  cr_assert(strstr(out, "NoNewPrivs:\t1"), "%s", out);
  free(out);
  an_spec_free(spec);
  assert_nothing_left();
}

Test(container, no_pivot_moves_the_root_and_chroots) {
  struct an_spec *spec = an_test_bundle_spec(&B, "sh", "-c",
      "ls / | tr '\\n' ' '; touch /x 2>/dev/null && echo WRITABLE; exit 0", NULL);
  struct an_container_opts o = an_test_bundle_opts(&B);
  o.no_pivot = true;
  int mfd = memfd_create("out", MFD_CLOEXEC);
  o.stdio[1] = mfd;
  an_error_t err = NULL;
  cr_assert_eq(an_container_run(spec, &o, &err), 0, "%s", err ? err->msg : "");
  char buf[4096] = "";
  cr_assert(pread(mfd, buf, sizeof buf - 1, 0) > 0);
  close(mfd);
  cr_assert(strstr(buf, "bin dev etc opt proc root sys tmp"), "%s", buf);
  cr_assert(!strstr(buf, "WRITABLE"), "%s", buf);
  an_spec_free(spec);
  assert_nothing_left();
}

Test(container, bl_20_mount_destination_swapped_with_symlink_race_stays_inside, .timeout = 120) {
  /* The image's /work/data flips between a directory and a symlink to the
   * root (renameat2 RENAME_EXCHANGE in a loop) while containers start with
   * a tmpfs mounted at /work/data.  Each start must either mount on the
   * real in-root directory or fail; never anywhere else.  The link is
   * "..": from /work that is "/" in the container, as in the case, but on
   * the host it stays inside the bundle's rootfs, so no host-side walk of
   * the bundle can reach the host's "/" through it. */
  char work[400], data[450], d[450], l[450];
  snprintf(work, sizeof work, "%s/work", B.rootfs);
  snprintf(data, sizeof data, "%s/data", work);
  snprintf(d, sizeof d, "%s/d", work);
  snprintf(l, sizeof l, "%s/l", work);
  cr_assert(mkdir(work, 0755) == 0 && mkdir(data, 0755) == 0 && mkdir(d, 0755) == 0);
  cr_assert(symlink("..", l) == 0);
  pid_t parent = getpid();
  pid_t racer = fork();
  cr_assert(racer >= 0);
  if (racer == 0) {
    /* dies with the test process, whatever ends it (assertion, timeout) */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent) _exit(1);
    for (;;) {
      renameat2(AT_FDCWD, d, AT_FDCWD, data, RENAME_EXCHANGE);
      renameat2(AT_FDCWD, l, AT_FDCWD, data, RENAME_EXCHANGE);
      renameat2(AT_FDCWD, l, AT_FDCWD, data, RENAME_EXCHANGE);
      renameat2(AT_FDCWD, d, AT_FDCWD, data, RENAME_EXCHANGE);
    }
  }
  helper_pid = racer;
  int mounted = 0, refused = 0;
  for (int i = 0; i < 30; i++) {
    struct an_spec *spec = an_test_bundle_spec(&B, "cat", "/proc/self/mountinfo", NULL);
    struct an_spec_mount *m = realloc(spec->mounts, (spec->n_mounts + 1) * sizeof *m);
    spec->mounts = m;
    m = &spec->mounts[spec->n_mounts++];
    memset(m, 0, sizeof *m);
    m->destination = strdup("/work/data");
    m->type = strdup("tmpfs");
    m->source = strdup("tmpfs");
    snprintf(B.id, sizeof B.id, "t-race-%d-%d", getpid(), i);
    char *out = NULL;
    an_error_t err = NULL;
    int r = an_test_run_capture(spec, &B, &out, &err);
    if (r < 0) {
      refused++;
      cr_assert(strstr(err->msg, "/work/data"), "unexpected failure: %s", err->msg);
      an_error_free(&err);
    } else {
      mounted++;
      /* on the directory that was resolved (its name may have moved on),
       * never over the root */
      int under_work = 0, root_tmpfs = 0;
      char *save = NULL;
      for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char mp[256] = "", *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %*s %255s", mp) != 1) continue;
        bool tmpfs = strncmp(dash + 3, "tmpfs ", 6) == 0;
        if (tmpfs && strncmp(mp, "/work/", 6) == 0) under_work++;
        if (tmpfs && strcmp(mp, "/") == 0) root_tmpfs++;
      }
      cr_assert_eq(under_work, 1, "iteration %d: %d tmpfs mounts under /work (output %zu bytes)", i, under_work, strlen(out));
      cr_assert_eq(root_tmpfs, 0, "iteration %d: root covered", i);
    }
    free(out);
    an_spec_free(spec);
    cr_assert(!an_test_cgroup_exists(B.id), "cgroup left after attempt %d", i);
  }
  kill(racer, SIGKILL);
  waitpid(racer, NULL, 0);
  helper_pid = 0;
  cr_assert_eq(mounted + refused, 30);
}
