/* sandbox/policy.c — the effective policy of a spec as JSON members
 * (agentnest/policy.h): every control the engine applies, read from the
 * in-memory OCI spec it applies, plus the host facts that decide whether a
 * control takes effect here, and the list of what does not.  The
 * sandbox's own entry point (an_sandbox_policy) lives here too; profiles
 * are explained in policy_explain.c. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agentnest/policy.h"
#include "engine/cgroup_internal.h"
#include "engine/landlock.h"
#include "engine/seccomp.h"
#include "engine/spec_names.h"
#include "engine/state.h"
#include "sandbox/opts_internal.h"
#include "sandbox/policy_internal.h"
#include "sandbox/sandbox_internal.h"
#include "sandbox/seccomp_check.h"
#include "util/cleanup.h"
#include "util/json_gen.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

int an_sb_host_facts(struct an_sb_host_facts *h) {
  *h = (struct an_sb_host_facts){.landlock_abi = an_landlock_abi_version()};
  if (h->landlock_abi < 0) h->landlock_abi = 0;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  h->online_cpus = cpus > 0 ? (unsigned) cpus : 0;
  struct an_cg_layout l = {0};
  an_error_t e = NULL;
  if (an_cg_layout_read(&l, &e) == 0) {
    h->cgroup_layout = l.layout == AN_CGROUP_UNIFIED ? "unified"
                       : l.layout == AN_CGROUP_HYBRID ? "hybrid" : "legacy";
    for (int c = 0; c < AN_CG__COUNT; c++)
      if (an_cg_layout_find(&l, (enum an_cg_ctrl) c) >= 0) h->controllers |= AN_CG_BIT(c);
    /* cgroup v2 has no devices controller: the engine attaches an eBPF program */
    if (l.layout == AN_CGROUP_UNIFIED) h->controllers |= AN_CG_BIT(AN_CG_DEVICES);
    an_cg_layout_clear(&l);
  }
  an_error_free(&e);
  return 0;
}

static void kv_strv(struct an_jgen *j, const char *k, char *const *v) {
  an_jgen_key(j, k);
  an_jgen_array_open(j);
  for (; v && *v; v++) an_jgen_str(j, *v);
  an_jgen_array_close(j);
}

static void gen_namespaces(struct an_jgen *j, const struct an_spec_linux *l) {
  an_jgen_key(j, "namespaces");
  an_jgen_array_open(j);
  for (size_t i = 0; i < l->n_namespaces; i++) {
    an_jgen_map_open(j);
    an_jgen_kv_str(j, "type", an_namespace_type(l->namespaces[i].clone_flag));
    an_jgen_kv_str(j, "path", l->namespaces[i].path);   /* null: a new one */
    an_jgen_map_close(j);
  }
  an_jgen_array_close(j);
}

static void gen_maps(struct an_jgen *j, const char *k, const struct an_spec_id_mapping *m, size_t n) {
  an_jgen_key(j, k);
  an_jgen_array_open(j);
  for (size_t i = 0; i < n; i++) {
    an_jgen_map_open(j);
    an_jgen_kv_u64(j, "container_id", m[i].container_id);
    an_jgen_kv_u64(j, "host_id", m[i].host_id);
    an_jgen_kv_u64(j, "size", m[i].size);
    an_jgen_map_close(j);
  }
  an_jgen_array_close(j);
}

static void gen_process(struct an_jgen *j, const struct an_spec *spec) {
  const struct an_spec_process *p = spec->process;
  an_jgen_key(j, "user");
  an_jgen_map_open(j);
  if (p) {
    an_jgen_kv_u64(j, "uid", p->user.uid);
    an_jgen_kv_u64(j, "gid", p->user.gid);
    an_jgen_key(j, "additional_gids");
    an_jgen_array_open(j);
    for (size_t i = 0; i < p->user.n_additional_gids; i++) an_jgen_u64(j, p->user.additional_gids[i]);
    an_jgen_array_close(j);
    if (p->user.has_umask) an_jgen_kv_u64(j, "umask", p->user.umask);
  }
  an_jgen_map_close(j);
  an_jgen_key(j, "id_mappings");
  an_jgen_map_open(j);
  gen_maps(j, "uid", spec->linux.uid_mappings, spec->linux.n_uid_mappings);
  gen_maps(j, "gid", spec->linux.gid_mappings, spec->linux.n_gid_mappings);
  an_jgen_map_close(j);
  an_jgen_kv_bool(j, "no_new_privileges", p && p->no_new_privileges);
  an_jgen_key(j, "capabilities");
  an_jgen_map_open(j);
  static char *const none[] = {NULL};
  const struct an_spec_capabilities *c = p ? p->capabilities : NULL;
  /* absent sets are empty for this engine (no defaults are filled in) */
  kv_strv(j, "bounding", c ? c->bounding : none);
  kv_strv(j, "effective", c ? c->effective : none);
  kv_strv(j, "inheritable", c ? c->inheritable : none);
  kv_strv(j, "permitted", c ? c->permitted : none);
  kv_strv(j, "ambient", c ? c->ambient : none);
  an_jgen_map_close(j);
  an_jgen_key(j, "rlimits");
  an_jgen_array_open(j);
  for (size_t i = 0; p && i < p->n_rlimits; i++) {
    an_jgen_map_open(j);
    an_jgen_kv_str(j, "type", an_rlimit_name(p->rlimits[i].type));
    an_jgen_kv_u64(j, "soft", p->rlimits[i].soft);
    an_jgen_kv_u64(j, "hard", p->rlimits[i].hard);
    an_jgen_map_close(j);
  }
  an_jgen_array_close(j);
}

static void gen_filesystem(struct an_jgen *j, const struct an_spec *spec) {
  an_jgen_key(j, "root");
  an_jgen_map_open(j);
  an_jgen_kv_str(j, "path", spec->root.path);
  an_jgen_kv_bool(j, "readonly", spec->root.readonly);
  an_jgen_kv_str(j, "propagation", spec->linux.rootfs_propagation);
  an_jgen_map_close(j);
  an_jgen_key(j, "mounts");
  an_jgen_array_open(j);
  for (size_t i = 0; i < spec->n_mounts; i++) {
    const struct an_spec_mount *m = &spec->mounts[i];
    an_jgen_map_open(j);
    an_jgen_kv_str(j, "destination", m->destination);
    an_jgen_kv_str(j, "type", m->type);
    an_jgen_kv_str(j, "source", m->source);
    kv_strv(j, "options", m->options);
    if (m->n_uid_mappings) gen_maps(j, "uid_mappings", m->uid_mappings, m->n_uid_mappings);
    an_jgen_map_close(j);
  }
  an_jgen_array_close(j);
  kv_strv(j, "masked_paths", spec->linux.masked_paths);
  kv_strv(j, "readonly_paths", spec->linux.readonly_paths);
  an_jgen_key(j, "devices");
  an_jgen_array_open(j);
  for (size_t i = 0; i < spec->linux.n_devices; i++) {
    const struct an_spec_device *d = &spec->linux.devices[i];
    char type[2] = {d->type, 0};
    an_jgen_map_open(j);
    an_jgen_kv_str(j, "path", d->path);
    an_jgen_kv_str(j, "type", type);
    an_jgen_kv_i64(j, "major", d->major);
    an_jgen_kv_i64(j, "minor", d->minor);
    if (d->has_file_mode) an_jgen_kv_u64(j, "mode", d->file_mode);
    an_jgen_map_close(j);
  }
  an_jgen_array_close(j);
  an_jgen_key(j, "sysctl");
  an_jgen_map_open(j);
  for (size_t i = 0; i < spec->linux.n_sysctl; i++)
    an_jgen_kv_str(j, spec->linux.sysctl[i].key, spec->linux.sysctl[i].value);
  an_jgen_map_close(j);
}

static void gen_cgroup(struct an_jgen *j, const struct an_spec *spec, const struct an_sb_host_facts *h) {
  const struct an_spec_resources *r = spec->linux.resources;
  an_jgen_key(j, "cgroup");
  an_jgen_map_open(j);
  an_jgen_kv_str(j, "path", spec->linux.cgroups_path);
  an_jgen_kv_str(j, "layout", h->cgroup_layout);
  if (r && r->has_memory_limit) an_jgen_kv_i64(j, "memory_limit", r->memory_limit);
  if (r && r->has_memory_swap) an_jgen_kv_i64(j, "memory_swap", r->memory_swap);
  if (r && r->has_cpu_quota) an_jgen_kv_i64(j, "cpu_quota_us", r->cpu_quota);
  if (r && r->has_cpu_period) an_jgen_kv_u64(j, "cpu_period_us", r->cpu_period);
  if (r && r->has_cpu_quota && r->has_cpu_period && r->cpu_period && r->cpu_quota > 0) {
    char cpus[32];
    uint64_t milli = (uint64_t) r->cpu_quota * 1000 / r->cpu_period;
    snprintf(cpus, sizeof cpus, "%llu.%03llu", (unsigned long long) (milli / 1000),
             (unsigned long long) (milli % 1000));
    an_jgen_kv_str(j, "cpus", cpus);
  }
  if (r && r->has_pids_limit) an_jgen_kv_i64(j, "pids_limit", r->pids_limit);
  an_jgen_key(j, "devices");
  an_jgen_array_open(j);
  for (size_t i = 0; r && i < r->n_devices; i++) {
    const struct an_spec_device_cgroup *d = &r->devices[i];
    char type[2] = {d->type, 0};
    an_jgen_map_open(j);
    an_jgen_kv_bool(j, "allow", d->allow);
    an_jgen_kv_str(j, "type", type);
    an_jgen_kv_i64(j, "major", d->major);
    an_jgen_kv_i64(j, "minor", d->minor);
    an_jgen_kv_str(j, "access", d->access ? d->access : "rwm");
    an_jgen_map_close(j);
  }
  an_jgen_array_close(j);
  an_jgen_key(j, "controllers");   /* present on this host (needed ones: fail closed) */
  an_jgen_map_open(j);
  static const struct { const char *name; enum an_cg_ctrl c; } ctrls[] = {
    {"memory", AN_CG_MEMORY}, {"pids", AN_CG_PIDS}, {"cpu", AN_CG_CPU}, {"devices", AN_CG_DEVICES},
  };
  for (size_t i = 0; i < sizeof ctrls / sizeof *ctrls; i++)
    an_jgen_kv_bool(j, ctrls[i].name, (h->controllers & AN_CG_BIT(ctrls[i].c)) != 0);
  an_jgen_map_close(j);
  an_jgen_map_close(j);
}

static void gen_labels(struct an_jgen *j, const char *k, char **labels) {
  an_jgen_key(j, k);
  an_jgen_array_open(j);
  for (char **l = labels; l && *l; l++) an_jgen_str(j, *l);
  an_jgen_array_close(j);
}

static int gen_seccomp(struct an_jgen *j, const struct an_spec *spec,
                       const struct an_sandbox_opts *opts, bool *vsock, an_error_t *err) {
  const struct an_spec_seccomp *s = spec->linux.seccomp;
  an_jgen_key(j, "seccomp");
  if (!s) {
    an_jgen_null(j);
    return 0;
  }
  an_jgen_map_open(j);
  if (opts) an_jgen_kv_str(j, "profile", opts->seccomp_profile);
  an_jgen_kv_str(j, "default_action", an_seccomp_action_name(s->default_action));
  if (an_seccomp_action_takes_errno(s->default_action))
    an_jgen_kv_u64(j, "default_errno", s->has_default_errno_ret ? s->default_errno_ret
                                                                : (s->default_action & 0xffff));
  an_jgen_key(j, "architectures");
  an_jgen_array_open(j);
  for (size_t i = 0; i < s->n_architectures; i++) an_jgen_str(j, an_seccomp_arch_name(s->architectures[i]));
  an_jgen_array_close(j);
  kv_strv(j, "flags", s->flags);
  an_jgen_kv_u64(j, "rules", s->n_syscalls);
  size_t names = 0;
  an_jgen_key(j, "conditional_syscalls");   /* allowed only with some arguments */
  an_jgen_array_open(j);
  for (size_t i = 0; i < s->n_syscalls; i++)
    for (char **n = s->syscalls[i].names; n && *n; n++) {
      names++;
      if (!s->syscalls[i].n_args) continue;
      bool seen = false;
      for (size_t k = 0; k < i && !seen; k++)
        for (char **m = s->syscalls[k].names; m && *m && !seen; m++)
          seen = s->syscalls[k].n_args && !strcmp(*m, *n);
      if (!seen) an_jgen_str(j, *n);
    }
  an_jgen_array_close(j);
  an_jgen_kv_u64(j, "syscall_names", names);
  char digest[AN_SECCOMP_DIGEST_LEN];
  int r = an_seccomp_digest(s, digest, err);
  if (r < 0) return r;
  an_jgen_kv_str(j, "digest", digest);
  char **allowed = NULL, **denied = NULL;
  if ((r = an_sb_seccomp_probe(s, &allowed, &denied, err)) < 0) return r;
  gen_labels(j, "denies", denied);
  gen_labels(j, "allows", allowed);
  for (char **l = allowed; l && *l; l++) *vsock |= strcmp(*l, "socket(AF_VSOCK)") == 0;
  an_sb_labels_free(allowed);
  an_sb_labels_free(denied);
  if (opts) {
    char **wide = NULL;
    an_error_t e = NULL;   /* a default that cannot be read: say so, do not fail */
    if (an_sb_seccomp_widening_of(opts, s, &wide, &e) == 0) gen_labels(j, "widens_default", wide);
    else an_jgen_kv_str(j, "widens_default_error", e->msg);
    an_sb_labels_free(wide);
    an_error_free(&e);
    an_jgen_kv_bool(j, "unsafe_accepted", opts->seccomp_unsafe);
  }
  an_jgen_map_close(j);
  return 0;
}

static int gen_landlock(struct an_jgen *j, const struct an_spec *spec, const struct an_sb_host_facts *h,
                        enum an_landlock_mode *mode, an_error_t *err) {
  int r = an_landlock_mode_of(spec, mode, err);
  if (r < 0) return r;
  cleanup_free const char **paths = NULL;
  size_t n = 0;
  if ((r = an_landlock_writable_paths(spec, &paths, &n, err)) < 0) return r;
  an_jgen_key(j, "landlock");
  an_jgen_map_open(j);
  an_jgen_kv_str(j, "mode", *mode == AN_LANDLOCK_REQUIRED ? "required"
                           : *mode == AN_LANDLOCK_IF_AVAILABLE ? "best-effort" : "off");
  an_jgen_kv_i64(j, "kernel_abi", h->landlock_abi);
  an_jgen_kv_bool(j, "enforced", *mode != AN_LANDLOCK_OFF && h->landlock_abi >= 1);
  an_jgen_key(j, "writable_paths");   /* the only places writes are allowed beneath */
  an_jgen_array_open(j);
  for (size_t i = 0; i < n; i++) an_jgen_str(j, paths[i]);
  an_jgen_array_close(j);
  an_jgen_map_close(j);
  return 0;
}

/* One "not enforced here" sentence (bounded; JSON string). */
static void note(struct an_jgen *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct an_jgen *j, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  an_jgen_str(j, buf);
}

static void gen_not_enforced(struct an_jgen *j, const struct an_spec *spec,
                             const struct an_sb_host_facts *h, enum an_landlock_mode mode,
                             bool vsock) {
  const struct an_spec_resources *r = spec->linux.resources;
  an_jgen_key(j, "not_enforced");
  an_jgen_array_open(j);
  if (!spec->linux.seccomp) note(j, "seccomp: no filter");
  if (vsock)
    note(j, "seccomp: socket(AF_VSOCK) is allowed, and no namespace isolates vsock (the "
         "VM's port space is shared with the host)");
  if (mode == AN_LANDLOCK_OFF)
    note(j, "landlock: off; writes are confined by the mount flags alone");
  else if (h->landlock_abi < 1)
    note(j, "landlock: this kernel has no Landlock; %s", mode == AN_LANDLOCK_REQUIRED
         ? "the sandbox is refused (required)"
         : "writes are confined by the mount flags alone (best-effort)");
  static const struct { enum an_cg_ctrl c; const char *what; } need[] = {
    {AN_CG_MEMORY, "memory"}, {AN_CG_PIDS, "pids"}, {AN_CG_CPU, "cpu"}, {AN_CG_DEVICES, "devices"},
  };
  for (size_t i = 0; r && i < sizeof need / sizeof *need; i++)
    if (!(h->controllers & AN_CG_BIT(need[i].c)))
      note(j, "cgroup %s controller: absent on this host; the engine refuses the sandbox "
           "(fail closed)", need[i].what);
  if (r && r->has_cpu_quota && r->cpu_period && h->online_cpus &&
      (uint64_t) r->cpu_quota > (uint64_t) h->online_cpus * r->cpu_period)
    note(j, "cpus: a quota of %.3f CPUs is more than the %u online CPUs; it cannot bind",
         (double) r->cpu_quota / (double) r->cpu_period, h->online_cpus);
  if (spec->process && (spec->process->apparmor_profile || spec->process->selinux_label))
    note(j, "process.apparmorProfile / selinuxLabel: kept in the spec, not applied");
  if (!(spec->linux.ns_flags & CLONE_NEWTIME))
    note(j, "time: no time namespace; /proc/uptime and CLOCK_BOOTTIME are the host's");
  note(j, "/proc/meminfo, /proc/cpuinfo, /proc/stat and /proc/loadavg show the host's values "
       "(no lxcfs-like view)");
  note(j, "the kernel is shared: a kernel bug reachable through the allowed system calls is "
       "not contained by any of these controls");
  an_jgen_array_close(j);
}

int an_sb_policy_members(struct an_jgen *j, const struct an_spec *spec,
                         const struct an_sandbox_opts *opts, const struct an_sb_host_facts *h,
                         an_error_t *err) {
  gen_namespaces(j, &spec->linux);
  gen_process(j, spec);
  gen_filesystem(j, spec);
  gen_cgroup(j, spec, h);
  bool vsock = false;
  int r = gen_seccomp(j, spec, opts, &vsock, err);
  if (r < 0) return r;
  enum an_landlock_mode mode;
  if ((r = gen_landlock(j, spec, h, &mode, err)) < 0) return r;
  an_jgen_key(j, "network");
  an_jgen_map_open(j);
  const char *netns = NULL;
  bool own_netns = false;
  for (size_t i = 0; i < spec->linux.n_namespaces; i++)
    if (spec->linux.namespaces[i].clone_flag == CLONE_NEWNET) {
      own_netns = true;
      netns = spec->linux.namespaces[i].path;
    }
  an_jgen_kv_str(j, "mode", opts ? opts->network : own_netns && !netns ? "none" : "host");
  an_jgen_kv_str(j, "namespace", !own_netns ? "the host's (no network namespace)"
                                 : netns ? netns : "new, empty: loopback only");
  an_jgen_map_close(j);
  if (opts) {
    an_jgen_key(j, "limits");
    an_jgen_map_open(j);
    an_jgen_kv_u64(j, "lifetime_ms", opts->lifetime_ms);
    an_jgen_kv_u64(j, "exec_timeout_ms", opts->exec_timeout_ms);
    an_jgen_kv_u64(j, "max_output", opts->max_output);
    an_jgen_kv_u64(j, "max_read", opts->max_read);
    an_jgen_map_close(j);
  }
  gen_not_enforced(j, spec, h, mode, vsock);
  return 0;
}

int an_sandbox_policy(struct an_sandbox *sb, char **json, an_error_t *err) {
  if (!sb) return an_error_set(err, EINVAL, "policy: no sandbox");
  /* The spec the engine applied, as exec reads it back (exec_spawn.c). */
  struct an_spec *spec = NULL;
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s/%s", sb->containers, sb->rec.id, AN_STATE_CONFIG);
  int r = an_spec_load_file(path, &spec, err);
  if (r < 0) return an_error_prefix(err, "policy of sandbox %s", sb->rec.id);
  struct an_sb_host_facts h;
  an_sb_host_facts(&h);
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, true) < 0) {
    an_spec_free(spec);
    return an_error_set(err, ENOMEM, "policy of sandbox %s: JSON", sb->rec.id);
  }
  an_jgen_validate_utf8(&j);
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "id", sb->rec.id);
  an_jgen_kv_str(&j, "spec", path);
  r = an_sb_policy_members(&j, spec, sb->opts, &h, err);
  an_jgen_map_close(&j);
  an_spec_free(spec);
  if (r < 0) return an_error_prefix(err, "policy of sandbox %s", sb->rec.id);
  if ((r = an_jgen_finish(&j, json, NULL)) < 0)
    return an_error_set(err, -r, "policy of sandbox %s: JSON", sb->rec.id);
  return 0;
}
