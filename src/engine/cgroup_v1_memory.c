/* engine/cgroup_v1_memory.c — linux.resources.memory on the v1 memory
 * controller (Documentation/admin-guide/cgroup-v1/memory.rst): limit ->
 * memory.limit_in_bytes, swap (memory+swap, as the spec defines it) ->
 * memory.memsw.limit_in_bytes, reservation -> memory.soft_limit_in_bytes,
 * swappiness, disableOOMKiller -> memory.oom_control.  kernel (deprecated
 * by runtime-spec 1.1, gone from kernels >= 6.1) is ignored. */
#include <errno.h>
#include <inttypes.h>
#include "engine/cgroup_internal.h"

static int write_i64(const char *dir, const char *file, int64_t v, an_error_t *err) {
  return an_cg_writef(err, dir, file, "%" PRId64, v);
}

int an_cg_v1_memory_apply(const char *dir, const struct an_spec_resources *r, an_error_t *err) {
  int ret;
  bool limit = r->has_memory_limit && r->memory_limit != 0;
  bool swap = r->has_memory_swap && r->memory_swap != 0;
  if (swap && !an_cg_file_exists(dir, "memory.memsw.limit_in_bytes")) {
    /* No swap accounting: "no swap" (swap == limit) still holds when the host has no swap. */
    if (r->memory_swap == r->memory_limit && !an_cg_host_has_swap()) swap = false;
    else
      return an_error_set(err, EOPNOTSUPP, "linux.resources.memory.swap: %s has no "
                          "memory.memsw.limit_in_bytes (swap accounting off)", dir);
  }
  if (limit) {
    /* memory.limit_in_bytes must stay <= memsw: raising both needs memsw
     * first, lowering needs the limit first.  Try the limit, on EINVAL
     * write memsw first. */
    an_error_t e = NULL;
    ret = write_i64(dir, "memory.limit_in_bytes", r->memory_limit, &e);
    if (ret == -EINVAL && swap) {
      an_error_free(&e);
      if ((ret = write_i64(dir, "memory.memsw.limit_in_bytes", r->memory_swap, err)) < 0) return ret;
      ret = write_i64(dir, "memory.limit_in_bytes", r->memory_limit, err);
    } else if (ret < 0) {
      if (err && !*err) *err = e; else an_error_free(&e);
    }
    if (ret < 0) return ret;
  }
  if (swap && (ret = write_i64(dir, "memory.memsw.limit_in_bytes", r->memory_swap, err)) < 0) return ret;
  if (r->has_memory_reservation &&
      (ret = write_i64(dir, "memory.soft_limit_in_bytes", r->memory_reservation, err)) < 0)
    return ret;
  if (r->has_memory_swappiness &&
      (ret = an_cg_writef(err, dir, "memory.swappiness", "%" PRIu64, r->memory_swappiness)) < 0)
    return ret;
  if (r->has_disable_oom_killer &&
      (ret = an_cg_write(dir, "memory.oom_control", r->disable_oom_killer ? "1" : "0", err)) < 0)
    return ret;
  return 0;
}
