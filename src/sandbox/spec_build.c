/* sandbox/spec_build.c — sandbox options -> the OCI runtime-spec config the
 * engine runs (an_sandbox_build_spec, agentnest/sandbox_opts.h).  This is
 * where DESIGN.md's "Secure defaults of a sandbox" become data: namespaces,
 * id maps, user, capabilities, mounts, masked paths, limits, devices and
 * seccomp.  The engine applies them; nothing here touches the system except
 * reading the seccomp profile file.
 *
 * Decisions recorded here:
 * - /workspace is a plain bind mount (no idmapped mount): the runtime chowns
 *   the workspace directory to the sandbox user's host ids
 *   (host_uid_base + 65532), so what the sandbox writes is owned on the host
 *   by ids no one else has.  This works on every kernel and filesystem.
 * - RLIMIT_NOFILE 1024 soft / 4096 hard: the usual shell soft limit; a
 *   program may raise itself to 4096, enough for test suites, while bounding
 *   kernel memory pinned by open files.  RLIMIT_CORE 0: no core files (they
 *   could carry secrets out through the workspace).  RLIMIT_SIGPENDING
 *   1024: queued signals are counted per user up the user-namespace chain;
 *   the sandbox's own count stops here, far below a host user's budget.
 * - /tmp is exec (nosuid,nodev): /workspace is executable anyway, so noexec
 *   on /tmp stopped nothing and broke real programs (issue 10, item 12);
 *   tmp_noexec (--tmp-noexec) restores it.
 * - Every tmpfs has an inode cap (nr_inodes, one inode per 4 KiB of its size,
 *   at least 1024): without one, empty files cost kernel memory without
 *   bound and a full /tmp OOM-killed every later command (issue 10, item 4).
 * - /dev/pts is a private devpts instance with max=64 ptys: non-initial
 *   instances share kernel.pty.max - kernel.pty.reserve, so without a cap
 *   one sandbox could take every pty of every other (issue 10, item 5).
 * - The sandbox's user namespace gets per-namespace limits (user.* sysctls,
 *   user_namespaces(7)): no user, pid, net, ipc, uts or cgroup namespace may be made inside, and
 *   inotify instances and watches are capped.  What is counted is also
 *   charged to the namespace's owner, the sandbox's own host uid (the
 *   engine makes the namespace with that euid), not host root.
 * - The image's WorkingDir is not used: a sandbox starts in its workdir.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "agentnest/sandbox_opts.h"
#include "agentnest/spec.h"
#include "engine/landlock.h"
#include "engine/procview.h"
#include "sandbox/opts_internal.h"
#include "sandbox/seccomp_check.h"
#include "sandbox/spec_build_internal.h"
#include "agentnest/seccomp_profile.h"
#include "util/cleanup.h"

#define OCI_VERSION        "1.2.0"
#define CPU_PERIOD_US      100000
#define DEV_SIZE           "size=64k"
#define RUN_SIZE           "size=16777216"     /* 16 MiB */
#define RUN_INODES         "nr_inodes=4096"
#define TMP_INODES_MIN     1024
#define PTY_MAX            "max=64"
#define SIGPENDING_MAX     1024
#define NOFILE_SOFT        1024
#define NOFILE_HARD        4096
#define DEFAULT_PATH       "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define DEVPTS_GID         5                   /* the "tty" group in Debian's base-passwd */

/* runc's and Docker's default masked paths, plus /proc/sched_debug, the
 * powercap (RAPL energy counters: CVE-2020-8694) tree and /proc/cmdline.
 * The engine masks a file with /dev/null and a directory with an empty
 * read-only tmpfs. */
static const char *const masked_paths[] = {
  "/proc/acpi", "/proc/asound", "/proc/interrupts", "/proc/kcore", "/proc/keys",
  "/proc/latency_stats", "/proc/sched_debug", "/proc/scsi", "/proc/timer_list",
  "/proc/timer_stats", "/sys/devices/virtual/powercap", "/sys/firmware",
  "/proc/cmdline",   /* the host kernel's command line (issue 10 item 3) */
  NULL,
};

/* Read-only re-mounts inside /proc (runc's list; moby/moby#5903 and
 * systemd#9891 for sysrq-trigger). */
static const char *const readonly_paths[] = {
  "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL,
};

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static const int namespaces[] = {
  CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWUTS,
  CLONE_NEWCGROUP,
};

struct device_node { const char *path; int64_t major, minor; };
static const struct device_node device_nodes[] = {
  {"/dev/null", 1, 3}, {"/dev/zero", 1, 5}, {"/dev/full", 1, 7},
  {"/dev/random", 1, 8}, {"/dev/urandom", 1, 9}, {"/dev/tty", 5, 0},
};

/* Device cgroup allow rules after "deny all": the nodes above, /dev/ptmx
 * (5:2) and the devpts slaves (136:*). */
static const struct { int64_t major, minor; } device_allow[] = {
  {1, 3}, {1, 5}, {1, 7}, {1, 8}, {1, 9}, {5, 0}, {5, 2}, {136, -1},
};

struct mount_template {
  const char *destination, *type, *source;
  const char *options[8];
};

/* In mount order; /tmp and /workspace come from the options. */
static const struct mount_template fixed_mounts_head[] = {
  {"/proc", "proc", "proc", {"nosuid", "noexec", "nodev", NULL}},
  {"/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", DEV_SIZE, NULL}},
  {"/dev/pts", "devpts", "devpts",
   {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5", PTY_MAX, NULL}},
  {"/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777", NULL}},   /* + shm_size */
  {"/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev", NULL}},
  {"/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro", NULL}},
};
static const struct mount_template run_mount =
  {"/run", "tmpfs", "tmpfs", {"nosuid", "nodev", "mode=755", RUN_SIZE, RUN_INODES, NULL}};

/* Per-user-namespace limits (/proc/sys/user in the sandbox's namespace):
 * no namespace may be made inside (the seccomp profile denies it too), and
 * inotify caps.  Not max_mnt_namespaces: the engine's own open_tree clones
 * (read-only and masked paths, after the sysctls) count as mount
 * namespaces; mount namespaces stay denied by seccomp (unshare, clone
 * flags, open_tree). */
static const struct { const char *key, *value; } userns_sysctls[] = {
  {"user.max_user_namespaces", "0"}, {"user.max_pid_namespaces", "0"}, {"user.max_net_namespaces", "0"},
  {"user.max_ipc_namespaces", "0"}, {"user.max_uts_namespaces", "0"},
  {"user.max_cgroup_namespaces", "0"}, {"user.max_inotify_instances", "128"},
  {"user.max_inotify_watches", "65536"},
};

/* ---- small allocation helpers; each returns false on ENOMEM ---------------------------- */

static bool dup_str(char **dst, const char *src) {
  *dst = strdup(src);
  return *dst != NULL;
}

static bool dup_strv(char ***dst, const char *const *src) {
  size_t n = 0;
  while (src[n]) n++;
  char **v = calloc(n + 1, sizeof *v);
  if (!v) return false;
  *dst = v;   /* linked first, so an_spec_free releases a partial copy */
  for (size_t i = 0; i < n; i++)
    if (!(v[i] = strdup(src[i]))) return false;
  return true;
}

static bool empty_strv(char ***dst) {
  *dst = calloc(1, sizeof **dst);
  return *dst != NULL;
}

static bool add_mount(struct an_spec *spec, const struct mount_template *t, const char *source,
                      const char *extra_option) {
  struct an_spec_mount *m = &spec->mounts[spec->n_mounts++];
  if (!dup_str(&m->destination, t->destination) || !dup_str(&m->type, t->type) ||
      !dup_str(&m->source, source ? source : t->source) || !dup_strv(&m->options, t->options))
    return false;
  if (extra_option) {
    size_t n = 0;
    while (m->options[n]) n++;
    char **grown = realloc(m->options, (n + 2) * sizeof *grown);
    if (!grown) return false;
    m->options = grown;
    grown[n + 1] = NULL;
    if (!(grown[n] = strdup(extra_option))) return false;
  }
  return true;
}

/* ---- argument checks -------------------------------------------------------------------- */

static int check_args(const struct an_sandbox_opts *opts, const struct an_sandbox_image *img,
                      const struct an_sandbox_ids *ids, const char *sandbox_id,
                      const char *workspace, char **argv, an_error_t *err) {
  if (!opts) return an_error_set(err, EINVAL, "sandbox spec: no options");
  if (!img || !img->rootfs || img->rootfs[0] != '/')
    return an_error_set(err, EINVAL, "sandbox spec: image rootfs \"%s\": must be an absolute path",
                        img && img->rootfs ? img->rootfs : "");
  for (char **e = img->env; e && *e; e++)
    if (!strchr(*e, '=') || **e == '=')
      return an_error_set(err, EINVAL, "sandbox spec: image env entry \"%s\": expected KEY=value", *e);
  if (!ids || ids->size < AN_IDRANGE_SIZE)
    return an_error_set(err, EINVAL, "sandbox spec: id range of %u ids: need at least %u",
                        ids ? ids->size : 0, AN_IDRANGE_SIZE);
  /* Fail closed: container root must never be host root, and the range
   * must not wrap or reach (uid_t)-1. */
  if (ids->host_uid_base == 0 || (uint64_t) ids->host_uid_base + ids->size > UINT32_MAX)
    return an_error_set(err, EINVAL, "sandbox spec: id range %u+%u: must not include host id 0 "
                        "or 4294967295", ids->host_uid_base, ids->size);
  if (sandbox_id) {
    size_t n = strlen(sandbox_id);
    bool ok = n >= 1 && n <= 52;
    for (size_t i = 0; ok && i < n; i++) {
      char c = sandbox_id[i];
      ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    }
    if (!ok)
      return an_error_set(err, EINVAL, "sandbox spec: sandbox id \"%s\": must match [A-Za-z0-9]{1,52}",
                          sandbox_id);
  }
  if (!workspace || workspace[0] != '/')
    return an_error_set(err, EINVAL, "sandbox spec: workspace \"%s\": must be an absolute host path",
                        workspace ? workspace : "");
  if (!argv || !argv[0] || !argv[0][0])
    return an_error_set(err, EINVAL, "sandbox spec: empty command");
  return 0;
}

/* ---- sections --------------------------------------------------------------------------- */

static bool env_has(char **env, const char *key) {
  size_t n = strlen(key);
  for (char **e = env; e && *e; e++)
    if (strncmp(*e, key, n) == 0 && (*e)[n] == '=') return true;
  return false;
}

/* image env, then opts env, then secrets (later KEY wins); PATH and HOME
 * when absent. */
static bool build_env(const struct an_sandbox_opts *opts, const struct an_sandbox_image *img,
                      char ***out) {
  if (!empty_strv(out)) return false;
  char *const *sources[] = {img->env, opts->env};
  for (size_t s = 0; s < 2; s++)
    for (char *const *e = sources[s]; e && *e; e++) {
      char *copy = strdup(*e);
      if (!copy || an_sandbox_strv_set_env(out, copy) < 0) return false;
    }
  for (size_t i = 0; opts->secret_names && opts->secret_names[i]; i++) {
    char *kv = NULL;
    if (asprintf(&kv, "%s=%s", opts->secret_names[i], opts->secret_values[i]) < 0) return false;
    if (an_sandbox_strv_set_env(out, kv) < 0) return false;
  }
  if (!env_has(*out, "PATH")) {
    char *copy = strdup(DEFAULT_PATH);
    if (!copy || an_sandbox_strv_set_env(out, copy) < 0) return false;
  }
  if (!env_has(*out, "HOME")) {
    char *copy = strdup("HOME=" AN_SANDBOX_WORKSPACE);
    if (!copy || an_sandbox_strv_set_env(out, copy) < 0) return false;
  }
  return true;
}

static bool build_process(struct an_spec *spec, const struct an_sandbox_opts *opts,
                          const struct an_sandbox_image *img, char **argv) {
  struct an_spec_process *p = spec->process = calloc(1, sizeof *p);
  if (!p) return false;
  p->terminal = false;
  p->user.uid = opts->uid;
  p->user.gid = opts->gid;
  p->user.has_umask = true;
  p->user.umask = 022;
  p->no_new_privileges = true;
  if (!dup_str(&p->cwd, opts->workdir) || !dup_strv(&p->args, (const char *const *) argv) ||
      !build_env(opts, img, &p->env))
    return false;
  /* No capabilities: all five sets present and empty (not absent), so no
   * engine default can fill them in. */
  if (!(p->capabilities = calloc(1, sizeof *p->capabilities))) return false;
  if (!empty_strv(&p->capabilities->bounding) || !empty_strv(&p->capabilities->effective) ||
      !empty_strv(&p->capabilities->inheritable) || !empty_strv(&p->capabilities->permitted) ||
      !empty_strv(&p->capabilities->ambient))
    return false;
  if (!(p->rlimits = calloc(3, sizeof *p->rlimits))) return false;
  p->rlimits[0] = (struct an_spec_rlimit){.type = RLIMIT_NOFILE, .hard = NOFILE_HARD, .soft = NOFILE_SOFT};
  p->rlimits[1] = (struct an_spec_rlimit){.type = RLIMIT_CORE, .hard = 0, .soft = 0};
  p->rlimits[2] = (struct an_spec_rlimit){.type = RLIMIT_SIGPENDING, .hard = SIGPENDING_MAX,
                                          .soft = SIGPENDING_MAX};
  p->n_rlimits = 3;
  return true;
}

static bool build_mounts(struct an_spec *spec, const struct an_sandbox_opts *opts,
                         const char *workspace) {
  size_t n_head = sizeof fixed_mounts_head / sizeof *fixed_mounts_head;
  if (!(spec->mounts = calloc(n_head + 3, sizeof *spec->mounts))) return false;
  /* /dev/shm: shm_size (default 64 MiB), one inode per 4 KiB */
  char shm_size[40];
  snprintf(shm_size, sizeof shm_size, "size=%llu", (unsigned long long) opts->shm_size);
  uint64_t shm_inodes = opts->shm_size / 4096;
  for (size_t i = 0; i < n_head; i++) {
    struct mount_template t = fixed_mounts_head[i];
    char inodes_opt[40];
    const char *extra = NULL;
    if (strcmp(t.destination, "/dev/shm") == 0) {
      size_t k = 0;
      while (t.options[k]) k++;
      snprintf(inodes_opt, sizeof inodes_opt, "nr_inodes=%llu",
               (unsigned long long) (shm_inodes < TMP_INODES_MIN ? TMP_INODES_MIN : shm_inodes));
      t.options[k] = shm_size;   /* the template has room: options[8] */
      extra = inodes_opt;
    }
    if (!add_mount(spec, &t, NULL, extra)) return false;
  }
  char tmp_size[40], tmp_inodes[40];
  snprintf(tmp_size, sizeof tmp_size, "size=%llu", (unsigned long long) opts->tmp_size);
  uint64_t inodes = opts->tmp_size / 4096;
  snprintf(tmp_inodes, sizeof tmp_inodes, "nr_inodes=%llu",
           (unsigned long long) (inodes < TMP_INODES_MIN ? TMP_INODES_MIN : inodes));
  const struct mount_template tmp =
    {"/tmp", "tmpfs", "tmpfs", {"nosuid", "nodev", opts->tmp_noexec ? "noexec" : "exec",
                                "mode=1777", tmp_inodes, NULL}};
  const struct mount_template ws =
    {AN_SANDBOX_WORKSPACE, "bind", NULL, {"bind", "rw", "nosuid", "nodev", NULL}};
  return add_mount(spec, &tmp, NULL, tmp_size) && add_mount(spec, &run_mount, NULL, NULL) &&
         add_mount(spec, &ws, workspace, NULL);
}

static bool build_resources(struct an_spec *spec, const struct an_sandbox_opts *opts) {
  struct an_spec_resources *r = spec->linux.resources = calloc(1, sizeof *r);
  if (!r) return false;
  r->has_memory_limit = true;
  r->memory_limit = (int64_t) opts->memory;
  r->has_memory_swap = true;           /* memory+swap == memory: no swap */
  r->memory_swap = (int64_t) opts->memory;
  r->has_cpu_quota = true;
  r->cpu_quota = (int64_t) (opts->millicpus * CPU_PERIOD_US / 1000);
  r->has_cpu_period = true;
  r->cpu_period = CPU_PERIOD_US;
  r->has_pids_limit = true;
  r->pids_limit = (int64_t) opts->pids;
  size_t n_allow = sizeof device_allow / sizeof *device_allow;
  if (!(r->devices = calloc(n_allow + 1, sizeof *r->devices))) return false;
  r->devices[0] = (struct an_spec_device_cgroup){.allow = false, .type = 'a', .major = -1, .minor = -1};
  r->n_devices = 1;
  if (!dup_str(&r->devices[0].access, "rwm")) return false;
  for (size_t i = 0; i < n_allow; i++) {
    struct an_spec_device_cgroup *d = &r->devices[r->n_devices++];
    *d = (struct an_spec_device_cgroup){.allow = true, .type = 'c', .major = device_allow[i].major,
                                        .minor = device_allow[i].minor};
    if (!dup_str(&d->access, "rwm")) return false;
  }
  return true;
}

static bool build_linux(struct an_spec *spec, const struct an_sandbox_opts *opts,
                        const struct an_sandbox_ids *ids) {
  struct an_spec_linux *l = &spec->linux;
  size_t n_ns = sizeof namespaces / sizeof *namespaces;
  if (!(l->namespaces = calloc(n_ns + 1, sizeof *l->namespaces))) return false;
  for (size_t i = 0; i < n_ns; i++) {
    l->namespaces[i].clone_flag = namespaces[i];
    l->ns_flags |= namespaces[i];
  }
  l->n_namespaces = n_ns;
  /* its own uptime and clocks from 0 (engine/procview.h), where the kernel
   * has time namespaces (Linux 5.6, CONFIG_TIME_NS); without them the
   * sandbox sees the host's uptime (agentnest(1) SECURITY) */
  if (an_sandbox_has_timens()) {
    l->namespaces[l->n_namespaces++].clone_flag = CLONE_NEWTIME;
    l->ns_flags |= CLONE_NEWTIME;
  }
  if (!(l->uid_mappings = calloc(1, sizeof *l->uid_mappings))) return false;
  if (!(l->gid_mappings = calloc(1, sizeof *l->gid_mappings))) return false;
  l->uid_mappings[0] = l->gid_mappings[0] =
    (struct an_spec_id_mapping){.container_id = 0, .host_id = ids->host_uid_base, .size = ids->size};
  l->n_uid_mappings = l->n_gid_mappings = 1;
  size_t n_sysctl = sizeof userns_sysctls / sizeof *userns_sysctls;
  if (!(l->sysctl = calloc(n_sysctl, sizeof *l->sysctl))) return false;
  for (size_t i = 0; i < n_sysctl; i++) {
    l->n_sysctl = i + 1;   /* counted first, so an_spec_free releases a partial copy */
    if (!dup_str(&l->sysctl[i].key, userns_sysctls[i].key) ||
        !dup_str(&l->sysctl[i].value, userns_sysctls[i].value))
      return false;
  }
  if (!dup_strv(&l->masked_paths, masked_paths) || !dup_strv(&l->readonly_paths, readonly_paths) ||
      !dup_str(&l->rootfs_propagation, "private"))
    return false;
  size_t n_dev = sizeof device_nodes / sizeof *device_nodes;
  if (!(l->devices = calloc(n_dev, sizeof *l->devices))) return false;
  for (size_t i = 0; i < n_dev; i++) {
    struct an_spec_device *d = &l->devices[l->n_devices++];
    *d = (struct an_spec_device){.type = 'c', .major = device_nodes[i].major,
                                 .minor = device_nodes[i].minor, .has_file_mode = true,
                                 .file_mode = 0666, .has_uid = true, .uid = 0,
                                 .has_gid = true, .gid = 0};
    if (!dup_str(&d->path, device_nodes[i].path)) return false;
  }
  return build_resources(spec, opts);
}

/* DESIGN "landlock": where the kernel has it, writes are confined to the
 * writable mounts as a second line behind the mount flags (the engine reads
 * the annotation, engine/landlock.h). */
static bool build_annotations(struct an_spec *spec, const struct an_sandbox_opts *opts) {
  const char *mode = opts->landlock == AN_SANDBOX_LANDLOCK_REQUIRED ? "required"
                     : opts->landlock == AN_SANDBOX_LANDLOCK_OFF    ? "off"
                                                                    : "if-available";
  if (!(spec->annotations = calloc(3, sizeof *spec->annotations))) return false;
  struct an_spec_key_value *a = spec->annotations;
  /* and its own boot_id; zero time offsets for its time namespace */
  bool ok = dup_str(&a[0].key, AN_LANDLOCK_ANNOTATION) && dup_str(&a[0].value, mode) &&
            dup_str(&a[1].key, AN_BOOT_ID_ANNOTATION) && dup_str(&a[1].value, "private");
  spec->n_annotations = 2;
  if (ok && (spec->linux.ns_flags & CLONE_NEWTIME)) {
    ok = dup_str(&a[2].key, AN_TIMENS_ANNOTATION) && dup_str(&a[2].value, "zero");
    spec->n_annotations = 3;
  }
  return ok;
}

bool an_sandbox_has_timens(void) {
  return access("/proc/self/ns/time", F_OK) == 0;
}

int an_sandbox_build_spec_without_seccomp(const struct an_sandbox_opts *opts,
                                          const struct an_sandbox_image *img,
                                          const struct an_sandbox_ids *ids, const char *sandbox_id,
                                          const char *workspace_host_path, char **argv,
                                          struct an_spec **out, an_error_t *err) {
  int r = check_args(opts, img, ids, sandbox_id, workspace_host_path, argv, err);
  if (r < 0) return r;
  struct an_spec *spec = calloc(1, sizeof *spec);
  if (!spec) return an_error_set(err, ENOMEM, "sandbox spec");
  char hostname[80];
  snprintf(hostname, sizeof hostname, "agentnest%s%s", sandbox_id ? "-" : "",
           sandbox_id ? sandbox_id : "");
  spec->root.readonly = true;
  bool ok = dup_str(&spec->oci_version, OCI_VERSION) && dup_str(&spec->root.path, img->rootfs) &&
            dup_str(&spec->hostname, hostname) && build_process(spec, opts, img, argv) &&
            build_mounts(spec, opts, workspace_host_path) && build_linux(spec, opts, ids) &&
            build_annotations(spec, opts);
  if (!ok) {
    an_spec_free(spec);
    return an_error_set(err, ENOMEM, "sandbox spec");
  }
  if ((r = an_sb_cdi_apply(opts, img->rootfs, spec, err)) < 0) {   /* --gpu: CDI containerEdits */
    an_spec_free(spec);
    return r;
  }
  *out = spec;
  return 0;
}

int an_sandbox_build_spec(const struct an_sandbox_opts *opts, const struct an_sandbox_image *img,
                          const struct an_sandbox_ids *ids, const char *sandbox_id,
                          const char *workspace_host_path, char **argv, struct an_spec **out,
                          an_error_t *err) {
  struct an_spec *spec = NULL;
  int r = an_sandbox_build_spec_without_seccomp(opts, img, ids, sandbox_id, workspace_host_path,
                                                argv, &spec, err);
  if (r < 0) return r;
  r = an_seccomp_profile_load(opts->seccomp_profile, &spec->linux.seccomp, err);
  if (r < 0 || !spec->linux.seccomp) {   /* fail closed: no filter, no sandbox */
    an_spec_free(spec);
    return r < 0 ? r : an_error_set(err, EINVAL, "seccomp profile %s: no filter", opts->seccomp_profile);
  }
  /* A profile that lets through what the default denies only with an explicit yes. */
  if ((r = an_sb_seccomp_check(opts, spec->linux.seccomp, err)) < 0) {
    an_spec_free(spec);
    return r;
  }
  *out = spec;
  return 0;
}
