/* engine/cgroup_v2_hugetlb.c — linux.resources.hugepageLimits on the
 * cgroup v2 hugetlb controller (cgroup-v2.rst "HugeTLB"): each
 * limit to hugetlb.<pageSize>.max.  A page size the kernel does not
 * offer (no such file) fails closed, naming it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include "engine/cgroup_internal.h"

int an_cg_v2_hugetlb_apply(const char *dir, const struct an_spec_resources *r, an_error_t *err) {
  for (size_t i = 0; i < r->n_hugepage_limits; i++) {
    char file[64];
    snprintf(file, sizeof file, "hugetlb.%s.max", r->hugepage_limits[i].page_size);
    if (!an_cg_file_exists(dir, file))
      return an_error_set(err, EOPNOTSUPP, "linux.resources.hugepageLimits[%zu]: page size %s "
                          "not offered (no %s/%s)", i, r->hugepage_limits[i].page_size, dir, file);
    int ret = an_cg_writef(err, dir, file, "%" PRIu64, r->hugepage_limits[i].limit);
    if (ret < 0) return ret;
  }
  return 0;
}
