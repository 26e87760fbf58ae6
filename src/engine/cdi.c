/* engine/cdi.c — CDI spec files: find them, check who may have written them,
 * parse them (JSON via util/json_tree, YAML via cdi_yaml.c) into
 * cdi_internal.h's structs.  Applying them is cdi_apply.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "engine/cdi_internal.h"
#include "util/cleanup.h"
#include "util/json_tree.h"

const char *const an_cdi_default_dirs[] = {"/etc/cdi", "/var/run/cdi", NULL};

static const char *const versions[] = {"0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", NULL};

static bool name_char(char c, const char *extra) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c && strchr(extra, c));
}

/* SPEC.md "kind": vendor (a domain name) "/" class. */
static bool valid_kind(const char *k) {
  const char *slash = strchr(k, '/');
  if (!slash || slash == k || !slash[1] || strchr(slash + 1, '/')) return false;
  for (const char *p = k; p < slash; p++)
    if (!name_char(*p, ".-") || (p == k && !name_char(*p, ""))) return false;
  for (const char *p = slash + 1; *p; p++)
    if (!name_char(*p, "_.-") || (p == slash + 1 && !name_char(*p, ""))) return false;
  return true;
}

static bool valid_device_name(const char *n) {
  if (!*n || !name_char(*n, "")) return false;
  for (const char *p = n; *p; p++)
    if (!name_char(*p, "_.:-")) return false;
  return true;
}

static int get_abs_path(yajl_val v, const char *path, char **out, an_error_t *err) {
  int r = an_json_get_string(v, path, out, err);
  if (r < 0) return r;
  if ((*out)[0] != '/') return an_json_error(err, path, "must be an absolute path");
  return 0;
}

static int parse_node(yajl_val v, const char *path, struct an_cdi_node *n, an_error_t *err) {
  char p[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  yajl_val x;
  if (r < 0) return r;
  if (!(x = an_json_member(v, "path"))) return an_json_error(err, path, "path is required");
  if ((r = get_abs_path(x, an_json_path_key(p, path, "path"), &n->path, err)) < 0) return r;
  if ((x = an_json_member(v, "hostPath")) &&
      (r = get_abs_path(x, an_json_path_key(p, path, "hostPath"), &n->host_path, err)) < 0)
    return r;
  if ((x = an_json_member(v, "type"))) {
    cleanup_free char *t = NULL;
    if ((r = an_json_get_string(x, an_json_path_key(p, path, "type"), &t, err)) < 0) return r;
    if (strcmp(t, "c") && strcmp(t, "u") && strcmp(t, "b") && strcmp(t, "p"))
      return an_json_error(err, p, "\"%s\": expected c, u, b or p", t);
    n->type = t[0] == 'u' ? 'c' : t[0];
  }
  uint64_t u;
  if ((x = an_json_member(v, "major"))) {
    if ((r = an_json_get_i64(x, an_json_path_key(p, path, "major"), 0, 4095, &n->major, err)) < 0)
      return r;
    n->has_major = true;
  }
  if ((x = an_json_member(v, "minor"))) {
    if ((r = an_json_get_i64(x, an_json_path_key(p, path, "minor"), 0, 1048575, &n->minor, err)) < 0)
      return r;
    n->has_minor = true;
  }
  if ((x = an_json_member(v, "fileMode"))) {
    if ((r = an_json_get_u64(x, an_json_path_key(p, path, "fileMode"), 07777, &u, err)) < 0) return r;
    n->has_file_mode = true;
    n->file_mode = (mode_t) u;
  }
  if ((x = an_json_member(v, "permissions"))) {
    if ((r = an_json_get_string(x, an_json_path_key(p, path, "permissions"), &n->permissions, err)) < 0)
      return r;
    if (!*n->permissions || strspn(n->permissions, "rwm") != strlen(n->permissions))
      return an_json_error(err, p, "\"%s\": expected a subset of \"rwm\"", n->permissions);
  }
  if ((x = an_json_member(v, "uid"))) {
    if ((r = an_json_get_u64(x, an_json_path_key(p, path, "uid"), UINT32_MAX - 1, &u, err)) < 0) return r;
    n->has_uid = true;
    n->uid = (uid_t) u;
  }
  if ((x = an_json_member(v, "gid"))) {
    if ((r = an_json_get_u64(x, an_json_path_key(p, path, "gid"), UINT32_MAX - 1, &u, err)) < 0) return r;
    n->has_gid = true;
    n->gid = (gid_t) u;
  }
  return 0;
}

static int parse_mount(yajl_val v, const char *path, struct an_cdi_mount *m, an_error_t *err) {
  char p[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  yajl_val x;
  if (r < 0) return r;
  if (!(x = an_json_member(v, "hostPath"))) return an_json_error(err, path, "hostPath is required");
  if ((r = get_abs_path(x, an_json_path_key(p, path, "hostPath"), &m->host_path, err)) < 0) return r;
  if (!(x = an_json_member(v, "containerPath")))
    return an_json_error(err, path, "containerPath is required");
  if ((r = get_abs_path(x, an_json_path_key(p, path, "containerPath"), &m->container_path, err)) < 0)
    return r;
  if ((x = an_json_member(v, "type")) &&
      (r = an_json_get_string(x, an_json_path_key(p, path, "type"), &m->type, err)) < 0)
    return r;
  if (m->type && strcmp(m->type, "bind") && strcmp(m->type, "rbind"))
    return an_json_error(err, p, "\"%s\": only bind mounts are supported", m->type);
  if ((x = an_json_member(v, "options")) &&
      (r = an_json_get_strv(x, an_json_path_key(p, path, "options"), &m->options, err)) < 0)
    return r;
  return 0;
}

static const char *const hook_names[] = {"prestart", "createRuntime", "createContainer",
                                         "startContainer", "poststart", "poststop", NULL};

static int parse_hook(yajl_val v, const char *path, struct an_cdi_hook *h, an_error_t *err) {
  char p[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  yajl_val x;
  if (r < 0) return r;
  if (!(x = an_json_member(v, "hookName"))) return an_json_error(err, path, "hookName is required");
  if ((r = an_json_get_string(x, an_json_path_key(p, path, "hookName"), &h->hook_name, err)) < 0)
    return r;
  bool known = false;
  for (size_t i = 0; hook_names[i]; i++) known |= strcmp(hook_names[i], h->hook_name) == 0;
  if (!known) return an_json_error(err, p, "unknown hook \"%s\"", h->hook_name);
  if (!(x = an_json_member(v, "path"))) return an_json_error(err, path, "path is required");
  if ((r = get_abs_path(x, an_json_path_key(p, path, "path"), &h->hook.path, err)) < 0) return r;
  if ((x = an_json_member(v, "args")) &&
      (r = an_json_get_strv(x, an_json_path_key(p, path, "args"), &h->hook.args, err)) < 0)
    return r;
  if ((x = an_json_member(v, "env")) &&
      (r = an_json_get_strv(x, an_json_path_key(p, path, "env"), &h->hook.env, err)) < 0)
    return r;
  if ((x = an_json_member(v, "timeout"))) {
    int64_t t;
    if ((r = an_json_get_i64(x, an_json_path_key(p, path, "timeout"), 1, INT32_MAX, &t, err)) < 0)
      return r;
    h->hook.has_timeout = true;
    h->hook.timeout = (int) t;
  }
  return 0;
}

/* Parse the array member `key` of `v` into *items (each `size` bytes). */
static int parse_list(yajl_val v, const char *path, const char *key, size_t size, void **items,
                      size_t *n, int (*one)(yajl_val, const char *, void *, an_error_t *),
                      an_error_t *err) {
  char p[AN_JSON_PATH_MAX], q[AN_JSON_PATH_MAX];
  yajl_val a = an_json_member(v, key);
  if (!a) return 0;
  an_json_path_key(p, path, key);
  int r = an_json_want_array(a, p, err);
  if (r < 0) return r;
  if (!(*items = calloc(a->u.array.len + 1, size))) return an_error_set(err, ENOMEM, "%s", p);
  for (size_t i = 0; i < a->u.array.len; i++) {
    (*n)++;
    r = one(a->u.array.values[i], an_json_path_index(q, p, i), (char *) *items + i * size, err);
    if (r < 0) return r;
  }
  return 0;
}

static int node_cb(yajl_val v, const char *p, void *o, an_error_t *e) { return parse_node(v, p, o, e); }
static int mount_cb(yajl_val v, const char *p, void *o, an_error_t *e) { return parse_mount(v, p, o, e); }
static int hook_cb(yajl_val v, const char *p, void *o, an_error_t *e) { return parse_hook(v, p, o, e); }

static int parse_edits(yajl_val v, const char *path, struct an_cdi_edits *e, an_error_t *err) {
  char p[AN_JSON_PATH_MAX];
  if (!v) return 0;
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  yajl_val x;
  if ((x = an_json_member(v, "env"))) {
    if ((r = an_json_get_strv(x, an_json_path_key(p, path, "env"), &e->env, err)) < 0) return r;
    for (char **s = e->env; *s; s++)
      if (!strchr(*s, '=') || **s == '=') return an_json_error(err, p, "\"%s\": expected KEY=value", *s);
  }
  if ((r = parse_list(v, path, "deviceNodes", sizeof *e->nodes, (void **) &e->nodes, &e->n_nodes,
                      node_cb, err)) < 0 ||
      (r = parse_list(v, path, "mounts", sizeof *e->mounts, (void **) &e->mounts, &e->n_mounts,
                      mount_cb, err)) < 0 ||
      (r = parse_list(v, path, "hooks", sizeof *e->hooks, (void **) &e->hooks, &e->n_hooks,
                      hook_cb, err)) < 0)
    return r;
  static const char *const unsupported[] = {"additionalGIDs", "intelRdt", "netDevices", NULL};
  for (size_t i = 0; unsupported[i]; i++)
    if (an_json_member(v, unsupported[i]) && !e->unsupported) e->unsupported = unsupported[i];
  return 0;
}

int an_cdi_spec_parse(yajl_val root, const char *file, struct an_cdi_spec *s, an_error_t *err) {
  char p[AN_JSON_PATH_MAX];
  int r = an_json_want_object(root, "", err);
  if (r < 0) return r;
  const char *ver = an_json_member_str(root, "cdiVersion");
  if (!ver) return an_json_error(err, "cdiVersion", "required (a string)");
  bool known = false;
  for (size_t i = 0; versions[i]; i++) known |= strcmp(ver, versions[i]) == 0;
  if (!known) return an_json_error(err, "cdiVersion", "\"%s\": not one of 0.3.0 to 0.8.0", ver);
  const char *kind = an_json_member_str(root, "kind");
  if (!kind || !valid_kind(kind))
    return an_json_error(err, "kind", "\"%s\": expected vendor/class (\"nvidia.com/gpu\")",
                         kind ? kind : "");
  if (!(s->kind = strdup(kind)) || !(s->file = strdup(file))) return an_error_set(err, ENOMEM, "%s", file);
  yajl_val devs = an_json_member(root, "devices");
  if (!devs) return an_json_error(err, "devices", "required");
  if ((r = an_json_want_array(devs, "devices", err)) < 0) return r;
  if (!(s->devices = calloc(devs->u.array.len + 1, sizeof *s->devices)))
    return an_error_set(err, ENOMEM, "%s", file);
  for (size_t i = 0; i < devs->u.array.len; i++) {
    yajl_val d = devs->u.array.values[i];
    struct an_cdi_device *dev = &s->devices[s->n_devices++];
    an_json_path_index(p, "devices", i);
    if ((r = an_json_want_object(d, p, err)) < 0) return r;
    const char *name = an_json_member_str(d, "name");
    if (!name || !valid_device_name(name))
      return an_json_error(err, p, "name \"%s\": expected [A-Za-z0-9][A-Za-z0-9_.:-]*", name ? name : "");
    for (size_t j = 0; j + 1 < s->n_devices; j++)
      if (strcmp(s->devices[j].name, name) == 0)
        return an_json_error(err, p, "device \"%s\" defined twice", name);
    if (!(dev->name = strdup(name))) return an_error_set(err, ENOMEM, "%s", file);
    char q[AN_JSON_PATH_MAX];
    yajl_val ce = an_json_member(d, "containerEdits");
    if (!ce) return an_json_error(err, p, "containerEdits is required");
    if ((r = parse_edits(ce, an_json_path_key(q, p, "containerEdits"), &dev->edits, err)) < 0) return r;
  }
  return parse_edits(an_json_member(root, "containerEdits"), "containerEdits", &s->edits, err);
}

static void edits_clear(struct an_cdi_edits *e) {
  an_strv_free(e->env);
  for (size_t i = 0; e->nodes && i < e->n_nodes; i++) {
    free(e->nodes[i].path);
    free(e->nodes[i].host_path);
    free(e->nodes[i].permissions);
  }
  free(e->nodes);
  for (size_t i = 0; e->mounts && i < e->n_mounts; i++) {
    free(e->mounts[i].host_path);
    free(e->mounts[i].container_path);
    free(e->mounts[i].type);
    an_strv_free(e->mounts[i].options);
  }
  free(e->mounts);
  for (size_t i = 0; e->hooks && i < e->n_hooks; i++) {
    free(e->hooks[i].hook_name);
    free(e->hooks[i].hook.path);
    an_strv_free(e->hooks[i].hook.args);
    an_strv_free(e->hooks[i].hook.env);
  }
  free(e->hooks);
}

void an_cdi_spec_clear(struct an_cdi_spec *s) {
  for (size_t i = 0; s->devices && i < s->n_devices; i++) {
    free(s->devices[i].name);
    edits_clear(&s->devices[i].edits);
  }
  free(s->devices);
  edits_clear(&s->edits);
  free(s->kind);
  free(s->file);
}

void an_cdi_registry_free(struct an_cdi_registry *reg) {
  if (!reg) return;
  for (size_t i = 0; i < reg->n_specs; i++) an_cdi_spec_clear(&reg->specs[i]);
  free(reg->specs);
  free(reg->dirs_text);
  free(reg);
}

static bool has_suffix(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n > m && strcmp(s + n - m, suf) == 0;
}

/* Read one spec file: who may have written it, then the document. */
static int load_file(const char *file, struct an_cdi_spec *s, an_error_t *err) {
  cleanup_close int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return an_error_set(err, errno, "CDI spec %s: open", file);
  struct stat st;
  if (fstat(fd, &st) < 0) return an_error_set(err, errno, "CDI spec %s: stat", file);
  if (!S_ISREG(st.st_mode)) return an_error_set(err, EINVAL, "CDI spec %s: not a regular file", file);
  if ((st.st_mode & 022) || (st.st_uid != 0 && st.st_uid != geteuid()))
    return an_error_set(err, EPERM, "CDI spec %s: owned by uid %u with mode %04o: must be owned by "
                        "root (or the caller) and not writable by group or others", file,
                        (unsigned) st.st_uid, (unsigned) (st.st_mode & 07777));
  cleanup_free char *text = NULL;
  size_t len = 0;
  int r = an_json_read_file(file, &text, &len, err);
  if (r < 0) return an_error_prefix(err, "CDI spec");
  cleanup_free char *json = NULL;
  if (!has_suffix(file, ".json")) {
    if ((r = an_cdi_yaml_to_json(text, len, file, &json, err)) < 0) return an_error_prefix(err, "CDI spec");
  }
  yajl_val root = NULL;
  r = an_json_parse(json ? json : text, json ? strlen(json) : len, file, &root, err);
  if (r < 0) return an_error_prefix(err, "CDI spec");
  r = an_cdi_spec_parse(root, file, s, err);
  yajl_tree_free(root);
  return r < 0 ? an_error_prefix(err, "CDI spec %s", file) : 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *) a, *(char *const *) b);
}

static int load_dir(struct an_cdi_registry *reg, const char *dir, size_t index, an_error_t *err) {
  DIR *d = opendir(dir);
  if (!d) return errno == ENOENT || errno == ENOTDIR ? 0 : an_error_set(err, errno, "CDI spec dir %s", dir);
  char **names = NULL;
  size_t n = 0;
  int r = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.' || !(has_suffix(de->d_name, ".json") || has_suffix(de->d_name, ".yaml") ||
                                  has_suffix(de->d_name, ".yml")))
      continue;
    char **grown = realloc(names, (n + 1) * sizeof *names);
    if (!grown || !(grown[n] = strdup(de->d_name))) {
      names = grown ? grown : names;
      r = an_error_set(err, ENOMEM, "CDI spec dir %s", dir);
      break;
    }
    names = grown;
    n++;
  }
  closedir(d);
  if (names) qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 0; r == 0 && i < n; i++) {
    cleanup_free char *file = NULL;
    struct an_cdi_spec *grown = realloc(reg->specs, (reg->n_specs + 1) * sizeof *grown);
    if (!grown || asprintf(&file, "%s/%s", dir, names[i]) < 0) {
      if (grown) reg->specs = grown;
      r = an_error_set(err, ENOMEM, "CDI spec dir %s", dir);
      break;
    }
    reg->specs = grown;
    struct an_cdi_spec *s = &reg->specs[reg->n_specs++];
    *s = (struct an_cdi_spec){.dir_index = index};
    r = load_file(file, s, err);
  }
  /* Two specs of one directory defining the same device is a conflict. */
  for (size_t a = 0; r == 0 && a < reg->n_specs; a++)
    for (size_t b = a + 1; r == 0 && b < reg->n_specs; b++) {
      struct an_cdi_spec *x = &reg->specs[a], *y = &reg->specs[b];
      if (x->dir_index != index || y->dir_index != index || strcmp(x->kind, y->kind)) continue;
      for (size_t i = 0; r == 0 && i < x->n_devices; i++)
        for (size_t j = 0; r == 0 && j < y->n_devices; j++)
          if (strcmp(x->devices[i].name, y->devices[j].name) == 0)
            r = an_error_set(err, EINVAL, "CDI device %s=%s: defined by both %s and %s", x->kind,
                             x->devices[i].name, x->file, y->file);
    }
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  return r;
}

int an_cdi_registry_load(const char *const *dirs, struct an_cdi_registry **out, an_error_t *err) {
  if (!dirs) dirs = an_cdi_default_dirs;
  struct an_cdi_registry *reg = calloc(1, sizeof *reg);
  if (!reg) return an_error_set(err, ENOMEM, "CDI registry");
  size_t text_len = 1;
  for (size_t i = 0; dirs[i]; i++) text_len += strlen(dirs[i]) + 2;
  if (!(reg->dirs_text = calloc(1, text_len))) {
    an_cdi_registry_free(reg);
    return an_error_set(err, ENOMEM, "CDI registry");
  }
  for (size_t i = 0; dirs[i]; i++) {
    if (i) strcat(reg->dirs_text, ", ");
    strcat(reg->dirs_text, dirs[i]);
    int r = load_dir(reg, dirs[i], i, err);
    if (r < 0) {
      an_cdi_registry_free(reg);
      return r;
    }
  }
  *out = reg;
  return 0;
}
