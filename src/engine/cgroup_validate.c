/* engine/cgroup_validate.c — range and form checks of linux.resources
 * before anything is created (runtime-spec config-linux.md "Control
 * groups"; kernel limits from cgroup-v2.rst and cgroup-v1/), and which
 * controllers a resources block needs. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include "engine/cgroup_internal.h"

#define MIN_MEMORY (1024 * 1024)        /* below 1 MiB nothing useful runs: a typo, refuse */
#define F "linux.resources."

const char *an_cg_ctrl_field(enum an_cg_ctrl c) {
  switch (c) {
  case AN_CG_CPU: return F "cpu";
  case AN_CG_CPUSET: return F "cpu.cpus/mems";
  case AN_CG_MEMORY: return F "memory";
  case AN_CG_PIDS: return F "pids";
  case AN_CG_IO: return F "blockIO";
  case AN_CG_HUGETLB: return F "hugepageLimits";
  case AN_CG_DEVICES: return F "devices";
  default: return F "unified";
  }
}

static bool is_cpu_list(const char *s) {
  if (!*s) return false;
  for (; *s; s++)
    if (!isdigit((unsigned char) *s) && *s != ',' && *s != '-') return false;
  return true;
}

static bool is_page_size(const char *s) {
  size_t d = strspn(s, "0123456789");
  return d > 0 && (s[d] == 'K' || s[d] == 'M' || s[d] == 'G') && s[d + 1] == 'B' && !s[d + 2];
}

static int check_devnum(int64_t v, const char *field, size_t i, an_error_t *err) {
  if (v < -1 || v > INT32_MAX)
    return an_error_set(err, EINVAL, F "%s[%zu]: device number %" PRId64 " out of range", field, i, v);
  return 0;
}

static int check_weight(uint64_t w, const char *field, an_error_t *err) {
  if (w != 0 && (w < 10 || w > 1000))
    return an_error_set(err, EINVAL, F "%s: %" PRIu64 " not in 10..1000", field, w);
  return 0;
}

static int check_throttle(const struct an_spec_throttle_device *t, size_t n, const char *field,
                          an_error_t *err) {
  for (size_t i = 0; i < n; i++)
    if (t[i].major < 0 || t[i].minor < 0 || t[i].major > INT32_MAX || t[i].minor > INT32_MAX)
      return an_error_set(err, EINVAL, F "blockIO.%s[%zu]: bad device %" PRId64 ":%" PRId64,
                          field, i, t[i].major, t[i].minor);
  return 0;
}

/* A linux.resources.unified key must name one interface file of the cgroup
 * itself: "<controller>.<knob>", no '/', never the core files the runtime
 * manages (cgroup.procs, cgroup.subtree_control, ...). */
static int check_unified_key(const char *k, size_t i, an_error_t *err) {
  if (!k || !*k || strchr(k, '/') || !strcmp(k, ".") || !strcmp(k, "..") || !strchr(k, '.') ||
      k[0] == '.')
    return an_error_set(err, EINVAL, F "unified[%zu]: key \"%s\" is not a cgroup file name", i,
                        k ? k : "");
  for (const char *p = k; *p; p++)
    if (!isalnum((unsigned char) *p) && *p != '.' && *p != '_' && *p != '-')
      return an_error_set(err, EINVAL, F "unified[%zu]: key \"%s\" is not a cgroup file name", i, k);
  if (!strncmp(k, "cgroup.", 7) && strcmp(k, "cgroup.max.depth") && strcmp(k, "cgroup.max.descendants"))
    return an_error_set(err, EINVAL, F "unified[%zu]: \"%s\" is managed by the runtime", i, k);
  return 0;
}

int an_cg_validate_resources(const struct an_spec_resources *r, an_error_t *err) {
  if (!r) return 0;
  /* Asked for and not enforced here: refused rather than ignored (fail
   * closed; runc fails where the kernel lacks them too). */
  if (r->has_memory_kernel_tcp)
    return an_error_set(err, EOPNOTSUPP, F "memory.kernelTCP: kernel TCP memory limits are not "
                        "supported by this runtime (refused rather than ignored)");
  if (r->has_network)
    return an_error_set(err, EOPNOTSUPP, F "network (classID, priorities): net_cls/net_prio "
                        "are not supported by this runtime (refused rather than ignored)");
  if (r->has_memory_limit && r->memory_limit != -1 && r->memory_limit != 0 &&
      (r->memory_limit < 0 || r->memory_limit < MIN_MEMORY))
    return an_error_set(err, EINVAL, F "memory.limit: %" PRId64 " bytes (minimum 1 MiB, or -1)",
                        r->memory_limit);
  if (r->has_memory_reservation && r->memory_reservation < -1)
    return an_error_set(err, EINVAL, F "memory.reservation: %" PRId64 " is negative",
                        r->memory_reservation);
  if (r->has_memory_swap && r->memory_swap != -1 && r->memory_swap != 0) {
    if (r->memory_swap < 0)
      return an_error_set(err, EINVAL, F "memory.swap: %" PRId64 " is negative", r->memory_swap);
    if (!r->has_memory_limit || r->memory_limit <= 0)
      return an_error_set(err, EINVAL, F "memory.swap: a swap limit needs memory.limit");
    if (r->memory_swap < r->memory_limit)
      return an_error_set(err, EINVAL, F "memory.swap: %" PRId64 " is below memory.limit %" PRId64
                          " (swap is memory+swap)", r->memory_swap, r->memory_limit);
  }
  if (r->has_memory_swappiness && r->memory_swappiness > 100)
    return an_error_set(err, EINVAL, F "memory.swappiness: %" PRIu64 " not in 0..100",
                        r->memory_swappiness);
  if (r->has_cpu_shares && r->cpu_shares != 0 && (r->cpu_shares < 2 || r->cpu_shares > 262144))
    return an_error_set(err, EINVAL, F "cpu.shares: %" PRIu64 " not in 2..262144", r->cpu_shares);
  if (r->has_cpu_period && r->cpu_period != 0 && (r->cpu_period < 1000 || r->cpu_period > 1000000))
    return an_error_set(err, EINVAL, F "cpu.period: %" PRIu64 " µs not in 1000..1000000",
                        r->cpu_period);
  if (r->has_cpu_quota && r->cpu_quota != -1 && r->cpu_quota != 0 && r->cpu_quota < 1000)
    return an_error_set(err, EINVAL, F "cpu.quota: %" PRId64 " µs (minimum 1000, or -1)",
                        r->cpu_quota);
  if (r->has_cpu_idle && r->cpu_idle != 0 && r->cpu_idle != 1)
    return an_error_set(err, EINVAL, F "cpu.idle: %" PRId64 " is not 0 or 1", r->cpu_idle);
  if (r->has_cpu_realtime_runtime && r->cpu_realtime_runtime < -1)
    return an_error_set(err, EINVAL, F "cpu.realtimeRuntime: %" PRId64 " is negative",
                        r->cpu_realtime_runtime);
  if (r->cpu_cpus && *r->cpu_cpus && !is_cpu_list(r->cpu_cpus))
    return an_error_set(err, EINVAL, F "cpu.cpus: \"%s\" is not a cpu list", r->cpu_cpus);
  if (r->cpu_mems && *r->cpu_mems && !is_cpu_list(r->cpu_mems))
    return an_error_set(err, EINVAL, F "cpu.mems: \"%s\" is not a node list", r->cpu_mems);
  if (r->has_pids_limit && r->pids_limit < -1)
    return an_error_set(err, EINVAL, F "pids.limit: %" PRId64 " (positive, or -1/0 unlimited)",
                        r->pids_limit);
  int ret;
  if (r->has_blkio_weight && (ret = check_weight(r->blkio_weight, "blockIO.weight", err)) < 0) return ret;
  if (r->has_blkio_leaf_weight &&
      (ret = check_weight(r->blkio_leaf_weight, "blockIO.leafWeight", err)) < 0) return ret;
  for (size_t i = 0; i < r->n_blkio_weight_device; i++) {
    const struct an_spec_weight_device *w = &r->blkio_weight_device[i];
    if (w->major < 0 || w->minor < 0 || w->major > INT32_MAX || w->minor > INT32_MAX)
      return an_error_set(err, EINVAL, F "blockIO.weightDevice[%zu]: bad device", i);
    if (w->has_weight && (ret = check_weight(w->weight, "blockIO.weightDevice[].weight", err)) < 0)
      return ret;
  }
  if ((ret = check_throttle(r->blkio_throttle_read_bps, r->n_blkio_throttle_read_bps,
                            "throttleReadBpsDevice", err)) < 0 ||
      (ret = check_throttle(r->blkio_throttle_write_bps, r->n_blkio_throttle_write_bps,
                            "throttleWriteBpsDevice", err)) < 0 ||
      (ret = check_throttle(r->blkio_throttle_read_iops, r->n_blkio_throttle_read_iops,
                            "throttleReadIOPSDevice", err)) < 0 ||
      (ret = check_throttle(r->blkio_throttle_write_iops, r->n_blkio_throttle_write_iops,
                            "throttleWriteIOPSDevice", err)) < 0)
    return ret;
  for (size_t i = 0; i < r->n_hugepage_limits; i++)
    if (!r->hugepage_limits[i].page_size || !is_page_size(r->hugepage_limits[i].page_size))
      return an_error_set(err, EINVAL, F "hugepageLimits[%zu].pageSize: \"%s\" is not like \"2MB\"",
                          i, r->hugepage_limits[i].page_size ? r->hugepage_limits[i].page_size : "");
  for (size_t i = 0; i < r->n_devices; i++) {
    const struct an_spec_device_cgroup *d = &r->devices[i];
    if (d->type != 'a' && d->type != 'c' && d->type != 'b')
      return an_error_set(err, EINVAL, F "devices[%zu].type: '%c' is not a, b or c", i, d->type);
    if ((ret = check_devnum(d->major, "devices.major", i, err)) < 0 ||
        (ret = check_devnum(d->minor, "devices.minor", i, err)) < 0)
      return ret;
    if (d->access && (!*d->access || strspn(d->access, "rwm") != strlen(d->access)))
      return an_error_set(err, EINVAL, F "devices[%zu].access: \"%s\" is not a subset of \"rwm\"",
                          i, d->access);
  }
  for (size_t i = 0; i < r->n_unified; i++) {
    if ((ret = check_unified_key(r->unified[i].key, i, err)) < 0) return ret;
    if (!r->unified[i].value)
      return an_error_set(err, EINVAL, F "unified[%zu]: \"%s\" has no value", i, r->unified[i].key);
  }
  return 0;
}

uint32_t an_cg_wanted_ctrls(const struct an_spec_resources *r, bool with_devices) {
  uint32_t w = with_devices ? AN_CG_BIT(AN_CG_DEVICES) : 0;
  if (!r) return w;
  if ((r->has_memory_limit && r->memory_limit != 0) || r->has_memory_reservation ||
      (r->has_memory_swap && r->memory_swap != 0) || r->has_memory_swappiness ||
      (r->has_disable_oom_killer && r->disable_oom_killer))
    w |= AN_CG_BIT(AN_CG_MEMORY);
  if ((r->has_cpu_shares && r->cpu_shares) || (r->has_cpu_quota && r->cpu_quota) ||
      (r->has_cpu_period && r->cpu_period) || (r->has_cpu_realtime_runtime && r->cpu_realtime_runtime) ||
      (r->has_cpu_realtime_period && r->cpu_realtime_period) || r->has_cpu_idle)
    w |= AN_CG_BIT(AN_CG_CPU);
  if ((r->cpu_cpus && *r->cpu_cpus) || (r->cpu_mems && *r->cpu_mems)) w |= AN_CG_BIT(AN_CG_CPUSET);
  if (r->has_pids_limit && r->pids_limit != 0) w |= AN_CG_BIT(AN_CG_PIDS);
  if ((r->has_blkio_weight && r->blkio_weight) || (r->has_blkio_leaf_weight && r->blkio_leaf_weight) ||
      r->n_blkio_weight_device || r->n_blkio_throttle_read_bps || r->n_blkio_throttle_write_bps ||
      r->n_blkio_throttle_read_iops || r->n_blkio_throttle_write_iops)
    w |= AN_CG_BIT(AN_CG_IO);
  if (r->n_hugepage_limits) w |= AN_CG_BIT(AN_CG_HUGETLB);
  if (r->n_devices) w |= AN_CG_BIT(AN_CG_DEVICES);
  for (size_t i = 0; i < r->n_unified; i++) {
    const char *k = r->unified[i].key;
    size_t len = k ? strcspn(k, ".") : 0;
    for (int c = 0; c < AN_CG__COUNT; c++) {
      const char *n = an_cg_ctrl_v2_name(c);
      if (n && strlen(n) == len && !strncmp(n, k, len)) w |= AN_CG_BIT(c);
    }
  }
  return w;
}
