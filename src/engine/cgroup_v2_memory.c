/* engine/cgroup_v2_memory.c — linux.resources.memory on the cgroup v2
 * memory controller (cgroup-v2.rst "Memory"): limit -> memory.max,
 * reservation -> memory.low, swap (memory+swap in the spec) ->
 * memory.swap.max = swap - limit (runc ConvertMemorySwapToCgroupV2Value).
 * swappiness has no v2 file and is ignored (as runc does); kernel is
 * deprecated and ignored; disableOOMKiller has no v2 equivalent and fails
 * closed. */
#include <errno.h>
#include <inttypes.h>
#include "engine/cgroup_internal.h"

static int write_max(const char *dir, const char *file, int64_t v, an_error_t *err) {
  if (v < 0) return an_cg_write(dir, file, "max", err);
  return an_cg_writef(err, dir, file, "%" PRId64, v);
}

int an_cg_v2_memory_apply(const char *dir, const struct an_spec_resources *r, an_error_t *err) {
  int ret;
  if (r->has_disable_oom_killer && r->disable_oom_killer)
    return an_error_set(err, EOPNOTSUPP, "linux.resources.memory.disableOOMKiller: not supported "
                        "by cgroup v2");
  int64_t limit = r->has_memory_limit ? r->memory_limit : 0;
  int64_t swap = r->has_memory_swap ? r->memory_swap : 0;
  /* runc: unlimited memory with swap unset means unlimited swap too. */
  bool set_swap = true;
  int64_t swap_max;
  if (limit == -1 && swap == 0) swap_max = -1;
  else if (swap == -1) swap_max = -1;
  else if (swap == 0) set_swap = false, swap_max = 0;
  else swap_max = swap - limit;                     /* validated: swap >= limit > 0 */
  if (set_swap && !an_cg_file_exists(dir, "memory.swap.max")) {
    if (swap_max == 0 && !an_cg_host_has_swap()) set_swap = false;
    else
      return an_error_set(err, EOPNOTSUPP, "linux.resources.memory.swap: %s has no memory.swap.max",
                          dir);
  }
  /* Lowering the limit with swap already set or raising both: order is
   * free on v2 (the two files are independent). */
  if (limit != 0 && (ret = write_max(dir, "memory.max", limit, err)) < 0) return ret;
  if (set_swap && (ret = write_max(dir, "memory.swap.max", swap_max, err)) < 0) return ret;
  if (r->has_memory_reservation &&
      (ret = write_max(dir, "memory.low", r->memory_reservation, err)) < 0)
    return ret;
  return 0;
}
