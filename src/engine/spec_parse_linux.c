/* engine/spec_parse_linux.c — the "linux" object of config.json except
 * resources and seccomp: namespaces, uid/gid mappings, sysctl, cgroupsPath,
 * maskedPaths, readonlyPaths, rootfsPropagation, mountLabel, devices.
 * Standard: runtime-spec config-linux.md; user_namespaces(7) for mappings.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "agentnest/spec.h"
#include "engine/spec_internal.h"
#include "engine/spec_names.h"

static int parse_id_mapping(yajl_val v, const char *path, struct an_spec_id_mapping *m,
                            an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  const struct { const char *key; uint32_t *field; } f[] = {
    { "containerID", &m->container_id }, { "hostID", &m->host_id }, { "size", &m->size },
  };
  for (size_t i = 0; i < 3; i++) {
    yajl_val x = an_json_member(v, f[i].key);
    uint64_t n;
    an_json_path_key(sub, path, f[i].key);
    if (!x) return an_json_error(err, sub, "is required");
    if ((r = an_json_get_u64(x, sub, UINT32_MAX, &n, err)) < 0) return r;
    *f[i].field = (uint32_t) n;
  }
  if (m->size == 0) return an_json_error(err, an_json_path_key(sub, path, "size"), "must not be 0");
  /* user_namespaces(7): ids are 32-bit; a range may not wrap. */
  if ((uint64_t) m->container_id + m->size > (1ull << 32))
    return an_json_error(err, path, "containerID %u + size %u overflows 32 bits",
                         m->container_id, m->size);
  if ((uint64_t) m->host_id + m->size > (1ull << 32))
    return an_json_error(err, path, "hostID %u + size %u overflows 32 bits", m->host_id,
                         m->size);
  return 0;
}

int an_spec_parse_id_mappings(yajl_val v, const char *path, struct an_spec_id_mapping **out,
                              size_t *n, an_error_t *err) {
  int r = an_json_want_array(v, path, err);
  if (r < 0) return r;
  if ((r = AN_SPEC_ALLOC_ARRAY(*out, *n, v->u.array.len, path, err)) < 0) return r;
  char sub[AN_JSON_PATH_MAX];
  for (size_t i = 0; i < v->u.array.len; i++)
    if ((r = parse_id_mapping(v->u.array.values[i], an_json_path_index(sub, path, i), &(*out)[i],
                              err)) < 0)
      return r;
  return 0;
}

static int parse_namespaces(yajl_val v, const char *path, struct an_spec_linux *l,
                            an_error_t *err) {
  int r = an_json_want_array(v, path, err);
  if (r < 0) return r;
  if ((r = AN_SPEC_ALLOC_ARRAY(l->namespaces, l->n_namespaces, v->u.array.len, path, err)) < 0)
    return r;
  char item[AN_JSON_PATH_MAX], sub[AN_JSON_PATH_MAX];
  for (size_t i = 0; i < v->u.array.len; i++) {
    yajl_val ns = v->u.array.values[i];
    an_json_path_index(item, path, i);
    if ((r = an_json_want_object(ns, item, err)) < 0) return r;
    const char *type;
    if ((r = an_spec_req_string(ns, item, "type", sub, &type, err)) < 0) return r;
    int flag;
    if (an_namespace_from_type(type, &flag) < 0)
      return an_json_error(err, sub, "unknown namespace \"%s\"", type);
    /* config-linux.md: a type given twice is an error. */
    if (l->ns_flags & flag) return an_json_error(err, sub, "duplicate namespace \"%s\"", type);
    l->namespaces[i].clone_flag = flag;
    l->ns_flags |= flag;
    yajl_val x;
    if ((x = an_json_member(ns, "path")) &&
        (r = an_spec_get_abs_path(x, an_json_path_key(sub, item, "path"), &l->namespaces[i].path,
                                  err)) < 0)
      return r;
  }
  return 0;
}

static int parse_device(yajl_val v, const char *path, struct an_spec_device *d,
                        an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  const char *type;
  if ((r = an_spec_req_string(v, path, "type", sub, &type, err)) < 0) return r;
  if (strlen(type) != 1 || !strchr("cbup", type[0]))
    return an_json_error(err, sub, "unknown device type \"%s\" (want c, b, u or p)", type);
  d->type = type[0];
  yajl_val x;
  if ((r = an_spec_req_member(v, path, "path", sub, &x, err)) < 0 ||
      (r = an_spec_get_abs_path(x, sub, &d->path, err)) < 0)
    return r;
  /* major/minor: required except for FIFOs (config-linux.md "Devices") */
  const struct { const char *key; int64_t *field; } nums[] = {
    { "major", &d->major }, { "minor", &d->minor },
  };
  for (size_t i = 0; i < 2; i++) {
    an_json_path_key(sub, path, nums[i].key);
    if (!(x = an_json_member(v, nums[i].key))) {
      if (d->type != 'p') return an_json_error(err, sub, "is required");
      continue;
    }
    if ((r = an_json_get_i64(x, sub, 0, UINT32_MAX, nums[i].field, err)) < 0) return r;
  }
  uint64_t n;
  /* fileMode: permission bits; podman writes st_mode whole (S_IFCHR|0666 =
   * 8630), which runc and crun accept: file-type bits are allowed when they
   * are the device type's, and dropped */
  if ((x = an_json_member(v, "fileMode"))) {
    an_json_path_key(sub, path, "fileMode");
    if ((r = an_json_get_u64(x, sub, S_IFMT | 07777, &n, err)) < 0) return r;
    mode_t want = d->type == 'b' ? S_IFBLK : d->type == 'p' ? S_IFIFO : S_IFCHR;
    if ((n & S_IFMT) && (n & S_IFMT) != want)
      return an_json_error(err, sub, "%llu has file-type bits 0%llo, not those of type \"%c\" (0%o)",
                           (unsigned long long) n, (unsigned long long) (n & S_IFMT), d->type,
                           (unsigned) want);
    d->has_file_mode = true;
    d->file_mode = (mode_t) (n & 07777);
  }
  if ((x = an_json_member(v, "uid"))) {
    if ((r = an_json_get_u64(x, an_json_path_key(sub, path, "uid"), UINT32_MAX, &n, err)) < 0)
      return r;
    d->has_uid = true;
    d->uid = (uid_t) n;
  }
  if ((x = an_json_member(v, "gid"))) {
    if ((r = an_json_get_u64(x, an_json_path_key(sub, path, "gid"), UINT32_MAX, &n, err)) < 0)
      return r;
    d->has_gid = true;
    d->gid = (gid_t) n;
  }
  return 0;
}

static int parse_devices(yajl_val v, const char *path, struct an_spec_linux *l, an_error_t *err) {
  int r = an_json_want_array(v, path, err);
  if (r < 0) return r;
  if ((r = AN_SPEC_ALLOC_ARRAY(l->devices, l->n_devices, v->u.array.len, path, err)) < 0)
    return r;
  char sub[AN_JSON_PATH_MAX];
  for (size_t i = 0; i < v->u.array.len; i++)
    if ((r = parse_device(v->u.array.values[i], an_json_path_index(sub, path, i), &l->devices[i],
                          err)) < 0)
      return r;
  return 0;
}

static int parse_propagation(yajl_val v, const char *path, char **out, an_error_t *err) {
  static const char *const known[] = {
    "shared", "slave", "private", "unbindable", "rshared", "rslave", "rprivate", "runbindable",
  };
  if (!YAJL_IS_STRING(v)) return an_json_error(err, path, "must be a string");
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strcmp(v->u.string, known[i]) == 0) return an_json_get_string(v, path, out, err);
  return an_json_error(err, path, "unknown propagation \"%s\"", v->u.string);
}

int an_spec_parse_linux(yajl_val v, const char *path, struct an_spec_linux *l, an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  yajl_val x;
#define KEY(k) an_json_path_key(sub, path, k)
  if ((x = an_json_member(v, "namespaces")) && (r = parse_namespaces(x, KEY("namespaces"), l, err)) < 0)
    return r;
  if ((x = an_json_member(v, "uidMappings")) &&
      (r = an_spec_parse_id_mappings(x, KEY("uidMappings"), &l->uid_mappings, &l->n_uid_mappings,
                                     err)) < 0)
    return r;
  if ((x = an_json_member(v, "gidMappings")) &&
      (r = an_spec_parse_id_mappings(x, KEY("gidMappings"), &l->gid_mappings, &l->n_gid_mappings,
                                     err)) < 0)
    return r;
  if ((x = an_json_member(v, "sysctl")) &&
      (r = an_spec_parse_string_map(x, KEY("sysctl"), &l->sysctl, &l->n_sysctl, err)) < 0)
    return r;
  if ((x = an_json_member(v, "resources"))) {
    if (!(l->resources = calloc(1, sizeof *l->resources)))
      return an_error_set(err, ENOMEM, "%s", path);
    if ((r = an_spec_parse_resources(x, KEY("resources"), l->resources, err)) < 0) return r;
  }
  if ((x = an_json_member(v, "cgroupsPath")) &&
      (r = an_json_get_string(x, KEY("cgroupsPath"), &l->cgroups_path, err)) < 0)
    return r;
  if ((x = an_json_member(v, "seccomp"))) {
    if (!(l->seccomp = calloc(1, sizeof *l->seccomp)))
      return an_error_set(err, ENOMEM, "%s", path);
    if ((r = an_spec_parse_seccomp(x, KEY("seccomp"), l->seccomp, err)) < 0) return r;
  }
  if ((x = an_json_member(v, "maskedPaths")) &&
      (r = an_spec_get_abs_path_strv(x, KEY("maskedPaths"), &l->masked_paths, err)) < 0)
    return r;
  if ((x = an_json_member(v, "readonlyPaths")) &&
      (r = an_spec_get_abs_path_strv(x, KEY("readonlyPaths"), &l->readonly_paths, err)) < 0)
    return r;
  if ((x = an_json_member(v, "rootfsPropagation")) &&
      (r = parse_propagation(x, KEY("rootfsPropagation"), &l->rootfs_propagation, err)) < 0)
    return r;
  if ((x = an_json_member(v, "mountLabel")) &&
      (r = an_json_get_string(x, KEY("mountLabel"), &l->mount_label, err)) < 0)
    return r;
  if ((x = an_json_member(v, "devices")) && (r = parse_devices(x, KEY("devices"), l, err)) < 0)
    return r;
#undef KEY
  return 0;
}
