/* engine/spec_parse_resources.c — linux.resources of config.json: devices
 * (cgroup allow/deny list), memory, cpu, pids, blockIO, hugepageLimits,
 * unified.  Standard: runtime-spec config-linux.md "Control groups".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/spec.h"
#include "engine/spec_internal.h"

/* Optional int64 / uint64 members; `has` is set when present. */
static int opt_i64(yajl_val obj, const char *path, const char *key, int64_t min, int64_t max,
                   bool *has, int64_t *out, an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  yajl_val x = an_json_member(obj, key);
  if (!x) return 0;
  int r = an_json_get_i64(x, an_json_path_key(sub, path, key), min, max, out, err);
  if (r == 0 && has) *has = true;
  return r;
}

static int opt_u64(yajl_val obj, const char *path, const char *key, uint64_t max, bool *has,
                   uint64_t *out, an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  yajl_val x = an_json_member(obj, key);
  if (!x) return 0;
  int r = an_json_get_u64(x, an_json_path_key(sub, path, key), max, out, err);
  if (r == 0 && has) *has = true;
  return r;
}

static int opt_u16(yajl_val obj, const char *path, const char *key, bool *has, uint16_t *out,
                   an_error_t *err) {
  uint64_t n = 0;
  int r = opt_u64(obj, path, key, UINT16_MAX, has, &n, err);
  if (r == 0) *out = (uint16_t) n;
  return r;
}

static int req_i64(yajl_val obj, const char *path, const char *key, int64_t min, int64_t max,
                   int64_t *out, an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  yajl_val x;
  int r = an_spec_req_member(obj, path, key, sub, &x, err);
  return r < 0 ? r : opt_i64(obj, path, key, min, max, NULL, out, err);
}

static int parse_device_rule(yajl_val v, const char *path, struct an_spec_device_cgroup *d,
                             an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  yajl_val x = an_json_member(v, "allow");
  if (!x) return an_json_error(err, an_json_path_key(sub, path, "allow"), "is required");
  if ((r = an_json_get_bool(x, an_json_path_key(sub, path, "allow"), &d->allow, err)) < 0)
    return r;
  d->type = 'a';
  if ((x = an_json_member(v, "type"))) {
    an_json_path_key(sub, path, "type");
    if (!YAJL_IS_STRING(x)) return an_json_error(err, sub, "must be a string");
    if (strlen(x->u.string) != 1 || !strchr("acb", x->u.string[0]))
      return an_json_error(err, sub, "unknown device type \"%s\" (want a, c or b)", x->u.string);
    d->type = x->u.string[0];
  }
  d->major = d->minor = -1;   /* absent: every major/minor */
  if ((r = opt_i64(v, path, "major", -1, UINT32_MAX, NULL, &d->major, err)) < 0) return r;
  if ((r = opt_i64(v, path, "minor", -1, UINT32_MAX, NULL, &d->minor, err)) < 0) return r;
  if ((x = an_json_member(v, "access"))) {
    an_json_path_key(sub, path, "access");
    if (!YAJL_IS_STRING(x)) return an_json_error(err, sub, "must be a string");
    const char *a = x->u.string;
    if (!*a || strspn(a, "rwm") != strlen(a))
      return an_json_error(err, sub, "\"%s\" is not a combination of r, w and m", a);
    if ((r = an_json_get_string(x, sub, &d->access, err)) < 0) return r;
  }
  return 0;
}

static int parse_memory(yajl_val v, const char *path, struct an_spec_resources *res,
                        an_error_t *err) {
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  /* bytes; -1 means unlimited (config-linux.md "Memory") */
  if ((r = opt_i64(v, path, "limit", -1, INT64_MAX, &res->has_memory_limit, &res->memory_limit,
                   err)) < 0 ||
      (r = opt_i64(v, path, "reservation", -1, INT64_MAX, &res->has_memory_reservation,
                   &res->memory_reservation, err)) < 0 ||
      (r = opt_i64(v, path, "swap", -1, INT64_MAX, &res->has_memory_swap, &res->memory_swap,
                   err)) < 0 ||
      (r = opt_i64(v, path, "kernel", -1, INT64_MAX, &res->has_memory_kernel, &res->memory_kernel,
                   err)) < 0 ||
      (r = opt_i64(v, path, "kernelTCP", -1, INT64_MAX, &res->has_memory_kernel_tcp,
                   &res->memory_kernel_tcp, err)) < 0 ||
      (r = opt_u64(v, path, "swappiness", 100, &res->has_memory_swappiness,
                   &res->memory_swappiness, err)) < 0)
    return r;
  yajl_val x = an_json_member(v, "disableOOMKiller");
  char sub[AN_JSON_PATH_MAX];
  if (x) {
    if ((r = an_json_get_bool(x, an_json_path_key(sub, path, "disableOOMKiller"),
                              &res->disable_oom_killer, err)) < 0)
      return r;
    res->has_disable_oom_killer = true;
  }
  return 0;
}

static int parse_cpu(yajl_val v, const char *path, struct an_spec_resources *res,
                     an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  if ((r = opt_u64(v, path, "shares", UINT64_MAX, &res->has_cpu_shares, &res->cpu_shares,
                   err)) < 0 ||
      (r = opt_i64(v, path, "quota", -1, INT64_MAX, &res->has_cpu_quota, &res->cpu_quota, err)) < 0 ||
      (r = opt_u64(v, path, "period", UINT64_MAX, &res->has_cpu_period, &res->cpu_period,
                   err)) < 0 ||
      (r = opt_i64(v, path, "realtimeRuntime", -1, INT64_MAX, &res->has_cpu_realtime_runtime,
                   &res->cpu_realtime_runtime, err)) < 0 ||
      (r = opt_u64(v, path, "realtimePeriod", UINT64_MAX, &res->has_cpu_realtime_period,
                   &res->cpu_realtime_period, err)) < 0 ||
      (r = opt_i64(v, path, "idle", 0, 1, &res->has_cpu_idle, &res->cpu_idle, err)) < 0)
    return r;
  yajl_val x;
  if ((x = an_json_member(v, "cpus")) &&
      (r = an_json_get_string(x, an_json_path_key(sub, path, "cpus"), &res->cpu_cpus, err)) < 0)
    return r;
  if ((x = an_json_member(v, "mems")) &&
      (r = an_json_get_string(x, an_json_path_key(sub, path, "mems"), &res->cpu_mems, err)) < 0)
    return r;
  return 0;
}

static int parse_weight_devices(yajl_val v, const char *path, struct an_spec_resources *res,
                                an_error_t *err) {
  int r = an_json_want_array(v, path, err);
  if (r < 0) return r;
  if ((r = AN_SPEC_ALLOC_ARRAY(res->blkio_weight_device, res->n_blkio_weight_device,
                               v->u.array.len, path, err)) < 0)
    return r;
  char item[AN_JSON_PATH_MAX];
  for (size_t i = 0; i < v->u.array.len; i++) {
    yajl_val d = v->u.array.values[i];
    struct an_spec_weight_device *w = &res->blkio_weight_device[i];
    an_json_path_index(item, path, i);
    if ((r = an_json_want_object(d, item, err)) < 0 ||
        (r = req_i64(d, item, "major", 0, UINT32_MAX, &w->major, err)) < 0 ||
        (r = req_i64(d, item, "minor", 0, UINT32_MAX, &w->minor, err)) < 0 ||
        (r = opt_u16(d, item, "weight", &w->has_weight, &w->weight, err)) < 0 ||
        (r = opt_u16(d, item, "leafWeight", &w->has_leaf_weight, &w->leaf_weight, err)) < 0)
      return r;
  }
  return 0;
}

static int parse_throttle(yajl_val v, const char *path, struct an_spec_throttle_device **out,
                          size_t *n, an_error_t *err) {
  char item[AN_JSON_PATH_MAX], sub[AN_JSON_PATH_MAX];
  int r = an_json_want_array(v, path, err);
  if (r < 0) return r;
  if ((r = AN_SPEC_ALLOC_ARRAY(*out, *n, v->u.array.len, path, err)) < 0) return r;
  for (size_t i = 0; i < v->u.array.len; i++) {
    yajl_val d = v->u.array.values[i];
    struct an_spec_throttle_device *t = &(*out)[i];
    an_json_path_index(item, path, i);
    if ((r = an_json_want_object(d, item, err)) < 0 ||
        (r = req_i64(d, item, "major", 0, UINT32_MAX, &t->major, err)) < 0 ||
        (r = req_i64(d, item, "minor", 0, UINT32_MAX, &t->minor, err)) < 0)
      return r;
    if (!an_json_member(d, "rate"))
      return an_json_error(err, an_json_path_key(sub, item, "rate"), "is required");
    if ((r = opt_u64(d, item, "rate", UINT64_MAX, NULL, &t->rate, err)) < 0) return r;
  }
  return 0;
}

static int parse_block_io(yajl_val v, const char *path, struct an_spec_resources *res,
                          an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  if ((r = opt_u16(v, path, "weight", &res->has_blkio_weight, &res->blkio_weight, err)) < 0 ||
      (r = opt_u16(v, path, "leafWeight", &res->has_blkio_leaf_weight, &res->blkio_leaf_weight,
                   err)) < 0)
    return r;
  yajl_val x;
  if ((x = an_json_member(v, "weightDevice")) &&
      (r = parse_weight_devices(x, an_json_path_key(sub, path, "weightDevice"), res, err)) < 0)
    return r;
  const struct { const char *key; struct an_spec_throttle_device **list; size_t *n; } t[] = {
    { "throttleReadBpsDevice", &res->blkio_throttle_read_bps, &res->n_blkio_throttle_read_bps },
    { "throttleWriteBpsDevice", &res->blkio_throttle_write_bps, &res->n_blkio_throttle_write_bps },
    { "throttleReadIOPSDevice", &res->blkio_throttle_read_iops, &res->n_blkio_throttle_read_iops },
    { "throttleWriteIOPSDevice", &res->blkio_throttle_write_iops,
      &res->n_blkio_throttle_write_iops },
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if ((x = an_json_member(v, t[i].key)) &&
        (r = parse_throttle(x, an_json_path_key(sub, path, t[i].key), t[i].list, t[i].n, err)) < 0)
      return r;
  return 0;
}

static int parse_hugepages(yajl_val v, const char *path, struct an_spec_resources *res,
                           an_error_t *err) {
  char item[AN_JSON_PATH_MAX], sub[AN_JSON_PATH_MAX];
  int r = an_json_want_array(v, path, err);
  if (r < 0) return r;
  if ((r = AN_SPEC_ALLOC_ARRAY(res->hugepage_limits, res->n_hugepage_limits, v->u.array.len,
                               path, err)) < 0)
    return r;
  for (size_t i = 0; i < v->u.array.len; i++) {
    yajl_val h = v->u.array.values[i];
    an_json_path_index(item, path, i);
    if ((r = an_json_want_object(h, item, err)) < 0) return r;
    yajl_val x;
    if ((r = an_spec_req_member(h, item, "pageSize", sub, &x, err)) < 0 ||
        (r = an_json_get_string(x, sub, &res->hugepage_limits[i].page_size, err)) < 0 ||
        (r = an_spec_req_u64(h, item, "limit", UINT64_MAX, &res->hugepage_limits[i].limit,
                             err)) < 0)
      return r;
  }
  return 0;
}

int an_spec_parse_resources(yajl_val v, const char *path, struct an_spec_resources *res,
                            an_error_t *err) {
  char sub[AN_JSON_PATH_MAX], item[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  yajl_val x;
  if ((x = an_json_member(v, "devices"))) {
    an_json_path_key(sub, path, "devices");
    if ((r = an_json_want_array(x, sub, err)) < 0) return r;
    if ((r = AN_SPEC_ALLOC_ARRAY(res->devices, res->n_devices, x->u.array.len, sub, err)) < 0)
      return r;
    for (size_t i = 0; i < x->u.array.len; i++)
      if ((r = parse_device_rule(x->u.array.values[i], an_json_path_index(item, sub, i),
                                 &res->devices[i], err)) < 0)
        return r;
  }
  if ((x = an_json_member(v, "memory")) &&
      (r = parse_memory(x, an_json_path_key(sub, path, "memory"), res, err)) < 0)
    return r;
  if ((x = an_json_member(v, "cpu")) &&
      (r = parse_cpu(x, an_json_path_key(sub, path, "cpu"), res, err)) < 0)
    return r;
  if ((x = an_json_member(v, "pids"))) {
    an_json_path_key(sub, path, "pids");
    if ((r = an_json_want_object(x, sub, err)) < 0) return r;
    if ((r = req_i64(x, sub, "limit", -1, INT64_MAX, &res->pids_limit, err)) < 0) return r;
    res->has_pids_limit = true;
  }
  if ((x = an_json_member(v, "blockIO")) &&
      (r = parse_block_io(x, an_json_path_key(sub, path, "blockIO"), res, err)) < 0)
    return r;
  if ((x = an_json_member(v, "hugepageLimits")) &&
      (r = parse_hugepages(x, an_json_path_key(sub, path, "hugepageLimits"), res, err)) < 0)
    return r;
  /* network (classID, priorities): parsed only to be refused, see
   * an_cg_validate_resources */
  if ((x = an_json_member(v, "network"))) res->has_network = true;
  if ((x = an_json_member(v, "unified")) &&
      (r = an_spec_parse_string_map(x, an_json_path_key(sub, path, "unified"), &res->unified,
                                    &res->n_unified, err)) < 0)
    return r;
  return 0;
}

int an_spec_resources_parse(const char *json, size_t len, struct an_spec_resources **out,
                            an_error_t *err) {
  yajl_val doc = NULL;
  int r = an_json_parse(json, len, "resources", &doc, err);
  if (r < 0) return r;
  struct an_spec_resources *res = calloc(1, sizeof *res);
  if (!res) {
    yajl_tree_free(doc);
    return an_error_set(err, ENOMEM, "resources");
  }
  r = an_spec_parse_resources(doc, "resources", res, err);
  yajl_tree_free(doc);
  if (r < 0) {
    an_spec_resources_free(res);
    return r;
  }
  *out = res;
  return 0;
}
