/* engine/cgroup_v2_cpu.c — linux.resources.cpu on the cgroup v2 cpu
 * controller (cgroup-v2.rst "CPU"): shares -> cpu.weight with runc's
 * conversion, quota/period -> cpu.max "$QUOTA $PERIOD" ("max" when the
 * quota is -1 or unset), idle -> cpu.idle.  Realtime bandwidth has no v2
 * interface: asking for it fails closed. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include "engine/cgroup_internal.h"

/* runc libcontainer/cgroups ConvertCPUSharesToCgroupV2Value: maps
 * [2, 262144] linearly onto [1, 10000]; 0 means unset. */
uint64_t an_cg_shares_to_weight(uint64_t shares) {
  if (shares == 0) return 0;
  return 1 + ((shares - 2) * 9999) / 262142;
}

int an_cg_v2_cpu_apply(const char *dir, const struct an_spec_resources *r, an_error_t *err) {
  int ret;
  if ((r->has_cpu_realtime_period && r->cpu_realtime_period) ||
      (r->has_cpu_realtime_runtime && r->cpu_realtime_runtime))
    return an_error_set(err, EOPNOTSUPP, "linux.resources.cpu.realtimeRuntime/realtimePeriod: "
                        "not supported by cgroup v2");
  if (r->has_cpu_shares && r->cpu_shares &&
      (ret = an_cg_writef(err, dir, "cpu.weight", "%" PRIu64, an_cg_shares_to_weight(r->cpu_shares))) < 0)
    return ret;
  bool period = r->has_cpu_period && r->cpu_period, quota = r->has_cpu_quota && r->cpu_quota;
  if (period || quota) {
    char q[32] = "max";
    if (quota && r->cpu_quota > 0) snprintf(q, sizeof q, "%" PRId64, r->cpu_quota);
    if (period) ret = an_cg_writef(err, dir, "cpu.max", "%s %" PRIu64, q, r->cpu_period);
    else ret = an_cg_write(dir, "cpu.max", q, err);
    if (ret < 0) return ret;
  }
  if (r->has_cpu_idle) {
    if (!an_cg_file_exists(dir, "cpu.idle"))
      return an_error_set(err, EOPNOTSUPP, "linux.resources.cpu.idle: no %s/cpu.idle", dir);
    if ((ret = an_cg_writef(err, dir, "cpu.idle", "%" PRId64, r->cpu_idle)) < 0) return ret;
  }
  return 0;
}
