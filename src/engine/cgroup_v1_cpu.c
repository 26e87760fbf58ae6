/* engine/cgroup_v1_cpu.c — linux.resources.cpu on the v1 cpu and cpuacct
 * controllers (cgroup-v1 and scheduler/sched-bwc.rst, sched-rt-group.rst):
 * shares -> cpu.shares, period/quota -> cpu.cfs_period_us /
 * cpu.cfs_quota_us, realtimePeriod/Runtime -> cpu.rt_period_us /
 * cpu.rt_runtime_us, idle -> cpu.idle.  cpuacct only accounts: nothing to
 * write, the directory exists so that usage is counted per container. */
#include <errno.h>
#include <inttypes.h>
#include "engine/cgroup_internal.h"

static int need_file(const char *dir, const char *file, const char *field, an_error_t *err) {
  if (an_cg_file_exists(dir, file)) return 0;
  return an_error_set(err, EOPNOTSUPP, "linux.resources.cpu.%s: %s/%s does not exist on this kernel",
                      field, dir, file);
}

int an_cg_v1_cpu_apply(const char *dir, const char *cpuacct_dir, const struct an_spec_resources *r,
                       an_error_t *err) {
  (void) cpuacct_dir;
  int ret;
  if (r->has_cpu_shares && r->cpu_shares &&
      (ret = an_cg_writef(err, dir, "cpu.shares", "%" PRIu64, r->cpu_shares)) < 0)
    return ret;
  bool period = r->has_cpu_period && r->cpu_period, quota = r->has_cpu_quota && r->cpu_quota;
  if (period) {
    /* A new period can clash with the old quota's bandwidth: on EINVAL
     * write the quota first, then the period (as runc does). */
    an_error_t e = NULL;
    ret = an_cg_writef(&e, dir, "cpu.cfs_period_us", "%" PRIu64, r->cpu_period);
    if (ret == -EINVAL && quota) {
      an_error_free(&e);
      if ((ret = an_cg_writef(err, dir, "cpu.cfs_quota_us", "%" PRId64, r->cpu_quota)) < 0) return ret;
      ret = an_cg_writef(err, dir, "cpu.cfs_period_us", "%" PRIu64, r->cpu_period);
    } else if (ret < 0) {
      if (err && !*err) *err = e; else an_error_free(&e);
    }
    if (ret < 0) return ret;
  }
  if (quota && (ret = an_cg_writef(err, dir, "cpu.cfs_quota_us", "%" PRId64, r->cpu_quota)) < 0)
    return ret;
  if (r->has_cpu_realtime_period && r->cpu_realtime_period) {
    if ((ret = need_file(dir, "cpu.rt_period_us", "realtimePeriod", err)) < 0 ||
        (ret = an_cg_writef(err, dir, "cpu.rt_period_us", "%" PRIu64, r->cpu_realtime_period)) < 0)
      return ret;
  }
  if (r->has_cpu_realtime_runtime && r->cpu_realtime_runtime) {
    if ((ret = need_file(dir, "cpu.rt_runtime_us", "realtimeRuntime", err)) < 0 ||
        (ret = an_cg_writef(err, dir, "cpu.rt_runtime_us", "%" PRId64, r->cpu_realtime_runtime)) < 0)
      return ret;
  }
  if (r->has_cpu_idle) {
    if ((ret = need_file(dir, "cpu.idle", "idle", err)) < 0 ||
        (ret = an_cg_writef(err, dir, "cpu.idle", "%" PRId64, r->cpu_idle)) < 0)
      return ret;
  }
  return 0;
}
