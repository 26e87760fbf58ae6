/* tests/integration/embedding_test.c — what an engine (podman, dockerd,
 * containerd) needs of the engine library when agentnest-oci is its
 * runtime (issue 11): a rootfs on a shared mount (dockerd's data-root),
 * nothing propagating back to the host, create returning only once init no
 * longer depends on the create process, mount targets through symlinks
 * inside the rootfs, the cgroup namespace view.  Run as root on the real
 * kernel. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agentnest/container.h"
#include "bundle.h"
#include "util.h"

static struct an_test_bundle B;
static bool B_is_mount;   /* B.dir was bind-mounted on itself by the test */

static void setup(void) { an_test_bundle_make(&B, "emb"); }
static void teardown(void) {
  an_error_t err = NULL;
  if (an_test_state_exists(&B)) an_container_delete(B.state_root, B.id, true, &err);
  an_error_free(&err);
  if (B_is_mount) {
    umount2(B.dir, MNT_DETACH);
    B_is_mount = false;
  }
  an_test_bundle_remove(&B);
}

TestSuite(embedding, .init = setup, .fini = teardown, .timeout = 120);

/* Mount points (mountinfo field 5) strictly below `dir`, in this process's
 * mount namespace. */
static int mounts_below(const char *dir, char *first, size_t firstsz) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  cr_assert(f);
  char line[4096];
  size_t n = strlen(dir);
  int count = 0;
  while (fgets(line, sizeof line, f)) {
    char mp[2048];
    if (sscanf(line, "%*s %*s %*s %*s %2047s", mp) != 1) continue;
    if (strncmp(mp, dir, n) == 0 && mp[n] == '/') {
      if (!count && first) snprintf(first, firstsz, "%s", mp);
      count++;
    }
  }
  fclose(f);
  return count;
}

static enum an_container_status status_of(const char *id) {
  struct an_container_state *st = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_container_state(B.state_root, id, &st, &err), 0, "state %s: %s", id,
               err ? err->msg : "");
  enum an_container_status s = st->status;
  an_container_state_free(st);
  return s;
}

static void wait_stopped(const char *id) {
  for (int i = 0; i < 2000 && status_of(id) != AN_STATUS_STOPPED; i++) usleep(5000);
  cr_assert_eq(status_of(id), AN_STATUS_STOPPED, "container %s did not stop", id);
}

/* dockerd makes its data-root a shared mount; the bundle (and the rootfs in
 * it) then lie on a shared mount.  pivot_root refuses a shared new root
 * (EINVAL) unless the runtime makes the root a slave first, and every mount
 * the container makes must stay in its own namespace. */
Test(embedding, rootfs_on_a_shared_mount_runs_and_leaks_no_mount_to_the_host) {
  cr_assert(mount(B.dir, B.dir, NULL, MS_BIND, NULL) == 0, "bind %s: %s", B.dir, strerror(errno));
  B_is_mount = true;
  cr_assert(mount(NULL, B.dir, NULL, MS_SHARED, NULL) == 0, "make-shared: %s", strerror(errno));
  /* a bind mount from the bundle too (it is shared as well) */
  char src[400];
  snprintf(src, sizeof src, "%s/vol", B.dir);
  cr_assert(mkdir(src, 0755) == 0);
  char dst[400];
  snprintf(dst, sizeof dst, "%s/vol", B.rootfs);
  cr_assert(mkdir(dst, 0755) == 0);

  struct an_spec *spec = an_test_bundle_spec(&B, "sh", "-c", "test -d /vol && exit 0", NULL);
  struct an_spec_mount *m = realloc(spec->mounts, (spec->n_mounts + 1) * sizeof *m);
  spec->mounts = m;
  m = &spec->mounts[spec->n_mounts++];
  memset(m, 0, sizeof *m);
  m->destination = strdup("/vol");
  m->type = strdup("bind");
  m->source = strdup(src);
  m->options = calloc(2, sizeof(char *));
  m->options[0] = strdup("rbind");

  /* run */
  an_error_t err = NULL;
  int r = an_test_run_capture(spec, &B, NULL, &err);
  cr_assert_eq(r, 0, "run on a shared mount: status %d: %s", r, err ? err->msg : "");
  char first[2048] = "";
  cr_assert_eq(mounts_below(B.dir, first, sizeof first), 0, "mount left on the host: %s", first);

  /* create / start / delete */
  struct an_container_opts o = an_test_bundle_opts(&B);
  int nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
  o.stdio[0] = o.stdio[1] = o.stdio[2] = nullfd;
  cr_assert_eq(an_container_create(spec, &o, &err), 0, "create: %s", err ? err->msg : "");
  cr_assert_eq(mounts_below(B.dir, first, sizeof first), 0, "mount left on the host after create: %s",
               first);
  cr_assert_eq(an_container_start(B.state_root, B.id, &err), 0, "start: %s", err ? err->msg : "");
  wait_stopped(B.id);
  cr_assert_eq(an_container_delete(B.state_root, B.id, false, &err), 0, "delete: %s",
               err ? err->msg : "");
  close(nullfd);
  cr_assert_eq(mounts_below(B.dir, first, sizeof first), 0, "mount left on the host: %s", first);

  /* whatever linux.rootfsPropagation asks for, nothing reaches the host
   * (shared: the container's mounts form a peer group of their own) */
  static const char *const props[] = {"shared", "rshared", "slave", "private", "rprivate", NULL};
  for (int i = 0; props[i]; i++) {
    free(spec->linux.rootfs_propagation);
    spec->linux.rootfs_propagation = strdup(props[i]);
    r = an_test_run_capture(spec, &B, NULL, &err);
    cr_assert_eq(r, 0, "rootfsPropagation %s: status %d: %s", props[i], r, err ? err->msg : "");
    cr_assert_eq(mounts_below(B.dir, first, sizeof first), 0,
                 "rootfsPropagation %s: mount left on the host: %s", props[i], first);
  }
  an_spec_free(spec);
}

static void add_mount(struct an_spec *spec, const char *dst, const char *type, const char *src,
                      const char *opt) {
  struct an_spec_mount *m = realloc(spec->mounts, (spec->n_mounts + 1) * sizeof *m);
  spec->mounts = m;
  m = &spec->mounts[spec->n_mounts++];
  memset(m, 0, sizeof *m);
  m->destination = strdup(dst);
  m->type = strdup(type);
  m->source = strdup(src);
  if (opt) {
    m->options = calloc(2, sizeof(char *));
    m->options[0] = strdup(opt);
  }
}

/* `docker run --init` binds its init at /sbin/docker-init, which goes
 * through the image's /sbin -> /usr/sbin; `-v X:/var/run/y` goes through
 * /var/run -> ../run.  Both resolve inside the rootfs (an absolute link is
 * taken relative to the container's root, never the host's). */
Test(embedding, mount_targets_through_symlinks_in_the_rootfs_resolve_inside_it) {
  char p[600];
  snprintf(p, sizeof p, "%s/usr/sbin", B.rootfs);
  cr_assert_eq(an_test_sh("mkdir -p '%s' '%s/run/y' '%s/var'", p, B.rootfs, B.rootfs), 0);
  snprintf(p, sizeof p, "%s/sbin", B.rootfs);
  cr_assert(symlink("/usr/sbin", p) == 0);
  snprintf(p, sizeof p, "%s/var/run", B.rootfs);
  cr_assert(symlink("../run", p) == 0);
  snprintf(p, sizeof p, "%s/usr/sbin/an-emb-init", B.rootfs);
  cr_assert_eq(an_test_sh("touch '%s'", p), 0);
  char src[400];
  snprintf(src, sizeof src, "%s/init-on-host", B.dir);
  cr_assert_eq(an_test_sh("echo from-the-host > '%s'", src), 0);

  struct an_spec *spec = an_test_bundle_spec(&B, "sh", "-c",
      "cat /sbin/an-emb-init && grep -c -E ' /(usr/sbin/an-emb-init|run/y) ' /proc/self/mountinfo",
      NULL);
  add_mount(spec, "/sbin/an-emb-init", "bind", src, "bind");
  add_mount(spec, "/var/run/y", "tmpfs", "tmpfs", NULL);
  char *out = NULL;
  an_error_t err = NULL;
  int r = an_test_run_capture(spec, &B, &out, &err);
  cr_assert_eq(r, 0, "status %d: %s %s", r, err ? err->msg : "", out ? out : "");
  cr_assert_str_eq(out, "from-the-host\n2\n");
  free(out);
  struct stat st;
  cr_assert(stat("/usr/sbin/an-emb-init", &st) < 0, "resolved on the host");
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

/* What the container finds at /sys/fs/cgroup: its own memory limit (v1
 * memory hierarchy on a hybrid host, memory.max on cgroup2) and no other
 * cgroup: no "agentnest" directory holding the other containers, at the
 * top or in any hierarchy. */
static void assert_own_cgroup_view(bool with_cgroupns) {
  struct an_spec *spec = an_test_bundle_spec(&B, "sh", "-c",
      "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes; "
      "find /sys/fs/cgroup -maxdepth 2 -name agentnest; "
      "touch /sys/fs/cgroup/x 2>/dev/null && echo WRITABLE; exit 0", NULL);
  if (!with_cgroupns) drop_namespace(spec, CLONE_NEWCGROUP);
  struct an_spec_resources *res = spec->linux.resources;
  if (!res) res = spec->linux.resources = calloc(1, sizeof *res);
  res->has_memory_limit = true;
  res->memory_limit = 64 << 20;
  char *out = NULL;
  an_error_t err = NULL;
  int r = an_test_run_capture(spec, &B, &out, &err);
  cr_assert_eq(r, 0, "status %d: %s %s", r, err ? err->msg : "", out ? out : "");
  cr_assert_str_eq(out, "67108864\n", "cgroupns %d: not the container's own cgroup: %s",
                   with_cgroupns, out);
  free(out);
  an_spec_free(spec);
}

Test(embedding, cgroup_mount_shows_only_the_container_s_own_cgroup) {
  assert_own_cgroup_view(true);
}

Test(embedding, cgroup_mount_without_a_cgroup_namespace_shows_only_its_own_cgroup) {
  assert_own_cgroup_view(false);
}

/* A seccomp allowlist with only what the program needs after execve, plus
 * execve itself: the filter must be the last thing init does (runc's and
 * crun's order), also without noNewPrivileges, where init installs it with
 * CAP_SYS_ADMIN (OCI runtime-tools' validation suite uses such profiles). */
static void run_with_tight_allowlist(bool no_new_privileges) {
  struct an_spec *spec = an_test_bundle_spec(&B, "true", NULL);
  spec->process->no_new_privileges = no_new_privileges;
  static const char *const allowed[] = {
    "execve", "arch_prctl", "brk", "mmap", "munmap", "mprotect", "set_tid_address",
    "set_robust_list", "rseq", "prlimit64", "getrandom", "getuid", "readlink",
    "exit", "exit_group", NULL};
  struct an_spec_seccomp *s = calloc(1, sizeof *s);
  s->default_action = SCMP_ACT_ERRNO(EPERM);
  s->architectures = calloc(1, sizeof *s->architectures);
  s->architectures[0] = SCMP_ARCH_X86_64;
  s->n_architectures = 1;
  s->syscalls = calloc(1, sizeof *s->syscalls);
  s->n_syscalls = 1;
  size_t n = 0;
  while (allowed[n]) n++;
  s->syscalls[0].names = calloc(n + 1, sizeof(char *));
  for (size_t i = 0; i < n; i++) s->syscalls[0].names[i] = strdup(allowed[i]);
  s->syscalls[0].action = SCMP_ACT_ALLOW;
  an_spec_seccomp_free(spec->linux.seccomp);
  spec->linux.seccomp = s;
  an_error_t err = NULL;
  int r = an_test_run_capture(spec, &B, NULL, &err);
  cr_assert_eq(r, 0, "noNewPrivileges %d: status %d: %s", no_new_privileges, r,
               err ? err->msg : "");
  an_spec_free(spec);
}

Test(embedding, tight_seccomp_allowlist_runs_without_no_new_privileges) {
  run_with_tight_allowlist(false);
}

Test(embedding, tight_seccomp_allowlist_runs_with_no_new_privileges) {
  run_with_tight_allowlist(true);
}

/* Init keeps CAP_SYS_ADMIN to install the filter last; the program must
 * not have it (nor any other capability the spec does not grant). */
Test(embedding, seccomp_without_no_new_privileges_gives_the_program_no_capability) {
  struct an_spec *spec = an_test_bundle_spec(&B, "sh", "-c",
      "grep -E '^Cap(Prm|Eff|Bnd|Amb|Inh)' /proc/self/status", NULL);
  spec->process->no_new_privileges = false;
  struct an_spec_seccomp *s = an_test_seccomp_one_rule("mkdirat", SCMP_ACT_ERRNO(EPERM));
  an_spec_seccomp_free(spec->linux.seccomp);
  spec->linux.seccomp = s;
  char *out = NULL;
  an_error_t err = NULL;
  int r = an_test_run_capture(spec, &B, &out, &err);
  cr_assert_eq(r, 0, "status %d: %s", r, err ? err->msg : "");
  cr_assert_str_eq(out, "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\n"
                   "CapEff:\t0000000000000000\nCapBnd:\t0000000000000000\n"
                   "CapAmb:\t0000000000000000\n");
  free(out);
  an_spec_free(spec);
}

/* linux.devices[].fileMode is the node's mode exactly (runc, crun): the
 * runtime's umask (022 here) must not turn 0660 into 0640. */
Test(embedding, device_node_gets_exactly_its_file_mode) {
  struct an_spec *spec = an_test_bundle_spec(&B, "stat", "-c", "%a %t:%T", "/dev/an-null", NULL);
  drop_namespace(spec, CLONE_NEWUSER);   /* nodes are made (mknod) only outside a user namespace */
  free(spec->linux.uid_mappings);
  free(spec->linux.gid_mappings);
  spec->linux.uid_mappings = spec->linux.gid_mappings = NULL;
  spec->linux.n_uid_mappings = spec->linux.n_gid_mappings = 0;
  struct an_spec_device *d = realloc(spec->linux.devices, (spec->linux.n_devices + 1) * sizeof *d);
  spec->linux.devices = d;
  d = &spec->linux.devices[spec->linux.n_devices++];
  memset(d, 0, sizeof *d);
  d->type = 'c';
  d->path = strdup("/dev/an-null");
  d->major = 1;
  d->minor = 3;
  d->has_file_mode = true;
  d->file_mode = 0660;
  mode_t old = umask(022);
  char *out = NULL;
  an_error_t err = NULL;
  int r = an_test_run_capture(spec, &B, &out, &err);
  umask(old);
  cr_assert_eq(r, 0, "status %d: %s %s", r, err ? err->msg : "", out ? out : "");
  cr_assert_str_eq(out, "660 1:3\n");
  free(out);
  an_spec_free(spec);
}

/* create fails with `want_errno` and a message holding `want_msg`, and
 * leaves no state directory or cgroup. */
static void assert_refused(struct an_spec *spec, int want_errno, const char *want_msg) {
  an_test_assert_create_refused(&B, spec, want_errno, want_msg);
}

/* runc runs a config without a mount namespace (in its own) or joins one by
 * path; AgentNest refuses both, and says it is deliberate. */
Test(embedding, config_without_or_joining_a_mount_namespace_is_refused_as_deliberate) {
  struct an_spec *spec = an_test_bundle_spec(&B, "true", NULL);
  drop_namespace(spec, CLONE_NEWNS);
  assert_refused(spec, EINVAL, "without a mount namespace is refused: a deliberate difference");
  an_spec_free(spec);

  spec = an_test_bundle_spec(&B, "true", NULL);
  for (size_t i = 0; i < spec->linux.n_namespaces; i++)
    if (spec->linux.namespaces[i].clone_flag == CLONE_NEWNS)
      spec->linux.namespaces[i].path = strdup("/proc/self/ns/mnt");
  assert_refused(spec, EINVAL, "joining the mount namespace /proc/self/ns/mnt is refused: a "
                 "deliberate difference");
  an_spec_free(spec);
}

/* Confinement asked for and not enforced here is refused (fail closed), as
 * runc and crun refuse it on a host without the LSM; the same for the
 * cgroup controls this runtime does not implement. */
Test(embedding, unenforceable_lsm_labels_and_cgroup_controls_are_refused) {
  struct an_spec *spec = an_test_bundle_spec(&B, "true", NULL);
  spec->process->apparmor_profile = strdup("docker-default");
  assert_refused(spec, EOPNOTSUPP, "process.apparmorProfile \"docker-default\"");
  free(spec->process->apparmor_profile);
  spec->process->apparmor_profile = NULL;
  spec->process->selinux_label = strdup("system_u:system_r:container_t:s0");
  assert_refused(spec, EOPNOTSUPP, "process.selinuxLabel");
  free(spec->process->selinux_label);
  spec->process->selinux_label = NULL;
  spec->linux.mount_label = strdup("system_u:object_r:container_file_t:s0");
  assert_refused(spec, EOPNOTSUPP, "linux.mountLabel");
  free(spec->linux.mount_label);
  spec->linux.mount_label = NULL;

  static const char *const docs[] = {"{\"memory\": {\"kernelTCP\": 1048576}}",
                                     "{\"network\": {\"classID\": 1048577}}", NULL};
  static const char *const want[] = {"memory.kernelTCP", "linux.resources.network", NULL};
  for (int i = 0; docs[i]; i++) {
    struct an_spec_resources *res = NULL;
    an_error_t err = NULL;
    cr_assert_eq(an_spec_resources_parse(docs[i], strlen(docs[i]), &res, &err), 0, "%s",
                 err ? err->msg : "");
    an_spec_resources_free(spec->linux.resources);
    spec->linux.resources = res;
    assert_refused(spec, EOPNOTSUPP, want[i]);
  }
  an_spec_free(spec);
}

/* runc: kernel.hostname conflicts with the hostname field. */
Test(embedding, kernel_hostname_sysctl_with_a_hostname_is_refused) {
  struct an_spec *spec = an_test_bundle_spec(&B, "true", NULL);
  free(spec->hostname);
  spec->hostname = strdup("box");
  struct an_spec_key_value *kv = realloc(spec->linux.sysctl, (spec->linux.n_sysctl + 1) * sizeof *kv);
  spec->linux.sysctl = kv;
  kv[spec->linux.n_sysctl].key = strdup("kernel.hostname");
  kv[spec->linux.n_sysctl].value = strdup("other");
  spec->linux.n_sysctl++;
  assert_refused(spec, EINVAL, "\"kernel.hostname\": conflicts with the hostname field");
  an_spec_free(spec);
}

/* crun's and runc's process defaults: HOME from the user's passwd entry in
 * the rootfs when env has none ("/" without an entry), kept when set; a
 * missing cwd is made. */
Test(embedding, home_defaults_from_passwd_and_a_missing_cwd_is_made) {
  struct an_spec *spec = an_test_bundle_spec(&B, "sh", "-c", "echo \"$HOME\"; pwd", NULL);
  for (char **e = spec->process->env; e && *e; e++) free(*e);
  free(spec->process->env);
  spec->process->env = calloc(2, sizeof(char *));
  spec->process->env[0] = strdup("PATH=/bin");
  free(spec->process->cwd);
  spec->process->cwd = strdup("/tmp/made/here");
  char *out = NULL;
  an_error_t err = NULL;
  int r = an_test_run_capture(spec, &B, &out, &err);
  cr_assert_eq(r, 0, "status %d: %s %s", r, err ? err->msg : "", out ? out : "");
  cr_assert_str_eq(out, "/root\n/tmp/made/here\n");
  free(out);
  /* a uid without a passwd entry: "/" */
  spec->process->user.uid = 4242;
  r = an_test_run_capture(spec, &B, &out, &err);
  cr_assert_eq(r, 0, "status %d: %s", r, err ? err->msg : "");
  cr_assert_str_eq(out, "/\n/tmp/made/here\n");
  free(out);
  /* HOME given: kept */
  free(spec->process->env[0]);
  spec->process->env[0] = strdup("HOME=/elsewhere");
  r = an_test_run_capture(spec, &B, &out, &err);
  cr_assert_eq(r, 0, "status %d: %s", r, err ? err->msg : "");
  cr_assert_str_eq(out, "/elsewhere\n/tmp/made/here\n");
  free(out);
  an_spec_free(spec);
}

/* runc's and crun's hooks without env inherit the runtime's environment. */
Test(embedding, hooks_without_env_inherit_the_runtime_s_environment) {
  char file[400], script[600];
  snprintf(file, sizeof file, "%s/hook-env", B.dir);
  snprintf(script, sizeof script, "echo \"$AN_HOOK_PROBE\" > '%s'", file);
  struct an_spec *spec = an_test_bundle_spec(&B, "true", NULL);
  spec->hooks.prestart = calloc(1, sizeof *spec->hooks.prestart);
  spec->hooks.n_prestart = 1;
  spec->hooks.prestart[0].path = strdup("/bin/sh");
  spec->hooks.prestart[0].args = calloc(4, sizeof(char *));
  spec->hooks.prestart[0].args[0] = strdup("sh");
  spec->hooks.prestart[0].args[1] = strdup("-c");
  spec->hooks.prestart[0].args[2] = strdup(script);
  setenv("AN_HOOK_PROBE", "inherited", 1);
  an_error_t err = NULL;
  int r = an_test_run_capture(spec, &B, NULL, &err);
  unsetenv("AN_HOOK_PROBE");
  cr_assert_eq(r, 0, "status %d: %s", r, err ? err->msg : "");
  char *got = an_test_read_file(file, NULL);
  cr_assert_not_null(got, "the hook did not run");
  cr_assert_str_eq(got, "inherited\n");
  free(got);
  an_spec_free(spec);
}

/* The HOME lookup reads the image's /etc/passwd only if it is a regular
 * file: a FIFO planted there must not hang create. */
Test(embedding, home_lookup_ignores_a_passwd_that_is_not_a_regular_file) {
  char p[400];
  snprintf(p, sizeof p, "%s/etc/passwd", B.rootfs);
  cr_assert(unlink(p) == 0 && mkfifo(p, 0644) == 0);
  struct an_spec *spec = an_test_bundle_spec(&B, "sh", "-c", "echo \"$HOME\"", NULL);
  for (char **e = spec->process->env; e && *e; e++) free(*e);
  free(spec->process->env);
  spec->process->env = calloc(2, sizeof(char *));
  spec->process->env[0] = strdup("PATH=/bin");
  char *out = NULL;
  an_error_t err = NULL;
  int r = an_test_run_capture(spec, &B, &out, &err);
  cr_assert_eq(r, 0, "status %d: %s", r, err ? err->msg : "");
  cr_assert_str_eq(out, "/\n");
  free(out);
  an_spec_free(spec);
}
