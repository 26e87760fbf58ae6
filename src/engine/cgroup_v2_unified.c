/* engine/cgroup_v2_unified.c — linux.resources.unified (runtime-spec
 * config-linux.md "Unified"): each key is a cgroup v2 interface file of
 * the container's cgroup, written with its value as is.  Keys were checked
 * to be plain file names (cgroup_validate.c) and their controllers to be
 * in the cgroup2 hierarchy (cgroup.c); a key the kernel does not know fails
 * with ENOENT naming it. */
#include <errno.h>
#include "engine/cgroup_internal.h"

int an_cg_v2_unified_apply(const char *dir, const struct an_spec_resources *r, an_error_t *err) {
  for (size_t i = 0; i < r->n_unified; i++) {
    if (!an_cg_file_exists(dir, r->unified[i].key))
      return an_error_set(err, EOPNOTSUPP, "linux.resources.unified: no cgroup file %s/%s", dir,
                          r->unified[i].key);
    int ret = an_cg_write(dir, r->unified[i].key, r->unified[i].value, err);
    if (ret < 0) return an_error_prefix(err, "linux.resources.unified[%zu]", i);
  }
  return 0;
}
