/* engine/cgroup_hugetlb.c — linux.resources.hugepageLimits on the hugetlb
 * controller: each limit to hugetlb.<pageSize>.max on cgroup v2
 * (cgroup-v2.rst "HugeTLB") or hugetlb.<pageSize>.limit_in_bytes on v1
 * (cgroup-v1/hugetlb.rst).  A page size the kernel does not offer (no such
 * file) fails closed, naming it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include "engine/cgroup_internal.h"

int an_cg_hugetlb_apply(const char *dir, int version, const struct an_spec_resources *r,
                        an_error_t *err) {
  const char *limit = version == 2 ? "max" : "limit_in_bytes";
  for (size_t i = 0; i < r->n_hugepage_limits; i++) {
    char file[96];
    snprintf(file, sizeof file, "hugetlb.%s.%s", r->hugepage_limits[i].page_size, limit);
    if (!an_cg_file_exists(dir, file))
      return an_error_set(err, EOPNOTSUPP, "linux.resources.hugepageLimits[%zu]: page size %s "
                          "not offered (no %s/%s)", i, r->hugepage_limits[i].page_size, dir, file);
    int ret = an_cg_writef(err, dir, file, "%" PRIu64, r->hugepage_limits[i].limit);
    if (ret < 0) return ret;
  }
  return 0;
}
