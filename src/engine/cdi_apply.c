/* engine/cdi_apply.c — resolve qualified CDI device names against a registry
 * and apply their containerEdits to an OCI runtime spec (agentnest/cdi.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "engine/cdi_internal.h"
#include "util/cleanup.h"

static int nomem(an_error_t *err) { return an_error_set(err, ENOMEM, "CDI"); }

static char **strv_dup(char *const *v) {
  size_t n = 0;
  while (v && v[n]) n++;
  char **out = calloc(n + 1, sizeof *out);
  for (size_t i = 0; out && i < n; i++)
    if (!(out[i] = strdup(v[i]))) {
      an_strv_free(out);
      return NULL;
    }
  return out;
}

static int apply_env(struct an_spec *spec, const struct an_cdi_edits *e, const char *file,
                     an_error_t *err) {
  if (!e->env || !e->env[0]) return 0;
  if (!spec->process) return an_error_set(err, EINVAL, "CDI spec %s: env edits need a process", file);
  char ***env = &spec->process->env;
  for (char **kv = e->env; *kv; kv++) {
    size_t klen = strcspn(*kv, "=") + 1, n = 0;
    char *copy = strdup(*kv);
    if (!copy) return nomem(err);
    bool replaced = false;
    for (; *env && (*env)[n]; n++)
      if (strncmp((*env)[n], *kv, klen) == 0) {
        free((*env)[n]);
        (*env)[n] = copy;
        replaced = true;
      }
    if (replaced) continue;
    char **grown = realloc(*env, (n + 2) * sizeof *grown);
    if (!grown) {
      free(copy);
      return nomem(err);
    }
    grown[n] = copy;
    grown[n + 1] = NULL;
    *env = grown;
  }
  return 0;
}

static int add_cgroup_rule(struct an_spec *spec, char type, int64_t major, int64_t minor,
                           const char *access, an_error_t *err) {
  if (!spec->linux.resources && !(spec->linux.resources = calloc(1, sizeof *spec->linux.resources)))
    return nomem(err);
  struct an_spec_resources *r = spec->linux.resources;
  struct an_spec_device_cgroup *grown = realloc(r->devices, (r->n_devices + 1) * sizeof *grown);
  if (!grown) return nomem(err);
  r->devices = grown;
  struct an_spec_device_cgroup *d = &r->devices[r->n_devices];
  *d = (struct an_spec_device_cgroup){.allow = true, .type = type, .major = major, .minor = minor};
  if (!(d->access = strdup(access))) return nomem(err);
  r->n_devices++;
  return 0;
}

static int apply_node(struct an_spec *spec, const struct an_cdi_node *n, const char *file,
                      an_error_t *err) {
  const char *host = n->host_path ? n->host_path : n->path;
  struct stat st;
  bool have_st = stat(host, &st) == 0;
  int stat_errno = errno;
  char type = n->type;
  if (!type) {
    if (!have_st)
      return an_error_set(err, stat_errno, "CDI spec %s: device node %s: stat host node %s", file,
                          n->path, host);
    if (S_ISCHR(st.st_mode)) type = 'c';
    else if (S_ISBLK(st.st_mode)) type = 'b';
    else
      return an_error_set(err, EINVAL, "CDI spec %s: device node %s: host node %s is not a "
                          "character or block device", file, n->path, host);
  }
  int64_t major = n->major, minor = n->minor;
  if (type != 'p' && (!n->has_major || !n->has_minor)) {
    if (!have_st)
      return an_error_set(err, stat_errno, "CDI spec %s: device node %s: no major/minor given and "
                          "stat host node %s failed", file, n->path, host);
    if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
      return an_error_set(err, EINVAL, "CDI spec %s: device node %s: host node %s is not a device",
                          file, n->path, host);
    if (!n->has_major) major = major(st.st_rdev);
    if (!n->has_minor) minor = minor(st.st_rdev);
  }
  struct an_spec_linux *l = &spec->linux;
  for (size_t i = 0; i < l->n_devices; i++)
    if (strcmp(l->devices[i].path, n->path) == 0) {
      if (l->devices[i].type == type && l->devices[i].major == major && l->devices[i].minor == minor)
        return 0;   /* the same node from another device of the spec */
      return an_error_set(err, EINVAL, "CDI spec %s: device node %s: conflicts with %c %lld:%lld",
                          file, n->path, l->devices[i].type, (long long) l->devices[i].major,
                          (long long) l->devices[i].minor);
    }
  struct an_spec_device *grown = realloc(l->devices, (l->n_devices + 1) * sizeof *grown);
  if (!grown) return nomem(err);
  l->devices = grown;
  struct an_spec_device *d = &l->devices[l->n_devices];
  *d = (struct an_spec_device){.type = type, .major = major, .minor = minor,
                               .has_file_mode = true,
                               .file_mode = n->has_file_mode ? n->file_mode
                                            : have_st ? (st.st_mode & 07777) : 0666,
                               .has_uid = n->has_uid, .uid = n->uid,
                               .has_gid = n->has_gid, .gid = n->gid};
  if (!(d->path = strdup(n->path)) || (n->host_path && !(d->host_path = strdup(n->host_path)))) {
    free(d->path);
    return nomem(err);
  }
  l->n_devices++;
  if (type == 'p') return 0;
  return add_cgroup_rule(spec, type, major, minor, n->permissions ? n->permissions : "rwm", err);
}

/* Options as written, less what would make the mount writable or honour
 * device nodes and setuid bits, plus bind (when absent), ro, nosuid, nodev. */
static char **mount_options(const struct an_cdi_mount *m) {
  static const char *const dropped[] = {"rw", "suid", "dev", "ro", "nosuid", "nodev", NULL};
  size_t n = 0;
  while (m->options && m->options[n]) n++;
  char **out = calloc(n + 5, sizeof *out);
  if (!out) return NULL;
  size_t k = 0;
  bool bind = false;
  for (size_t i = 0; i < n; i++) {
    bool drop = false;
    for (size_t j = 0; dropped[j]; j++) drop |= strcmp(m->options[i], dropped[j]) == 0;
    if (drop) continue;
    bind |= strcmp(m->options[i], "bind") == 0 || strcmp(m->options[i], "rbind") == 0;
    if (!(out[k++] = strdup(m->options[i]))) goto fail;
  }
  const char *forced[] = {bind ? NULL : (m->type && strcmp(m->type, "rbind") == 0 ? "rbind" : "bind"),
                          "ro", "nosuid", "nodev"};
  for (size_t i = 0; i < 4; i++)
    if (forced[i] && !(out[k++] = strdup(forced[i]))) goto fail;
  return out;
fail:
  an_strv_free(out);
  return NULL;
}

static int apply_mount(struct an_spec *spec, const struct an_cdi_mount *m, const char *file,
                       an_error_t *err) {
  for (size_t i = 0; i < spec->n_mounts; i++)
    if (strcmp(spec->mounts[i].destination, m->container_path) == 0) {
      if (spec->mounts[i].source && strcmp(spec->mounts[i].source, m->host_path) == 0) return 0;
      return an_error_set(err, EINVAL, "CDI spec %s: mount %s: conflicts with a mount of %s there",
                          file, m->container_path, spec->mounts[i].source ? spec->mounts[i].source : "?");
    }
  struct an_spec_mount *grown = realloc(spec->mounts, (spec->n_mounts + 1) * sizeof *grown);
  if (!grown) return nomem(err);
  spec->mounts = grown;
  struct an_spec_mount *sm = &spec->mounts[spec->n_mounts];
  *sm = (struct an_spec_mount){0};
  if (!(sm->destination = strdup(m->container_path)) || !(sm->source = strdup(m->host_path)) ||
      !(sm->type = strdup("bind")) || !(sm->options = mount_options(m))) {
    free(sm->destination);
    free(sm->source);
    free(sm->type);
    return nomem(err);
  }
  spec->n_mounts++;
  return 0;
}

static int apply_hook(struct an_spec *spec, const struct an_cdi_hook *h, const char *file,
                      unsigned flags, an_error_t *err) {
  if (!(flags & AN_CDI_ALLOW_HOOKS))
    return an_error_set(err, EPERM, "CDI spec %s: %s hook %s: hooks run on the host as root and "
                        "are refused without --cdi-allow-hooks", file, h->hook_name, h->hook.path);
  struct { const char *name; struct an_spec_hook **list; size_t *n; } slots[] = {
    {"prestart", &spec->hooks.prestart, &spec->hooks.n_prestart},
    {"createRuntime", &spec->hooks.create_runtime, &spec->hooks.n_create_runtime},
    {"createContainer", &spec->hooks.create_container, &spec->hooks.n_create_container},
    {"startContainer", &spec->hooks.start_container, &spec->hooks.n_start_container},
    {"poststart", &spec->hooks.poststart, &spec->hooks.n_poststart},
    {"poststop", &spec->hooks.poststop, &spec->hooks.n_poststop},
  };
  for (size_t i = 0; i < sizeof slots / sizeof *slots; i++) {
    if (strcmp(slots[i].name, h->hook_name)) continue;
    struct an_spec_hook *grown = realloc(*slots[i].list, (*slots[i].n + 1) * sizeof *grown);
    if (!grown) return nomem(err);
    *slots[i].list = grown;
    struct an_spec_hook *d = &grown[*slots[i].n];
    *d = (struct an_spec_hook){.has_timeout = h->hook.has_timeout, .timeout = h->hook.timeout};
    d->path = strdup(h->hook.path);
    d->args = h->hook.args ? strv_dup(h->hook.args) : NULL;
    d->env = h->hook.env ? strv_dup(h->hook.env) : NULL;
    (*slots[i].n)++;   /* counted first, so an_spec_free releases a partial one */
    if (!d->path || (h->hook.args && !d->args) || (h->hook.env && !d->env)) return nomem(err);
    return 0;
  }
  return an_error_set(err, EINVAL, "CDI spec %s: unknown hook %s", file, h->hook_name);
}

static int apply_edits(struct an_spec *spec, const struct an_cdi_edits *e, const char *file,
                       unsigned flags, an_error_t *err) {
  if (e->unsupported)
    return an_error_set(err, EOPNOTSUPP, "CDI spec %s: containerEdits.%s is not supported", file,
                        e->unsupported);
  int r = 0;
  for (size_t i = 0; r == 0 && i < e->n_hooks; i++) r = apply_hook(spec, &e->hooks[i], file, flags, err);
  if (r == 0) r = apply_env(spec, e, file, err);
  for (size_t i = 0; r == 0 && i < e->n_nodes; i++) r = apply_node(spec, &e->nodes[i], file, err);
  for (size_t i = 0; r == 0 && i < e->n_mounts; i++) r = apply_mount(spec, &e->mounts[i], file, err);
  return r;
}

/* The highest-priority spec defining kind/name (NULL: none); *kind_seen
 * tells whether any spec has that kind. */
static const struct an_cdi_spec *find(const struct an_cdi_registry *reg, const char *kind,
                                      const char *name, const struct an_cdi_device **dev,
                                      bool *kind_seen) {
  const struct an_cdi_spec *best = NULL;
  for (size_t i = 0; i < reg->n_specs; i++) {
    const struct an_cdi_spec *s = &reg->specs[i];
    if (strcmp(s->kind, kind)) continue;
    *kind_seen = true;
    for (size_t j = 0; j < s->n_devices; j++)
      if (strcmp(s->devices[j].name, name) == 0 && (!best || s->dir_index > best->dir_index)) {
        best = s;
        *dev = &s->devices[j];
      }
  }
  return best;
}

static int not_found(const struct an_cdi_registry *reg, const char *kind, const char *qname,
                     bool kind_seen, an_error_t *err) {
  bool nvidia = strncmp(kind, "nvidia.com/", 11) == 0;
  if (!kind_seen)
    return an_error_set(err, ENOENT, "no CDI spec defines %s in %s%s", kind,
                        reg->dirs_text[0] ? reg->dirs_text : "(no directories)",
                        nvidia ? ": install the NVIDIA Container Toolkit and run nvidia-ctk cdi generate" : "");
  return an_error_set(err, ENOENT, "CDI device %s: no spec in %s defines it (see `%s`)", qname,
                      reg->dirs_text, nvidia ? "nvidia-ctk cdi list" : "the specs' devices[].name");
}

int an_cdi_apply(const struct an_cdi_registry *reg, struct an_spec *spec,
                 const char *const *names, unsigned flags, an_error_t *err) {
  size_t n_names = 0;
  while (names && names[n_names]) n_names++;
  if (!n_names) return 0;
  bool *used = calloc(reg->n_specs + 1, sizeof *used);
  if (!used) return nomem(err);
  int r = 0;
  for (size_t i = 0; r == 0 && i < n_names; i++) {
    const char *eq = strchr(names[i], '=');
    const char *slash = strchr(names[i], '/');
    if (!eq || !slash || slash > eq || !eq[1] || strchr(eq + 1, '=')) {
      r = an_error_set(err, EINVAL, "CDI device \"%s\": expected vendor/class=name "
                       "(\"nvidia.com/gpu=0\")", names[i]);
      break;
    }
    cleanup_free char *kind = strndup(names[i], (size_t) (eq - names[i]));
    if (!kind) { r = nomem(err); break; }
    const char *name = eq + 1;
    const struct an_cdi_device *dev = NULL;
    bool kind_seen = false;
    const struct an_cdi_spec *s = find(reg, kind, name, &dev, &kind_seen);
    if (!s && strcmp(name, "all") == 0 && kind_seen) {
      /* every device of the kind, each from its highest-priority spec */
      for (size_t k = 0; r == 0 && k < reg->n_specs; k++) {
        const struct an_cdi_spec *ks = &reg->specs[k];
        if (strcmp(ks->kind, kind)) continue;
        for (size_t j = 0; r == 0 && j < ks->n_devices; j++) {
          const struct an_cdi_device *d2 = NULL;
          bool seen = false;
          if (find(reg, kind, ks->devices[j].name, &d2, &seen) != ks) continue;
          r = apply_edits(spec, &d2->edits, ks->file, flags, err);
          used[k] = true;
        }
      }
      continue;
    }
    if (!s) {
      r = not_found(reg, kind, names[i], kind_seen, err);
      break;
    }
    r = apply_edits(spec, &dev->edits, s->file, flags, err);
    used[s - reg->specs] = true;
  }
  for (size_t k = 0; r == 0 && k < reg->n_specs; k++)
    if (used[k]) r = apply_edits(spec, &reg->specs[k].edits, reg->specs[k].file, flags, err);
  free(used);
  return r;
}

int an_cdi_annotation_devices(const struct an_spec *spec, char ***names, an_error_t *err) {
  *names = NULL;
  size_t n = 0;
  char **out = NULL;
  for (size_t i = 0; i < spec->n_annotations; i++) {
    const struct an_spec_key_value *kv = &spec->annotations[i];
    if (!kv->key || strncmp(kv->key, AN_CDI_ANNOTATION_PREFIX, strlen(AN_CDI_ANNOTATION_PREFIX)))
      continue;
    const char *p = kv->value ? kv->value : "";
    for (;;) {
      size_t len = strcspn(p, ",");
      if (len == 0) {
        an_strv_free(out);
        return an_error_set(err, EINVAL, "annotation %s: empty CDI device name in \"%s\"", kv->key,
                            kv->value ? kv->value : "");
      }
      char **grown = realloc(out, (n + 2) * sizeof *grown);
      if (!grown || !(grown[n] = strndup(p, len))) {
        an_strv_free(grown ? grown : out);
        return nomem(err);
      }
      grown[++n] = NULL;
      out = grown;
      if (!p[len]) break;
      p += len + 1;
    }
  }
  *names = out;
  return 0;
}

int an_cdi_apply_from_dirs(const char *const *dirs, struct an_spec *spec,
                           const char *const *names, unsigned flags, an_error_t *err) {
  if (!names || !names[0]) return 0;
  struct an_cdi_registry *reg = NULL;
  int r = an_cdi_registry_load(dirs, &reg, err);
  if (r < 0) return r;
  r = an_cdi_apply(reg, spec, names, flags, err);
  an_cdi_registry_free(reg);
  return r;
}
