/* engine/spec_parse.c — an_spec_parse / an_spec_load_file: the top level of
 * config.json (ociVersion, root, mounts, hostname, domainname, hooks,
 * annotations) and the small helpers the section parsers share.
 * Sections live in spec_parse_process.c, spec_parse_linux.c,
 * spec_parse_resources.c and spec_parse_seccomp.c.
 * Standard: OCI runtime-spec 1.0–1.2, config.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/spec.h"
#include "engine/spec_internal.h"
#include "util/cleanup.h"

int an_spec_parse_process(yajl_val v, const char *path, struct an_spec_process *out,
                          an_error_t *err);

/* ---- shared helpers ------------------------------------------------------ */

int an_spec_req_member(yajl_val obj, const char *path, const char *key, char *sub, yajl_val *out,
                       an_error_t *err) {
  an_json_path_key(sub, path, key);
  if (!(*out = an_json_member(obj, key))) return an_json_error(err, sub, "is required");
  return 0;
}

int an_spec_req_string(yajl_val obj, const char *path, const char *key, char *sub,
                       const char **out, an_error_t *err) {
  yajl_val x;
  int r = an_spec_req_member(obj, path, key, sub, &x, err);
  if (r < 0) return r;
  if (!YAJL_IS_STRING(x)) return an_json_error(err, sub, "must be a string");
  *out = x->u.string;
  return 0;
}

int an_spec_req_u64(yajl_val obj, const char *path, const char *key, uint64_t max, uint64_t *out,
                    an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  yajl_val x;
  int r = an_spec_req_member(obj, path, key, sub, &x, err);
  return r < 0 ? r : an_json_get_u64(x, sub, max, out, err);
}

int an_spec_get_abs_path(yajl_val v, const char *path, char **out, an_error_t *err) {
  if (!YAJL_IS_STRING(v)) return an_json_error(err, path, "must be a string");
  if (v->u.string[0] != '/') return an_json_error(err, path, "must be an absolute path");
  return an_json_get_string(v, path, out, err);
}

int an_spec_get_abs_path_strv(yajl_val v, const char *path, char ***out, an_error_t *err) {
  char **strv = NULL;
  int r = an_json_get_strv(v, path, &strv, err);
  if (r < 0) return r;
  char sub[AN_JSON_PATH_MAX];
  for (size_t i = 0; strv[i]; i++)
    if (strv[i][0] != '/') {
      an_strv_free(strv);
      return an_json_error(err, an_json_path_index(sub, path, i), "must be an absolute path");
    }
  *out = strv;
  return 0;
}

int an_spec_parse_string_map(yajl_val v, const char *path, struct an_spec_key_value **out,
                             size_t *n, an_error_t *err) {
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  if ((r = AN_SPEC_ALLOC_ARRAY(*out, *n, v->u.object.len, path, err)) < 0) return r;
  char sub[AN_JSON_PATH_MAX];
  for (size_t i = 0; i < v->u.object.len; i++) {
    const char *key = v->u.object.keys[i];
    if (!((*out)[i].key = strdup(key))) return an_error_set(err, ENOMEM, "%s", path);
    if ((r = an_json_get_string(v->u.object.values[i], an_json_path_key(sub, path, key),
                                &(*out)[i].value, err)) < 0)
      return r;
  }
  return 0;
}

/* ---- root, mounts -------------------------------------------------------- */

static int parse_root(yajl_val v, const char *path, struct an_spec_root *root, an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  yajl_val p = an_json_member(v, "path");
  if (!p) return an_json_error(err, an_json_path_key(sub, path, "path"), "is required");
  /* relative to the bundle ("rootfs", ".") or absolute (config.md "Root") */
  if ((r = an_json_get_string(p, an_json_path_key(sub, path, "path"), &root->path, err)) < 0)
    return r;
  if (!root->path[0]) return an_json_error(err, sub, "must not be empty");
  yajl_val ro = an_json_member(v, "readonly");
  if (ro && (r = an_json_get_bool(ro, an_json_path_key(sub, path, "readonly"), &root->readonly,
                                  err)) < 0)
    return r;
  return 0;
}

static int parse_mount(yajl_val v, const char *path, struct an_spec_mount *m, an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  yajl_val x = an_json_member(v, "destination");
  /* runtime-spec 1.1 tolerates relative destinations (deprecated); we
   * refuse them so that no mount target is ever resolved against a cwd. */
  if (!x) return an_json_error(err, an_json_path_key(sub, path, "destination"), "is required");
  if ((r = an_spec_get_abs_path(x, an_json_path_key(sub, path, "destination"), &m->destination,
                                err)) < 0)
    return r;
  if ((x = an_json_member(v, "type")) &&
      (r = an_json_get_string(x, an_json_path_key(sub, path, "type"), &m->type, err)) < 0)
    return r;
  if ((x = an_json_member(v, "source")) &&
      (r = an_json_get_string(x, an_json_path_key(sub, path, "source"), &m->source, err)) < 0)
    return r;
  if ((x = an_json_member(v, "options")) &&
      (r = an_json_get_strv(x, an_json_path_key(sub, path, "options"), &m->options, err)) < 0)
    return r;
  if ((x = an_json_member(v, "uidMappings")) &&
      (r = an_spec_parse_id_mappings(x, an_json_path_key(sub, path, "uidMappings"),
                                     &m->uid_mappings, &m->n_uid_mappings, err)) < 0)
    return r;
  if ((x = an_json_member(v, "gidMappings")) &&
      (r = an_spec_parse_id_mappings(x, an_json_path_key(sub, path, "gidMappings"),
                                     &m->gid_mappings, &m->n_gid_mappings, err)) < 0)
    return r;
  return 0;
}

static int parse_mounts(yajl_val v, const char *path, struct an_spec *spec, an_error_t *err) {
  int r = an_json_want_array(v, path, err);
  if (r < 0) return r;
  if ((r = AN_SPEC_ALLOC_ARRAY(spec->mounts, spec->n_mounts, v->u.array.len, path, err)) < 0)
    return r;
  char sub[AN_JSON_PATH_MAX];
  for (size_t i = 0; i < v->u.array.len; i++)
    if ((r = parse_mount(v->u.array.values[i], an_json_path_index(sub, path, i),
                         &spec->mounts[i], err)) < 0)
      return r;
  return 0;
}

/* ---- hooks --------------------------------------------------------------- */

static int parse_hook(yajl_val v, const char *path, struct an_spec_hook *h, an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  yajl_val x = an_json_member(v, "path");
  if (!x) return an_json_error(err, an_json_path_key(sub, path, "path"), "is required");
  if ((r = an_spec_get_abs_path(x, an_json_path_key(sub, path, "path"), &h->path, err)) < 0)
    return r;
  if ((x = an_json_member(v, "args")) &&
      (r = an_json_get_strv(x, an_json_path_key(sub, path, "args"), &h->args, err)) < 0)
    return r;
  if ((x = an_json_member(v, "env")) &&
      (r = an_json_get_strv(x, an_json_path_key(sub, path, "env"), &h->env, err)) < 0)
    return r;
  if ((x = an_json_member(v, "timeout"))) {
    int64_t t;
    an_json_path_key(sub, path, "timeout");
    if ((r = an_json_get_i64(x, sub, INT32_MIN, INT32_MAX, &t, err)) < 0) return r;
    if (t <= 0) return an_json_error(err, sub, "must be greater than zero");
    h->has_timeout = true;
    h->timeout = (int) t;
  }
  return 0;
}

static int parse_hook_list(yajl_val v, const char *path, struct an_spec_hook **out, size_t *n,
                           an_error_t *err) {
  int r = an_json_want_array(v, path, err);
  if (r < 0) return r;
  if ((r = AN_SPEC_ALLOC_ARRAY(*out, *n, v->u.array.len, path, err)) < 0) return r;
  char sub[AN_JSON_PATH_MAX];
  for (size_t i = 0; i < v->u.array.len; i++)
    if ((r = parse_hook(v->u.array.values[i], an_json_path_index(sub, path, i), &(*out)[i],
                        err)) < 0)
      return r;
  return 0;
}

static int parse_hooks(yajl_val v, const char *path, struct an_spec_hooks *h, an_error_t *err) {
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  const struct { const char *key; struct an_spec_hook **list; size_t *n; } kinds[] = {
    { "prestart", &h->prestart, &h->n_prestart },
    { "createRuntime", &h->create_runtime, &h->n_create_runtime },
    { "createContainer", &h->create_container, &h->n_create_container },
    { "startContainer", &h->start_container, &h->n_start_container },
    { "poststart", &h->poststart, &h->n_poststart },
    { "poststop", &h->poststop, &h->n_poststop },
  };
  char sub[AN_JSON_PATH_MAX];
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    yajl_val x = an_json_member(v, kinds[k].key);
    if (x && (r = parse_hook_list(x, an_json_path_key(sub, path, kinds[k].key), kinds[k].list,
                                  kinds[k].n, err)) < 0)
      return r;
  }
  return 0;
}

/* ---- top level ----------------------------------------------------------- */

/* "1.0.0", "1.0.2-dev", "1.2.0": major version 1 (config.md "Specification version"). */
static int check_oci_version(const char *ver) {
  return ver[0] == '1' && ver[1] == '.' && ver[2] >= '0' && ver[2] <= '9';
}

static int parse_document(yajl_val doc, struct an_spec *spec, an_error_t *err) {
  int r;
  if (!YAJL_IS_OBJECT(doc)) return an_json_error(err, "", "config must be a JSON object");
  yajl_val x = an_json_member(doc, "ociVersion");
  if (!x) return an_json_error(err, "ociVersion", "is required");
  if ((r = an_json_get_string(x, "ociVersion", &spec->oci_version, err)) < 0) return r;
  if (!check_oci_version(spec->oci_version))
    return an_json_error(err, "ociVersion", "unsupported version \"%s\" (want 1.x)",
                         spec->oci_version);
  if (!(x = an_json_member(doc, "root"))) return an_json_error(err, "root", "is required");
  if ((r = parse_root(x, "root", &spec->root, err)) < 0) return r;
  if ((x = an_json_member(doc, "mounts")) && (r = parse_mounts(x, "mounts", spec, err)) < 0)
    return r;
  if ((x = an_json_member(doc, "process"))) {
    if (!(spec->process = calloc(1, sizeof *spec->process)))
      return an_error_set(err, ENOMEM, "process");
    if ((r = an_spec_parse_process(x, "process", spec->process, err)) < 0) return r;
  }
  if ((x = an_json_member(doc, "hostname")) &&
      (r = an_json_get_string(x, "hostname", &spec->hostname, err)) < 0)
    return r;
  if ((x = an_json_member(doc, "domainname")) &&
      (r = an_json_get_string(x, "domainname", &spec->domainname, err)) < 0)
    return r;
  if ((x = an_json_member(doc, "hooks")) && (r = parse_hooks(x, "hooks", &spec->hooks, err)) < 0)
    return r;
  if ((x = an_json_member(doc, "annotations")) &&
      (r = an_spec_parse_string_map(x, "annotations", &spec->annotations, &spec->n_annotations,
                                    err)) < 0)
    return r;
  if ((x = an_json_member(doc, "linux")) &&
      (r = an_spec_parse_linux(x, "linux", &spec->linux, err)) < 0)
    return r;
  return 0;
}

int an_spec_parse(const char *json, size_t len, struct an_spec **out, an_error_t *err) {
  yajl_val doc = NULL;
  int r = an_json_parse(json, len, "", &doc, err);
  if (r < 0) return r;
  struct an_spec *spec = calloc(1, sizeof *spec);
  if (!spec) {
    yajl_tree_free(doc);
    return an_error_set(err, ENOMEM, "config");
  }
  r = parse_document(doc, spec, err);
  yajl_tree_free(doc);
  if (r < 0) {
    an_spec_free(spec);
    return r;
  }
  *out = spec;
  return 0;
}

int an_spec_load_file(const char *path, struct an_spec **out, an_error_t *err) {
  cleanup_free char *buf = NULL;
  size_t len = 0;
  int r = an_json_read_file(path, &buf, &len, err);
  if (r < 0) return r;
  r = an_spec_parse(buf, len, out, err);
  if (r < 0) an_error_prefix(err, "%s", path);
  return r;
}
