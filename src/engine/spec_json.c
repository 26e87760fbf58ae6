/* engine/spec_json.c — an_spec_to_json: write a spec back out as
 * config.json (util/json_gen, tab-indented like `runc spec`).  Every field that
 * an_spec_parse reads is written, so parse -> to_json -> parse is lossless
 * for the in-memory spec.  Standard: runtime-spec config.md, config-linux.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/spec.h"
#include "engine/spec_names.h"
#include "util/json_gen.h"

/* Optional members (runtime-spec leaves out what is unset): written only
 * when set. */
static void opt_str(struct an_jgen *g, const char *k, const char *v) {
  if (v) an_jgen_kv_str(g, k, v);
}
static void opt_strv(struct an_jgen *g, const char *k, char *const *v) {
  if (v) an_jgen_kv_strv(g, k, (const char *const *) v);
}
static void opt_u64(struct an_jgen *g, const char *k, bool has, uint64_t v) {
  if (has) an_jgen_kv_u64(g, k, v);
}
static void opt_i64(struct an_jgen *g, const char *k, bool has, int64_t v) {
  if (has) an_jgen_kv_i64(g, k, v);
}
static void kv_map(struct an_jgen *g, const char *k, const struct an_spec_key_value *kv, size_t n) {
  if (!kv) return;
  an_jgen_key(g, k);
  an_jgen_map_open(g);
  for (size_t i = 0; i < n; i++) an_jgen_kv_str(g, kv[i].key, kv[i].value);
  an_jgen_map_close(g);
}

static void id_mappings(struct an_jgen *g, const char *k, const struct an_spec_id_mapping *m,
                        size_t n) {
  if (!m) return;
  an_jgen_key(g, k);
  an_jgen_array_open(g);
  for (size_t i = 0; i < n; i++) {
    an_jgen_map_open(g);
    an_jgen_kv_u64(g, "containerID", m[i].container_id);
    an_jgen_kv_u64(g, "hostID", m[i].host_id);
    an_jgen_kv_u64(g, "size", m[i].size);
    an_jgen_map_close(g);
  }
  an_jgen_array_close(g);
}

static void gen_process(struct an_jgen *g, const struct an_spec_process *p) {
  an_jgen_key(g, "process");
  an_jgen_map_open(g);
  an_jgen_kv_bool(g, "terminal", p->terminal);
  if (p->has_console_size) {
    an_jgen_key(g, "consoleSize");
    an_jgen_map_open(g);
    an_jgen_kv_u64(g, "height", p->console_height);
    an_jgen_kv_u64(g, "width", p->console_width);
    an_jgen_map_close(g);
  }
  an_jgen_key(g, "user");
  an_jgen_map_open(g);
  an_jgen_kv_u64(g, "uid", p->user.uid);
  an_jgen_kv_u64(g, "gid", p->user.gid);
  opt_u64(g, "umask", p->user.has_umask, p->user.umask);
  if (p->user.additional_gids) {
    an_jgen_key(g, "additionalGids");
    an_jgen_array_open(g);
    for (size_t i = 0; i < p->user.n_additional_gids; i++) an_jgen_u64(g, p->user.additional_gids[i]);
    an_jgen_array_close(g);
  }
  opt_str(g, "username", p->user.username);
  an_jgen_map_close(g);
  opt_strv(g, "args", p->args);
  opt_strv(g, "env", p->env);
  opt_str(g, "cwd", p->cwd);
  if (p->capabilities) {
    an_jgen_key(g, "capabilities");
    an_jgen_map_open(g);
    opt_strv(g, "bounding", p->capabilities->bounding);
    opt_strv(g, "effective", p->capabilities->effective);
    opt_strv(g, "inheritable", p->capabilities->inheritable);
    opt_strv(g, "permitted", p->capabilities->permitted);
    opt_strv(g, "ambient", p->capabilities->ambient);
    an_jgen_map_close(g);
  }
  if (p->rlimits) {
    an_jgen_key(g, "rlimits");
    an_jgen_array_open(g);
    for (size_t i = 0; i < p->n_rlimits; i++) {
      const char *name = an_rlimit_name(p->rlimits[i].type);
      an_jgen_map_open(g);
      an_jgen_kv_str(g, "type", name ? name : "RLIMIT_UNKNOWN");
      an_jgen_kv_u64(g, "hard", p->rlimits[i].hard);
      an_jgen_kv_u64(g, "soft", p->rlimits[i].soft);
      an_jgen_map_close(g);
    }
    an_jgen_array_close(g);
  }
  an_jgen_kv_bool(g, "noNewPrivileges", p->no_new_privileges);
  opt_i64(g, "oomScoreAdj", p->has_oom_score_adj, p->oom_score_adj);
  opt_str(g, "apparmorProfile", p->apparmor_profile);
  opt_str(g, "selinuxLabel", p->selinux_label);
  an_jgen_map_close(g);
}

static void gen_mounts(struct an_jgen *g, const struct an_spec *s) {
  if (!s->mounts) return;
  an_jgen_key(g, "mounts");
  an_jgen_array_open(g);
  for (size_t i = 0; i < s->n_mounts; i++) {
    const struct an_spec_mount *m = &s->mounts[i];
    an_jgen_map_open(g);
    opt_str(g, "destination", m->destination);
    opt_str(g, "type", m->type);
    opt_str(g, "source", m->source);
    opt_strv(g, "options", m->options);
    id_mappings(g, "uidMappings", m->uid_mappings, m->n_uid_mappings);
    id_mappings(g, "gidMappings", m->gid_mappings, m->n_gid_mappings);
    an_jgen_map_close(g);
  }
  an_jgen_array_close(g);
}

static void gen_hook_list(struct an_jgen *g, const char *k, const struct an_spec_hook *h, size_t n) {
  if (!h) return;
  an_jgen_key(g, k);
  an_jgen_array_open(g);
  for (size_t i = 0; i < n; i++) {
    an_jgen_map_open(g);
    opt_str(g, "path", h[i].path);
    opt_strv(g, "args", h[i].args);
    opt_strv(g, "env", h[i].env);
    opt_i64(g, "timeout", h[i].has_timeout, h[i].timeout);
    an_jgen_map_close(g);
  }
  an_jgen_array_close(g);
}

static void gen_hooks(struct an_jgen *g, const struct an_spec_hooks *h) {
  if (!h->prestart && !h->create_runtime && !h->create_container && !h->start_container &&
      !h->poststart && !h->poststop)
    return;
  an_jgen_key(g, "hooks");
  an_jgen_map_open(g);
  gen_hook_list(g, "prestart", h->prestart, h->n_prestart);
  gen_hook_list(g, "createRuntime", h->create_runtime, h->n_create_runtime);
  gen_hook_list(g, "createContainer", h->create_container, h->n_create_container);
  gen_hook_list(g, "startContainer", h->start_container, h->n_start_container);
  gen_hook_list(g, "poststart", h->poststart, h->n_poststart);
  gen_hook_list(g, "poststop", h->poststop, h->n_poststop);
  an_jgen_map_close(g);
}

static void gen_throttle(struct an_jgen *g, const char *k, const struct an_spec_throttle_device *t,
                         size_t n) {
  if (!t) return;
  an_jgen_key(g, k);
  an_jgen_array_open(g);
  for (size_t i = 0; i < n; i++) {
    an_jgen_map_open(g);
    an_jgen_kv_i64(g, "major", t[i].major);
    an_jgen_kv_i64(g, "minor", t[i].minor);
    an_jgen_kv_u64(g, "rate", t[i].rate);
    an_jgen_map_close(g);
  }
  an_jgen_array_close(g);
}

static void gen_resources(struct an_jgen *g, const struct an_spec_resources *r) {
  an_jgen_key(g, "resources");
  an_jgen_map_open(g);
  if (r->devices) {
    an_jgen_key(g, "devices");
    an_jgen_array_open(g);
    for (size_t i = 0; i < r->n_devices; i++) {
      const struct an_spec_device_cgroup *d = &r->devices[i];
      char type[2] = { d->type ? d->type : 'a', 0 };
      an_jgen_map_open(g);
      an_jgen_kv_bool(g, "allow", d->allow);
      an_jgen_kv_str(g, "type", type);
      opt_i64(g, "major", d->major >= 0, d->major);
      opt_i64(g, "minor", d->minor >= 0, d->minor);
      opt_str(g, "access", d->access);
      an_jgen_map_close(g);
    }
    an_jgen_array_close(g);
  }
  if (r->has_memory_limit || r->has_memory_reservation || r->has_memory_swap ||
      r->has_memory_kernel || r->has_memory_swappiness || r->has_disable_oom_killer) {
    an_jgen_key(g, "memory");
    an_jgen_map_open(g);
    opt_i64(g, "limit", r->has_memory_limit, r->memory_limit);
    opt_i64(g, "reservation", r->has_memory_reservation, r->memory_reservation);
    opt_i64(g, "swap", r->has_memory_swap, r->memory_swap);
    opt_i64(g, "kernel", r->has_memory_kernel, r->memory_kernel);
    opt_u64(g, "swappiness", r->has_memory_swappiness, r->memory_swappiness);
    if (r->has_disable_oom_killer) an_jgen_kv_bool(g, "disableOOMKiller", r->disable_oom_killer);
    an_jgen_map_close(g);
  }
  if (r->has_cpu_shares || r->has_cpu_quota || r->has_cpu_period || r->has_cpu_realtime_runtime ||
      r->has_cpu_realtime_period || r->cpu_cpus || r->cpu_mems || r->has_cpu_idle) {
    an_jgen_key(g, "cpu");
    an_jgen_map_open(g);
    opt_u64(g, "shares", r->has_cpu_shares, r->cpu_shares);
    opt_i64(g, "quota", r->has_cpu_quota, r->cpu_quota);
    opt_u64(g, "period", r->has_cpu_period, r->cpu_period);
    opt_i64(g, "realtimeRuntime", r->has_cpu_realtime_runtime, r->cpu_realtime_runtime);
    opt_u64(g, "realtimePeriod", r->has_cpu_realtime_period, r->cpu_realtime_period);
    opt_str(g, "cpus", r->cpu_cpus);
    opt_str(g, "mems", r->cpu_mems);
    opt_i64(g, "idle", r->has_cpu_idle, r->cpu_idle);
    an_jgen_map_close(g);
  }
  if (r->has_pids_limit) {
    an_jgen_key(g, "pids");
    an_jgen_map_open(g);
    an_jgen_kv_i64(g, "limit", r->pids_limit);
    an_jgen_map_close(g);
  }
  if (r->has_blkio_weight || r->has_blkio_leaf_weight || r->blkio_weight_device ||
      r->blkio_throttle_read_bps || r->blkio_throttle_write_bps || r->blkio_throttle_read_iops ||
      r->blkio_throttle_write_iops) {
    an_jgen_key(g, "blockIO");
    an_jgen_map_open(g);
    opt_u64(g, "weight", r->has_blkio_weight, r->blkio_weight);
    opt_u64(g, "leafWeight", r->has_blkio_leaf_weight, r->blkio_leaf_weight);
    if (r->blkio_weight_device) {
      an_jgen_key(g, "weightDevice");
      an_jgen_array_open(g);
      for (size_t i = 0; i < r->n_blkio_weight_device; i++) {
        const struct an_spec_weight_device *w = &r->blkio_weight_device[i];
        an_jgen_map_open(g);
        an_jgen_kv_i64(g, "major", w->major);
        an_jgen_kv_i64(g, "minor", w->minor);
        opt_u64(g, "weight", w->has_weight, w->weight);
        opt_u64(g, "leafWeight", w->has_leaf_weight, w->leaf_weight);
        an_jgen_map_close(g);
      }
      an_jgen_array_close(g);
    }
    gen_throttle(g, "throttleReadBpsDevice", r->blkio_throttle_read_bps,
                 r->n_blkio_throttle_read_bps);
    gen_throttle(g, "throttleWriteBpsDevice", r->blkio_throttle_write_bps,
                 r->n_blkio_throttle_write_bps);
    gen_throttle(g, "throttleReadIOPSDevice", r->blkio_throttle_read_iops,
                 r->n_blkio_throttle_read_iops);
    gen_throttle(g, "throttleWriteIOPSDevice", r->blkio_throttle_write_iops,
                 r->n_blkio_throttle_write_iops);
    an_jgen_map_close(g);
  }
  if (r->hugepage_limits) {
    an_jgen_key(g, "hugepageLimits");
    an_jgen_array_open(g);
    for (size_t i = 0; i < r->n_hugepage_limits; i++) {
      an_jgen_map_open(g);
      opt_str(g, "pageSize", r->hugepage_limits[i].page_size);
      an_jgen_kv_u64(g, "limit", r->hugepage_limits[i].limit);
      an_jgen_map_close(g);
    }
    an_jgen_array_close(g);
  }
  kv_map(g, "unified", r->unified, r->n_unified);
  an_jgen_map_close(g);
}

/* An action and, for SCMP_ACT_ERRNO / SCMP_ACT_TRACE, its errno. */
static void gen_action(struct an_jgen *g, const char *action_key, const char *errno_key,
                       uint32_t action) {
  const char *name = an_seccomp_action_name(action);
  an_jgen_key(g, action_key);
  an_jgen_str(g, name ? name : "SCMP_ACT_KILL_PROCESS");   /* unreachable for parsed specs; fail closed */
  if (name && an_seccomp_action_takes_errno(action)) an_jgen_kv_u64(g, errno_key, action & 0xffffu);
}

static void gen_seccomp(struct an_jgen *g, const struct an_spec_seccomp *s) {
  an_jgen_key(g, "seccomp");
  an_jgen_map_open(g);
  gen_action(g, "defaultAction", "defaultErrnoRet", s->default_action);
  if (s->architectures) {
    an_jgen_key(g, "architectures");
    an_jgen_array_open(g);
    for (size_t i = 0; i < s->n_architectures; i++) {
      const char *name = an_seccomp_arch_name(s->architectures[i]);
      an_jgen_str(g, name ? name : "SCMP_ARCH_UNKNOWN");
    }
    an_jgen_array_close(g);
  }
  opt_strv(g, "flags", s->flags);
  opt_str(g, "listenerPath", s->listener_path);
  opt_str(g, "listenerMetadata", s->listener_metadata);
  if (s->syscalls) {
    an_jgen_key(g, "syscalls");
    an_jgen_array_open(g);
    for (size_t i = 0; i < s->n_syscalls; i++) {
      const struct an_spec_seccomp_syscall *sc = &s->syscalls[i];
      an_jgen_map_open(g);
      opt_strv(g, "names", sc->names);
      gen_action(g, "action", "errnoRet", sc->action);
      if (sc->args) {
        an_jgen_key(g, "args");
        an_jgen_array_open(g);
        for (size_t j = 0; j < sc->n_args; j++) {
          const char *op = an_seccomp_op_name(sc->args[j].op);
          an_jgen_map_open(g);
          an_jgen_kv_u64(g, "index", sc->args[j].index);
          an_jgen_kv_u64(g, "value", sc->args[j].value);
          an_jgen_kv_u64(g, "valueTwo", sc->args[j].value_two);
          an_jgen_kv_str(g, "op", op ? op : "SCMP_CMP_UNKNOWN");
          an_jgen_map_close(g);
        }
        an_jgen_array_close(g);
      }
      an_jgen_map_close(g);
    }
    an_jgen_array_close(g);
  }
  an_jgen_map_close(g);
}

static void gen_devices(struct an_jgen *g, const struct an_spec_linux *l) {
  if (!l->devices) return;
  an_jgen_key(g, "devices");
  an_jgen_array_open(g);
  for (size_t i = 0; i < l->n_devices; i++) {
    const struct an_spec_device *d = &l->devices[i];
    char type[2] = { d->type, 0 };
    an_jgen_map_open(g);
    an_jgen_kv_str(g, "type", type);
    opt_str(g, "path", d->path);
    if (d->type != 'p') {
      an_jgen_kv_i64(g, "major", d->major);
      an_jgen_kv_i64(g, "minor", d->minor);
    }
    opt_u64(g, "fileMode", d->has_file_mode, d->file_mode);
    opt_u64(g, "uid", d->has_uid, d->uid);
    opt_u64(g, "gid", d->has_gid, d->gid);
    an_jgen_map_close(g);
  }
  an_jgen_array_close(g);
}

static void gen_linux(struct an_jgen *g, const struct an_spec_linux *l) {
  an_jgen_key(g, "linux");
  an_jgen_map_open(g);
  if (l->namespaces) {
    an_jgen_key(g, "namespaces");
    an_jgen_array_open(g);
    for (size_t i = 0; i < l->n_namespaces; i++) {
      const char *type = an_namespace_type(l->namespaces[i].clone_flag);
      an_jgen_map_open(g);
      an_jgen_kv_str(g, "type", type ? type : "unknown");
      opt_str(g, "path", l->namespaces[i].path);
      an_jgen_map_close(g);
    }
    an_jgen_array_close(g);
  }
  id_mappings(g, "uidMappings", l->uid_mappings, l->n_uid_mappings);
  id_mappings(g, "gidMappings", l->gid_mappings, l->n_gid_mappings);
  kv_map(g, "sysctl", l->sysctl, l->n_sysctl);
  if (l->resources) gen_resources(g, l->resources);
  opt_str(g, "cgroupsPath", l->cgroups_path);
  if (l->seccomp) gen_seccomp(g, l->seccomp);
  opt_strv(g, "maskedPaths", l->masked_paths);
  opt_strv(g, "readonlyPaths", l->readonly_paths);
  opt_str(g, "rootfsPropagation", l->rootfs_propagation);
  opt_str(g, "mountLabel", l->mount_label);
  gen_devices(g, l);
  an_jgen_map_close(g);
}

int an_spec_to_json(const struct an_spec *spec, char **json, an_error_t *err) {
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, true) < 0) return an_error_set(err, ENOMEM, "serialize config");
  an_jgen_indent(&j, "\t");
  struct an_jgen *g = &j;
  an_jgen_map_open(g);
  opt_str(g, "ociVersion", spec->oci_version);
  if (spec->process) gen_process(g, spec->process);
  an_jgen_key(g, "root");
  an_jgen_map_open(g);
  opt_str(g, "path", spec->root.path);
  an_jgen_kv_bool(g, "readonly", spec->root.readonly);
  an_jgen_map_close(g);
  opt_str(g, "hostname", spec->hostname);
  opt_str(g, "domainname", spec->domainname);
  gen_mounts(g, spec);
  gen_hooks(g, &spec->hooks);
  kv_map(g, "annotations", spec->annotations, spec->n_annotations);
  gen_linux(g, &spec->linux);
  an_jgen_map_close(g);
  char *doc = NULL;
  size_t len = 0;
  int r = an_jgen_finish(&j, &doc, &len);
  if (r == -EINVAL) return an_error_set(err, EINVAL, "serialize config (yajl_gen status %d)", (int) j.st);
  if (r < 0) return an_error_set(err, -r, "serialize config");
  /* one more newline after yajl's own: config.json has always ended with a blank line */
  char *out = realloc(doc, len + 2);
  if (!out) { free(doc); return an_error_set(err, ENOMEM, "serialize config"); }
  out[len] = '\n';
  out[len + 1] = 0;
  *json = out;
  return 0;
}
