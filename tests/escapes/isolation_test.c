/* tests/escapes/isolation_test.c — the isolation cases of
 * ../shared/cases/isolation.md that are not about single syscalls: BL-01
 * (runtime binary through /proc/PID/exe), BL-02 (leaked fds and cwd), BL-04
 * (inheritable and file capabilities), BL-05 (/sys/fs/cgroup), BL-06 (fake or
 * symlinked /proc in the image), BL-07 (masked paths and a swapped
 * /dev/null), BL-18 (supplementary groups).  Crafted images are private
 * copies of the busybox image rootfs, altered by the test. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "engine/landlock.h"
#include "escape_fixture.h"
#include "util.h"
#include "ws_fixture.h"

#define REEXEC_MARK "AN_ESC_REEXEC_MARK"

/* BL-01: if this binary (the runtime, linked into the test) is ever
 * re-executed inside a sandbox through #!/proc/self/exe, say so and stop. */
__attribute__((constructor)) static void detect_reexec(void) {
  if (getenv(REEXEC_MARK)) {
    static const char msg[] = "RUNTIME-REEXECUTED-INSIDE\n";
    if (write(1, msg, sizeof msg - 1) < 0) _exit(43);
    _exit(42);
  }
}

static struct esc_sandbox S;
static struct esc_host_evidence E;

static void setup(void) {
  esc_sandbox_init(&S, "busybox");
  esc_evidence_record(&E);
}
static void teardown(void) {
  esc_sandbox_fini(&S);
  esc_evidence_fini(&E);
}

TestSuite(isolation, .init = setup, .fini = teardown, .timeout = 180);

Test(isolation, bl_01_runtime_binary_unreachable_through_proc_exe) {
  char self_before[65], self_after[65];
  cr_assert(ws_file_sha256("/proc/self/exe", self_before));
  /* a watcher loops over /proc/[0-9]*\/exe trying to open each for writing */
  esc_start(&S, ESC_PROBE " exe_watch:8 > /workspace/watch; echo > /workspace/done; exec sleep 120",
            NULL);
  char selfexe[PATH_MAX + 16];
  snprintf(selfexe, sizeof selfexe, "%s/selfexe.sh", S.ws);
  const char *shebang = "#!/proc/self/exe\n";
  an_test_write_file(selfexe, shebang, strlen(shebang), 0755);
  int reexec = 0, ran = 0;
  for (int i = 0; i < 50; i++) {
    struct esc_result r = {0};
    char *argv[] = {"/bin/true", NULL};
    if (esc_exec(&S, argv, &r) == 0) ran++;
    esc_result_free(&r);
  }
  cr_assert_eq(ran, 50, "execs into the sandbox failed");
  /* the #!/proc/self/exe script must not re-run the runtime; the mark in
   * its environment makes a re-executed runtime say so (detect_reexec) */
  {
    cr_assert(an_sandbox_opts_add_env(S.opts, REEXEC_MARK "=1", NULL) == 0);
    char script[] = "/workspace/selfexe.sh";
    char *av[] = {script, NULL};
    struct esc_result r = {0};
    int st = esc_exec(&S, av, &r);
    reexec = strstr(r.out, "RUNTIME-REEXECUTED-INSIDE") != NULL;
    cr_log_info("#!/proc/self/exe exec: status %d, out \"%s\", err \"%s\"", st, r.out, r.err);
    cr_assert(!reexec, "#!/proc/self/exe re-ran the runtime inside the sandbox (status %d)", st);
    esc_result_free(&r);
  }
  cr_assert(esc_wait_file(&S, "done"), "watcher never finished");
  char buf[512], path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/watch", S.ws);
  cr_assert(esc_read_file(path, buf, sizeof buf));
  cr_assert(strncmp(buf, "exe_watch NONE:", 15) == 0, "an exe was writable from inside: %s", buf);
  cr_assert(atol(buf + 15) > 0, "the watcher saw no process: %s", buf);
  cr_assert(ws_file_sha256("/proc/self/exe", self_after));
  cr_assert_str_eq(self_before, self_after, "the runtime binary changed");
  esc_evidence_assert_unchanged(&E);
}

Test(isolation, bl_02_no_leaked_fds_and_cwd_stays_inside) {
  /* (A) only 0-2 in the sandbox's processes */
  struct esc_result r = {0};
  esc_sh(&S, &r, ESC_PROBE " fds fds:1; true"); /* "; true": the shell stays pid 1 */
  char buf[256];
  cr_assert_str_eq(esc_probe_result(r.out, "fds", buf, sizeof buf), "none", "leaked fds: %s", r.out);
  cr_assert(strstr(r.out, "\nfds none\n"), "pid 1 holds extra fds: %s", r.out);
  esc_result_free(&r);

  /* negative control: the probe does report an inherited fd (on the host) */
  {
    char probe[PATH_MAX];
    esc_helper_path("probe", probe, sizeof probe);
    int mfd = memfd_create("fds-out", MFD_CLOEXEC);
    pid_t p = fork();
    cr_assert(p >= 0);
    if (p == 0) {
      int leak = open("/", O_RDONLY | O_DIRECTORY); /* not CLOEXEC: inherited */
      if (leak < 3 || dup2(mfd, 1) < 0) _exit(90);
      execl(probe, probe, "fds", (char *) NULL);
      _exit(91);
    }
    int st;
    waitpid(p, &st, 0);
    char hb[512] = "";
    cr_assert(pread(mfd, hb, sizeof hb - 1, 0) > 0);
    close(mfd);
    cr_assert(strstr(hb, "->/;"), "host control: the inherited fd was not reported: %s", hb);
  }

  /* (B) a configured cwd through a magic link: refused by the options ... */
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_set_workdir(S.opts, "/proc/self/fd/3", &err), -EINVAL);
  an_error_free(&err);
  /* ... and by the engine when a spec says so (agentnest-oci path) */
  static const char *cwds[] = {"/proc/self/fd/3", "/proc/self/fd/4", "/proc/self/fd/7",
                               "/proc/self/fd/20", "/proc/1/cwd", NULL};
  char host_root[4096] = "";
  FILE *ls = popen("ls / | tr '\\n' ' '", "r");
  cr_assert(ls && fgets(host_root, sizeof host_root, ls));
  pclose(ls);
  for (int i = 0; cwds[i]; i++) {
    char *argv[] = {"/bin/sh", "-c", "pwd; ls ../../../../ | tr '\\n' ' '", NULL};
    struct an_spec *spec = esc_build_spec(&S, argv);
    free(spec->process->cwd);
    spec->process->cwd = strdup(cwds[i]);
    struct esc_result rr = {0};
    int st = esc_try_run_spec(&S, spec, &rr);
    an_spec_free(spec);
    if (st >= 0) {
      cr_assert(rr.out[0] == '/' && !strstr(rr.out, "unreachable"), "cwd %s: %s", cwds[i], rr.out);
      cr_assert(!strstr(rr.out, host_root), "cwd %s reaches the host root: %s", cwds[i], rr.out);
    } else {
      cr_assert(strstr(rr.err, "cwd"), "cwd %s: error does not name the cwd: %s", cwds[i], rr.err);
    }
    esc_result_free(&rr);
  }
  /* (C) a planted symlink to a magic link as a later exec's cwd */
  esc_sh(&S, &r, "ln -s /proc/self/fd/7 /workspace/wd && ln -s /proc/1/cwd /workspace/wd1");
  esc_result_free(&r);
  static const char *planted[] = {"/workspace/wd", "/workspace/wd1", NULL};
  for (int i = 0; planted[i]; i++) {
    char *argv[] = {"/bin/sh", "-c", "pwd; ls ../../../../ | tr '\\n' ' '", NULL};
    struct an_spec *spec = esc_build_spec(&S, argv);
    free(spec->process->cwd);
    spec->process->cwd = strdup(planted[i]);
    struct esc_result rr = {0};
    int st = esc_try_run_spec(&S, spec, &rr);
    an_spec_free(spec);
    if (st >= 0) cr_assert(!strstr(rr.out, host_root), "cwd %s reaches the host: %s", planted[i], rr.out);
    esc_result_free(&rr);
  }
  esc_evidence_assert_unchanged(&E);
}

/* security.capability v3 (a namespaced file capability, capability.h). */
static void set_file_caps(const char *path, unsigned rootid, bool v3) {
  struct vfs_ns_cap_data c;
  memset(&c, 0, sizeof c);
  uint32_t caps = (1u << CAP_NET_RAW) | (1u << CAP_SYS_ADMIN);
  c.magic_etc = (v3 ? VFS_CAP_REVISION_3 : VFS_CAP_REVISION_2) | VFS_CAP_FLAGS_EFFECTIVE;
  c.data[0].permitted = caps;
  c.data[0].inheritable = caps;
  c.rootid = rootid;
  size_t len = v3 ? XATTR_CAPS_SZ_3 : XATTR_CAPS_SZ_2;
  cr_assert(setxattr(path, "security.capability", &c, len, 0) == 0, "setxattr %s: %s", path,
            strerror(errno));
}

Test(isolation, bl_04_inheritable_and_file_capabilities_gain_nothing) {
  char src[PATH_MAX], dst[PATH_MAX + 16];
  esc_helper_path("probe", src, sizeof src);
  snprintf(dst, sizeof dst, "%s/fcap", S.ws);
  an_test_copy_file(src, dst, 0755);
  set_file_caps(dst, S.ids.host_uid_base, true); /* effective for the sandbox's root */
  struct esc_result r = {0};
  esc_sh(&S, &r, "grep -E '^Cap(Inh|Amb):' /proc/self/status; /workspace/fcap whoami");
  cr_assert_str_eq(r.out, "CapInh:\t0000000000000000\nCapAmb:\t0000000000000000\n"
                          "whoami euid=65532,capeff=0\n", "%s", r.out);
  esc_result_free(&r);
  /* negative control: on the host a file-capability binary run by an
   * unprivileged user does gain its capabilities */
  char host_copy[PATH_MAX];
  snprintf(host_copy, sizeof host_copy, "%s/fcap-host", S.dir); /* S.dir: 0711 */
  an_test_copy_file(src, host_copy, 0755);
  set_file_caps(host_copy, 0, false);
  int st;
  char *buf = esc_host_exec_unprivileged(host_copy, "whoami", &st);
  cr_assert_str_eq(buf, "whoami euid=65534,capeff=202000\n", "host control: %s", buf);
  free(buf);
}

Test(isolation, bl_05_sys_fs_cgroup_not_writable) {
  esc_start(&S,
            "cat /proc/self/cgroup > /workspace/cgroup; grep cgroup /proc/mounts > /workspace/mounts; "
            ESC_PROBE " write:/sys/fs/cgroup/pids.max,max write:/sys/fs/cgroup/memory.max,max "
            "mkdir:/sys/fs/cgroup/x write:/sys/fs/cgroup/cgroup.procs,1 "
            "write:/sys/fs/cgroup/pids/pids.max,max > /workspace/probe; echo > /workspace/ready; "
            "exec sleep 120",
            "ready");
  char buf[4096], path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/cgroup", S.ws);
  cr_assert(esc_read_file(path, buf, sizeof buf));
  for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
    size_t n = strlen(line);
    cr_assert(n >= 2 && strcmp(line + n - 2, ":/") == 0, "host cgroup path leaked: %s", line);
  }
  snprintf(path, sizeof path, "%s/mounts", S.ws);
  if (esc_read_file(path, buf, sizeof buf))
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
      cr_assert(strstr(line, " ro,") || strstr(line, " ro "), "cgroup mounted rw: %s", line);
  snprintf(path, sizeof path, "%s/probe", S.ws);
  cr_assert(esc_read_file(path, buf, sizeof buf));
  cr_assert_eq(esc_count_lines(buf, "write ") + esc_count_lines(buf, "mkdir "), 5, "%s", buf);
  cr_assert_eq(esc_count_lines(buf, " OK"), 0, "a cgroup write succeeded:\n%s", buf);
  char v[64];
  cr_assert(esc_cgroup_read(&S, "pids", "pids.max", v, sizeof v));
  cr_assert_str_eq(v, "256", "host pids.max of the sandbox changed");
  cr_assert(esc_cgroup_read(&S, "memory", "memory.limit_in_bytes", v, sizeof v));
  cr_assert_str_eq(v, "536870912", "host memory limit of the sandbox changed");
}

/* Run `stat -f -c %t /proc; grep Seccomp` on a crafted rootfs: the start
 * fails cleanly, or a real procfs is mounted on a real directory. */
static void check_proc_variant(const char *what) {
  char *argv[] = {"/bin/sh", "-c", "stat -f -c %t /proc; grep '^Seccomp:' /proc/self/status", NULL};
  struct an_spec *spec = esc_build_spec(&S, argv);
  struct esc_result r = {0};
  int st = esc_try_run_spec(&S, spec, &r);
  an_spec_free(spec);
  if (st >= 0) cr_assert_str_eq(r.out, "9fa0\nSeccomp:\t2\n", "%s: %s%s", what, r.out, r.err);
  else cr_assert(strstr(r.err, "proc"), "%s: error does not name /proc: %s", what, r.err);
  esc_result_free(&r);
}

Test(isolation, bl_06_fake_or_symlinked_proc_in_the_image) {
  const char *root = esc_copy_rootfs(&S);
  char p[PATH_MAX * 2];
  /* (a) fake attr and status files under proc/ */
  cr_assert_eq(an_test_sh("mkdir -p '%s/proc/self/attr' && echo fake > '%s/proc/self/attr/exec' && "
                          "echo fake > '%s/proc/self/attr/current' && echo 'Seccomp: 0' > '%s/proc/self/status'",
                          root, root, root, root), 0);
  check_proc_variant("proc with fake files");
  /* (b) proc a symlink to tmp, and to ../../.. */
  cr_assert_eq(an_test_sh("rm -rf '%s/proc' && ln -s tmp '%s/proc'", root, root), 0);
  check_proc_variant("proc -> tmp");
  snprintf(p, sizeof p, "%s/tmp/self", root);
  struct stat st;
  cr_assert(lstat(p, &st) < 0, "procfs landed at the symlink target %s", p);
  cr_assert_eq(an_test_sh("rm -f '%s/proc' && ln -s ../../.. '%s/proc'", root, root), 0);
  check_proc_variant("proc -> ../../..");
  /* (c) proc a regular file */
  cr_assert_eq(an_test_sh("rm -f '%s/proc' && echo x > '%s/proc'", root, root), 0);
  check_proc_variant("proc a regular file");
  /* nothing mounted on the host outside the rootfs (all of mountinfo: a
   * single read(2) of it may return only its first part) */
  char *mi = an_test_read_file("/proc/self/mountinfo", NULL);
  cr_assert_not_null(mi, "read /proc/self/mountinfo: %s", strerror(errno));
  cr_assert_null(strstr(mi, S.dir), "a mount under %s is left on the host", S.dir);
  free(mi);
  esc_evidence_assert_unchanged(&E);
}

static void check_dev_null_variant(const char *what) {
  char *argv[] = {"/bin/sh", "-c",
                  "stat -c '%F %t:%T' /dev/null; " ESC_PROBE
                  " write:/proc/sys/kernel/core_pattern,x read:/proc/kcore read:/proc/timer_list",
                  NULL};
  struct an_spec *spec = esc_build_spec(&S, argv);
  struct esc_result r = {0};
  int st = esc_try_run_spec(&S, spec, &r);
  an_spec_free(spec);
  if (st < 0) {
    cr_assert(r.err[0], "%s: failed without a message", what);
  } else {
    cr_assert(strncmp(r.out, "character special file 1:3\n", 27) == 0, "%s: /dev/null is %s", what, r.out);
    esc_assert_probe(r.out, "write", "EROFS EACCES");
    cr_assert_eq(esc_count_lines(r.out, "read OK"), 0, "%s: a masked path is readable:\n%s", what, r.out);
  }
  esc_result_free(&r);
  esc_evidence_assert_unchanged(&E);
}

Test(isolation, bl_07_masked_paths_survive_a_swapped_dev_null) {
  const char *root = esc_copy_rootfs(&S);
  cr_assert_eq(an_test_sh("rm -f '%s/dev/null' && ln -s /proc/sys/kernel/core_pattern '%s/dev/null'",
                          root, root), 0);
  check_dev_null_variant("dev/null -> core_pattern");
  cr_assert_eq(an_test_sh("rm -f '%s/dev/null' && echo x > '%s/dev/null'", root, root), 0);
  check_dev_null_variant("dev/null a regular file");
  cr_assert_eq(an_test_sh("rm -f '%s/dev/null'", root), 0);
  check_dev_null_variant("dev/null missing");
  cr_assert_eq(an_test_sh("rm -rf '%s/dev' && ln -s /proc/sys/kernel '%s/dev'", root, root), 0);
  check_dev_null_variant("dev -> /proc/sys/kernel");
}

Test(isolation, bl_18_supplementary_groups_exact) {
  const char *root = esc_copy_rootfs(&S);
  char p[PATH_MAX * 2];
  cr_assert_eq(an_test_sh("echo 'agent2:x:1000:1000::/workspace:/bin/sh' >> '%s/etc/passwd' && "
                          "printf 'agent2:x:1000:\\nsecret:x:2000:\\n' >> '%s/etc/group' && mkdir -p '%s/opt'",
                          root, root, root), 0);
  snprintf(p, sizeof p, "%s/opt/denied", root);
  const char *denied = "group-denied\n";
  an_test_write_file(p, denied, strlen(denied), 0604);
  /* owner 0:1000 inside the sandbox's user namespace */
  cr_assert(chown(p, S.ids.host_uid_base, S.ids.host_uid_base + 1000) == 0);
  cr_assert(chmod(p, 0604) == 0);

  /* default user: 65532 with no supplementary groups */
  struct esc_result r = {0};
  esc_sh(&S, &r, "grep '^Groups:' /proc/self/status; id -G");
  cr_assert(strncmp(r.out, "Groups:", 7) == 0, "%s", r.out);
  cr_assert(strstr(r.out, "\n65532\n"), "id -G: %s", r.out);
  char *g = strchr(r.out, '\n');
  *g = '\0';
  cr_assert(strspn(r.out + 7, " \t") == strlen(r.out + 7) || strcmp(r.out + 7, "\t65532") == 0 ||
                strcmp(r.out + 7, "\t65532 ") == 0,
            "supplementary groups: %s", r.out);
  esc_result_free(&r);

  /* uid 1000 gid 1000: the group bits of /opt/denied deny it */
  char *argv[] = {"/bin/sh", "-c", "grep '^Groups:' /proc/self/status; id -G; cat /opt/denied; echo rc=$?", NULL};
  struct an_spec *spec = esc_build_spec(&S, argv);
  spec->process->user.uid = 1000;
  spec->process->user.gid = 1000;
  esc_run_spec(&S, spec, -1, &r);
  cr_assert(strstr(r.out, "\n1000\n"), "id -G must be exactly 1000: %s", r.out);
  for (const char *bad = r.out; (bad = strstr(bad, " 0")) != NULL; bad++)
    cr_assert(bad[2] != ' ' && bad[2] != '\n', "group 0 present: %s", r.out);
  cr_assert(strstr(r.out, "rc=1"), "/opt/denied was readable: %s", r.out);
  cr_assert(strstr(r.err, "Permission denied"), "%s", r.err);
  esc_result_free(&r);
  /* negative control: another uid/gid reads it through the "other" bits */
  spec->process->user.uid = 1001;
  spec->process->user.gid = 1001;
  esc_run_spec(&S, spec, -1, &r);
  cr_assert(strstr(r.out, "group-denied\nrc=0"), "control: %s %s", r.out, r.err);
  esc_result_free(&r);
  an_spec_free(spec);
}

/* A create that fails (here: the image's /proc is a symlink out of the
 * root) must leave the caller's file descriptors alone: closing fd 0 of a
 * long-lived caller (the monitor, an MCP server) makes its next open(2)
 * become its stdin. */
Test(isolation, failed_create_leaves_the_callers_fds_open) {
  const char *root = esc_copy_rootfs(&S);
  cr_assert_eq(an_test_sh("rm -rf '%s/proc' && ln -s ../../.. '%s/proc'", root, root), 0);
  char *argv[] = {"/bin/true", NULL};
  struct an_spec *spec = esc_build_spec(&S, argv);
  struct esc_result r = {0};
  int st = esc_try_run_spec(&S, spec, &r);
  an_spec_free(spec);
  cr_assert_lt(st, 0, "the crafted rootfs started");
  cr_assert(!S.closed_caller_fd, "an_container_run closed one of the caller's fds 0-2 (%s)", r.err);
  esc_result_free(&r);
}

/* DESIGN "landlock": where the kernel has it, a sandbox's writes are
 * confined to its writable mounts, a second line behind the mount flags.
 * /proc/self/comm is writable by mount flags and file permissions, so only
 * Landlock denies it; /workspace and /tmp stay writable.  Negative control:
 * the same spec with the annotation set to "off". */
Test(isolation, landlock_confines_sandbox_writes_to_its_writable_mounts) {
  if (an_landlock_abi_version() < 1) cr_skip_test("this kernel has no Landlock");
  char *argv[] = {"/bin/sh", "-c",
                  "echo p 2>/dev/null >/proc/self/comm && echo PROC-WRITTEN; "
                  "echo w >/workspace/ll && echo WS-WRITTEN; echo t >/tmp/ll && echo TMP-WRITTEN",
                  NULL};
  struct an_spec *spec = esc_build_spec(&S, argv);
  const char *mode = NULL;
  for (size_t i = 0; i < spec->n_annotations; i++)
    if (!strcmp(spec->annotations[i].key, AN_LANDLOCK_ANNOTATION)) mode = spec->annotations[i].value;
  cr_assert(mode && !strcmp(mode, "if-available"), "sandbox spec asks for Landlock: %s",
            mode ? mode : "(no annotation)");
  struct esc_result r = {0};
  cr_assert_eq(esc_run_spec(&S, spec, -1, &r), 0, "%s", r.err);
  cr_assert_str_eq(r.out, "WS-WRITTEN\nTMP-WRITTEN\n", "%s%s", r.out, r.err);
  esc_result_free(&r);
  for (size_t i = 0; i < spec->n_annotations; i++)
    if (!strcmp(spec->annotations[i].key, AN_LANDLOCK_ANNOTATION)) {
      free(spec->annotations[i].value);
      spec->annotations[i].value = strdup("off");
    }
  cr_assert_eq(esc_run_spec(&S, spec, -1, &r), 0, "%s", r.err);
  cr_assert_str_eq(r.out, "PROC-WRITTEN\nWS-WRITTEN\nTMP-WRITTEN\n", "control: %s%s", r.out, r.err);
  esc_result_free(&r);
  an_spec_free(spec);
}
