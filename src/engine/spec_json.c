/* engine/spec_json.c — an_spec_to_json: write a spec back out as
 * config.json (yajl_gen, tab-indented like `runc spec`).  Every field that
 * an_spec_parse reads is written, so parse -> to_json -> parse is lossless
 * for the in-memory spec.  Standard: runtime-spec config.md, config-linux.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include "agentnest/spec.h"
#include "engine/spec_names.h"

/* A generator with a sticky status, so that emitters need no error checks. */
struct gen {
  yajl_gen g;
  yajl_gen_status st;
};

static void chk(struct gen *g, yajl_gen_status s) { if (g->st == yajl_gen_status_ok) g->st = s; }

static void str(struct gen *g, const char *s) {
  chk(g, yajl_gen_string(g->g, (const unsigned char *) s, strlen(s)));
}
static void key(struct gen *g, const char *k) { str(g, k); }
static void u64(struct gen *g, uint64_t v) {
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%" PRIu64, v);
  chk(g, yajl_gen_number(g->g, buf, (size_t) n));
}
static void i64(struct gen *g, int64_t v) {
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%" PRId64, v);
  chk(g, yajl_gen_number(g->g, buf, (size_t) n));
}
static void boolean(struct gen *g, bool b) { chk(g, yajl_gen_bool(g->g, b)); }
static void map_open(struct gen *g) { chk(g, yajl_gen_map_open(g->g)); }
static void map_close(struct gen *g) { chk(g, yajl_gen_map_close(g->g)); }
static void arr_open(struct gen *g) { chk(g, yajl_gen_array_open(g->g)); }
static void arr_close(struct gen *g) { chk(g, yajl_gen_array_close(g->g)); }

/* Optional members: written only when set. */
static void kv_str(struct gen *g, const char *k, const char *v) {
  if (v) { key(g, k); str(g, v); }
}
static void kv_strv(struct gen *g, const char *k, char *const *v) {
  if (!v) return;
  key(g, k);
  arr_open(g);
  for (; *v; v++) str(g, *v);
  arr_close(g);
}
static void kv_u64(struct gen *g, const char *k, bool has, uint64_t v) {
  if (has) { key(g, k); u64(g, v); }
}
static void kv_i64(struct gen *g, const char *k, bool has, int64_t v) {
  if (has) { key(g, k); i64(g, v); }
}
static void kv_map(struct gen *g, const char *k, const struct an_spec_key_value *kv, size_t n) {
  if (!kv) return;
  key(g, k);
  map_open(g);
  for (size_t i = 0; i < n; i++) { key(g, kv[i].key); str(g, kv[i].value); }
  map_close(g);
}

static void id_mappings(struct gen *g, const char *k, const struct an_spec_id_mapping *m,
                        size_t n) {
  if (!m) return;
  key(g, k);
  arr_open(g);
  for (size_t i = 0; i < n; i++) {
    map_open(g);
    key(g, "containerID"); u64(g, m[i].container_id);
    key(g, "hostID"); u64(g, m[i].host_id);
    key(g, "size"); u64(g, m[i].size);
    map_close(g);
  }
  arr_close(g);
}

static void gen_process(struct gen *g, const struct an_spec_process *p) {
  key(g, "process");
  map_open(g);
  key(g, "terminal"); boolean(g, p->terminal);
  if (p->has_console_size) {
    key(g, "consoleSize");
    map_open(g);
    key(g, "height"); u64(g, p->console_height);
    key(g, "width"); u64(g, p->console_width);
    map_close(g);
  }
  key(g, "user");
  map_open(g);
  key(g, "uid"); u64(g, p->user.uid);
  key(g, "gid"); u64(g, p->user.gid);
  kv_u64(g, "umask", p->user.has_umask, p->user.umask);
  if (p->user.additional_gids) {
    key(g, "additionalGids");
    arr_open(g);
    for (size_t i = 0; i < p->user.n_additional_gids; i++) u64(g, p->user.additional_gids[i]);
    arr_close(g);
  }
  kv_str(g, "username", p->user.username);
  map_close(g);
  kv_strv(g, "args", p->args);
  kv_strv(g, "env", p->env);
  kv_str(g, "cwd", p->cwd);
  if (p->capabilities) {
    key(g, "capabilities");
    map_open(g);
    kv_strv(g, "bounding", p->capabilities->bounding);
    kv_strv(g, "effective", p->capabilities->effective);
    kv_strv(g, "inheritable", p->capabilities->inheritable);
    kv_strv(g, "permitted", p->capabilities->permitted);
    kv_strv(g, "ambient", p->capabilities->ambient);
    map_close(g);
  }
  if (p->rlimits) {
    key(g, "rlimits");
    arr_open(g);
    for (size_t i = 0; i < p->n_rlimits; i++) {
      const char *name = an_rlimit_name(p->rlimits[i].type);
      map_open(g);
      key(g, "type"); str(g, name ? name : "RLIMIT_UNKNOWN");
      key(g, "hard"); u64(g, p->rlimits[i].hard);
      key(g, "soft"); u64(g, p->rlimits[i].soft);
      map_close(g);
    }
    arr_close(g);
  }
  key(g, "noNewPrivileges"); boolean(g, p->no_new_privileges);
  kv_i64(g, "oomScoreAdj", p->has_oom_score_adj, p->oom_score_adj);
  kv_str(g, "apparmorProfile", p->apparmor_profile);
  kv_str(g, "selinuxLabel", p->selinux_label);
  map_close(g);
}

static void gen_mounts(struct gen *g, const struct an_spec *s) {
  if (!s->mounts) return;
  key(g, "mounts");
  arr_open(g);
  for (size_t i = 0; i < s->n_mounts; i++) {
    const struct an_spec_mount *m = &s->mounts[i];
    map_open(g);
    kv_str(g, "destination", m->destination);
    kv_str(g, "type", m->type);
    kv_str(g, "source", m->source);
    kv_strv(g, "options", m->options);
    id_mappings(g, "uidMappings", m->uid_mappings, m->n_uid_mappings);
    id_mappings(g, "gidMappings", m->gid_mappings, m->n_gid_mappings);
    map_close(g);
  }
  arr_close(g);
}

static void gen_hook_list(struct gen *g, const char *k, const struct an_spec_hook *h, size_t n) {
  if (!h) return;
  key(g, k);
  arr_open(g);
  for (size_t i = 0; i < n; i++) {
    map_open(g);
    kv_str(g, "path", h[i].path);
    kv_strv(g, "args", h[i].args);
    kv_strv(g, "env", h[i].env);
    kv_i64(g, "timeout", h[i].has_timeout, h[i].timeout);
    map_close(g);
  }
  arr_close(g);
}

static void gen_hooks(struct gen *g, const struct an_spec_hooks *h) {
  if (!h->prestart && !h->create_runtime && !h->create_container && !h->start_container &&
      !h->poststart && !h->poststop)
    return;
  key(g, "hooks");
  map_open(g);
  gen_hook_list(g, "prestart", h->prestart, h->n_prestart);
  gen_hook_list(g, "createRuntime", h->create_runtime, h->n_create_runtime);
  gen_hook_list(g, "createContainer", h->create_container, h->n_create_container);
  gen_hook_list(g, "startContainer", h->start_container, h->n_start_container);
  gen_hook_list(g, "poststart", h->poststart, h->n_poststart);
  gen_hook_list(g, "poststop", h->poststop, h->n_poststop);
  map_close(g);
}

static void gen_throttle(struct gen *g, const char *k, const struct an_spec_throttle_device *t,
                         size_t n) {
  if (!t) return;
  key(g, k);
  arr_open(g);
  for (size_t i = 0; i < n; i++) {
    map_open(g);
    key(g, "major"); i64(g, t[i].major);
    key(g, "minor"); i64(g, t[i].minor);
    key(g, "rate"); u64(g, t[i].rate);
    map_close(g);
  }
  arr_close(g);
}

static void gen_resources(struct gen *g, const struct an_spec_resources *r) {
  key(g, "resources");
  map_open(g);
  if (r->devices) {
    key(g, "devices");
    arr_open(g);
    for (size_t i = 0; i < r->n_devices; i++) {
      const struct an_spec_device_cgroup *d = &r->devices[i];
      char type[2] = { d->type ? d->type : 'a', 0 };
      map_open(g);
      key(g, "allow"); boolean(g, d->allow);
      key(g, "type"); str(g, type);
      kv_i64(g, "major", d->major >= 0, d->major);
      kv_i64(g, "minor", d->minor >= 0, d->minor);
      kv_str(g, "access", d->access);
      map_close(g);
    }
    arr_close(g);
  }
  if (r->has_memory_limit || r->has_memory_reservation || r->has_memory_swap ||
      r->has_memory_kernel || r->has_memory_swappiness || r->has_disable_oom_killer) {
    key(g, "memory");
    map_open(g);
    kv_i64(g, "limit", r->has_memory_limit, r->memory_limit);
    kv_i64(g, "reservation", r->has_memory_reservation, r->memory_reservation);
    kv_i64(g, "swap", r->has_memory_swap, r->memory_swap);
    kv_i64(g, "kernel", r->has_memory_kernel, r->memory_kernel);
    kv_u64(g, "swappiness", r->has_memory_swappiness, r->memory_swappiness);
    if (r->has_disable_oom_killer) { key(g, "disableOOMKiller"); boolean(g, r->disable_oom_killer); }
    map_close(g);
  }
  if (r->has_cpu_shares || r->has_cpu_quota || r->has_cpu_period || r->has_cpu_realtime_runtime ||
      r->has_cpu_realtime_period || r->cpu_cpus || r->cpu_mems || r->has_cpu_idle) {
    key(g, "cpu");
    map_open(g);
    kv_u64(g, "shares", r->has_cpu_shares, r->cpu_shares);
    kv_i64(g, "quota", r->has_cpu_quota, r->cpu_quota);
    kv_u64(g, "period", r->has_cpu_period, r->cpu_period);
    kv_i64(g, "realtimeRuntime", r->has_cpu_realtime_runtime, r->cpu_realtime_runtime);
    kv_u64(g, "realtimePeriod", r->has_cpu_realtime_period, r->cpu_realtime_period);
    kv_str(g, "cpus", r->cpu_cpus);
    kv_str(g, "mems", r->cpu_mems);
    kv_i64(g, "idle", r->has_cpu_idle, r->cpu_idle);
    map_close(g);
  }
  if (r->has_pids_limit) {
    key(g, "pids");
    map_open(g);
    key(g, "limit"); i64(g, r->pids_limit);
    map_close(g);
  }
  if (r->has_blkio_weight || r->has_blkio_leaf_weight || r->blkio_weight_device ||
      r->blkio_throttle_read_bps || r->blkio_throttle_write_bps || r->blkio_throttle_read_iops ||
      r->blkio_throttle_write_iops) {
    key(g, "blockIO");
    map_open(g);
    kv_u64(g, "weight", r->has_blkio_weight, r->blkio_weight);
    kv_u64(g, "leafWeight", r->has_blkio_leaf_weight, r->blkio_leaf_weight);
    if (r->blkio_weight_device) {
      key(g, "weightDevice");
      arr_open(g);
      for (size_t i = 0; i < r->n_blkio_weight_device; i++) {
        const struct an_spec_weight_device *w = &r->blkio_weight_device[i];
        map_open(g);
        key(g, "major"); i64(g, w->major);
        key(g, "minor"); i64(g, w->minor);
        kv_u64(g, "weight", w->has_weight, w->weight);
        kv_u64(g, "leafWeight", w->has_leaf_weight, w->leaf_weight);
        map_close(g);
      }
      arr_close(g);
    }
    gen_throttle(g, "throttleReadBpsDevice", r->blkio_throttle_read_bps,
                 r->n_blkio_throttle_read_bps);
    gen_throttle(g, "throttleWriteBpsDevice", r->blkio_throttle_write_bps,
                 r->n_blkio_throttle_write_bps);
    gen_throttle(g, "throttleReadIOPSDevice", r->blkio_throttle_read_iops,
                 r->n_blkio_throttle_read_iops);
    gen_throttle(g, "throttleWriteIOPSDevice", r->blkio_throttle_write_iops,
                 r->n_blkio_throttle_write_iops);
    map_close(g);
  }
  if (r->hugepage_limits) {
    key(g, "hugepageLimits");
    arr_open(g);
    for (size_t i = 0; i < r->n_hugepage_limits; i++) {
      map_open(g);
      kv_str(g, "pageSize", r->hugepage_limits[i].page_size);
      key(g, "limit"); u64(g, r->hugepage_limits[i].limit);
      map_close(g);
    }
    arr_close(g);
  }
  kv_map(g, "unified", r->unified, r->n_unified);
  map_close(g);
}

/* An action and, for SCMP_ACT_ERRNO / SCMP_ACT_TRACE, its errno. */
static void gen_action(struct gen *g, const char *action_key, const char *errno_key,
                       uint32_t action) {
  const char *name = an_seccomp_action_name(action);
  key(g, action_key);
  str(g, name ? name : "SCMP_ACT_KILL_PROCESS");   /* unreachable for parsed specs; fail closed */
  if (name && an_seccomp_action_takes_errno(action)) { key(g, errno_key); u64(g, action & 0xffffu); }
}

static void gen_seccomp(struct gen *g, const struct an_spec_seccomp *s) {
  key(g, "seccomp");
  map_open(g);
  gen_action(g, "defaultAction", "defaultErrnoRet", s->default_action);
  if (s->architectures) {
    key(g, "architectures");
    arr_open(g);
    for (size_t i = 0; i < s->n_architectures; i++) {
      const char *name = an_seccomp_arch_name(s->architectures[i]);
      str(g, name ? name : "SCMP_ARCH_UNKNOWN");
    }
    arr_close(g);
  }
  kv_strv(g, "flags", s->flags);
  kv_str(g, "listenerPath", s->listener_path);
  kv_str(g, "listenerMetadata", s->listener_metadata);
  if (s->syscalls) {
    key(g, "syscalls");
    arr_open(g);
    for (size_t i = 0; i < s->n_syscalls; i++) {
      const struct an_spec_seccomp_syscall *sc = &s->syscalls[i];
      map_open(g);
      kv_strv(g, "names", sc->names);
      gen_action(g, "action", "errnoRet", sc->action);
      if (sc->args) {
        key(g, "args");
        arr_open(g);
        for (size_t j = 0; j < sc->n_args; j++) {
          const char *op = an_seccomp_op_name(sc->args[j].op);
          map_open(g);
          key(g, "index"); u64(g, sc->args[j].index);
          key(g, "value"); u64(g, sc->args[j].value);
          key(g, "valueTwo"); u64(g, sc->args[j].value_two);
          key(g, "op"); str(g, op ? op : "SCMP_CMP_UNKNOWN");
          map_close(g);
        }
        arr_close(g);
      }
      map_close(g);
    }
    arr_close(g);
  }
  map_close(g);
}

static void gen_devices(struct gen *g, const struct an_spec_linux *l) {
  if (!l->devices) return;
  key(g, "devices");
  arr_open(g);
  for (size_t i = 0; i < l->n_devices; i++) {
    const struct an_spec_device *d = &l->devices[i];
    char type[2] = { d->type, 0 };
    map_open(g);
    key(g, "type"); str(g, type);
    kv_str(g, "path", d->path);
    if (d->type != 'p') {
      key(g, "major"); i64(g, d->major);
      key(g, "minor"); i64(g, d->minor);
    }
    kv_u64(g, "fileMode", d->has_file_mode, d->file_mode);
    kv_u64(g, "uid", d->has_uid, d->uid);
    kv_u64(g, "gid", d->has_gid, d->gid);
    map_close(g);
  }
  arr_close(g);
}

static void gen_linux(struct gen *g, const struct an_spec_linux *l) {
  key(g, "linux");
  map_open(g);
  if (l->namespaces) {
    key(g, "namespaces");
    arr_open(g);
    for (size_t i = 0; i < l->n_namespaces; i++) {
      const char *type = an_namespace_type(l->namespaces[i].clone_flag);
      map_open(g);
      key(g, "type"); str(g, type ? type : "unknown");
      kv_str(g, "path", l->namespaces[i].path);
      map_close(g);
    }
    arr_close(g);
  }
  id_mappings(g, "uidMappings", l->uid_mappings, l->n_uid_mappings);
  id_mappings(g, "gidMappings", l->gid_mappings, l->n_gid_mappings);
  kv_map(g, "sysctl", l->sysctl, l->n_sysctl);
  if (l->resources) gen_resources(g, l->resources);
  kv_str(g, "cgroupsPath", l->cgroups_path);
  if (l->seccomp) gen_seccomp(g, l->seccomp);
  kv_strv(g, "maskedPaths", l->masked_paths);
  kv_strv(g, "readonlyPaths", l->readonly_paths);
  kv_str(g, "rootfsPropagation", l->rootfs_propagation);
  kv_str(g, "mountLabel", l->mount_label);
  gen_devices(g, l);
  map_close(g);
}

int an_spec_to_json(const struct an_spec *spec, char **json, an_error_t *err) {
  struct gen g = { yajl_gen_alloc(NULL), yajl_gen_status_ok };
  if (!g.g) return an_error_set(err, ENOMEM, "serialize config");
  yajl_gen_config(g.g, yajl_gen_beautify, 1);
  yajl_gen_config(g.g, yajl_gen_indent_string, "\t");
  map_open(&g);
  kv_str(&g, "ociVersion", spec->oci_version);
  if (spec->process) gen_process(&g, spec->process);
  key(&g, "root");
  map_open(&g);
  kv_str(&g, "path", spec->root.path);
  key(&g, "readonly"); boolean(&g, spec->root.readonly);
  map_close(&g);
  kv_str(&g, "hostname", spec->hostname);
  kv_str(&g, "domainname", spec->domainname);
  gen_mounts(&g, spec);
  gen_hooks(&g, &spec->hooks);
  kv_map(&g, "annotations", spec->annotations, spec->n_annotations);
  gen_linux(&g, &spec->linux);
  map_close(&g);
  const unsigned char *buf = NULL;
  size_t len = 0;
  if (g.st == yajl_gen_status_ok) g.st = yajl_gen_get_buf(g.g, &buf, &len);
  if (g.st != yajl_gen_status_ok) {
    yajl_gen_free(g.g);
    return an_error_set(err, g.st == yajl_gen_in_error_state ? ENOMEM : EINVAL,
                        "serialize config (yajl_gen status %d)", (int) g.st);
  }
  char *out = malloc(len + 2);
  if (!out) { yajl_gen_free(g.g); return an_error_set(err, ENOMEM, "serialize config"); }
  memcpy(out, buf, len);
  out[len] = '\n';
  out[len + 1] = 0;
  yajl_gen_free(g.g);
  *json = out;
  return 0;
}
