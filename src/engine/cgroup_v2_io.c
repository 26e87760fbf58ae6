/* engine/cgroup_v2_io.c — linux.resources.blockIO on the cgroup v2 io
 * controller (cgroup-v2.rst "IO"): weights convert from the blkio range
 * 10..1000 to io.weight's 1..10000 (runc ConvertBlkIOToIOWeightValue) and
 * go to io.bfq.weight / io.weight; throttles go to io.max as
 * "MAJ:MIN rbps=N" etc.  leafWeight has no v2 equivalent and fails closed. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include "engine/cgroup_internal.h"

uint64_t an_cg_blkio_weight_to_io_weight(uint64_t w) {
  if (w == 0) return 0;
  return 1 + (w - 10) * 9999 / 990;
}

static int io_max(const char *dir, const char *key, const struct an_spec_throttle_device *t, size_t n,
                  an_error_t *err) {
  for (size_t i = 0; i < n; i++) {
    int r = an_cg_writef(err, dir, "io.max", "%" PRId64 ":%" PRId64 " %s=%" PRIu64, t[i].major,
                         t[i].minor, key, t[i].rate);
    if (r < 0) return r;
  }
  return 0;
}

/* BFQ takes the blkio range as is; io.weight the converted one. */
static int write_weight(const char *dir, const char *dev, uint64_t w, an_error_t *err) {
  if (an_cg_file_exists(dir, "io.bfq.weight"))
    return an_cg_writef(err, dir, "io.bfq.weight", "%s%" PRIu64, dev, w);
  if (an_cg_file_exists(dir, "io.weight"))
    return an_cg_writef(err, dir, "io.weight", "%s%" PRIu64, dev, an_cg_blkio_weight_to_io_weight(w));
  return an_error_set(err, EOPNOTSUPP, "linux.resources.blockIO.weight: %s has no io.weight", dir);
}

int an_cg_v2_io_apply(const char *dir, const struct an_spec_resources *r, an_error_t *err) {
  int ret;
  if (r->has_blkio_leaf_weight && r->blkio_leaf_weight)
    return an_error_set(err, EOPNOTSUPP, "linux.resources.blockIO.leafWeight: not supported by cgroup v2");
  if (r->has_blkio_weight && r->blkio_weight &&
      (ret = write_weight(dir, "default ", r->blkio_weight, err)) < 0)
    return ret;
  for (size_t i = 0; i < r->n_blkio_weight_device; i++) {
    const struct an_spec_weight_device *w = &r->blkio_weight_device[i];
    if (!w->has_weight) continue;
    char dev[64];
    snprintf(dev, sizeof dev, "%" PRId64 ":%" PRId64 " ", w->major, w->minor);
    if ((ret = write_weight(dir, dev, w->weight, err)) < 0) return ret;
  }
  if ((ret = io_max(dir, "rbps", r->blkio_throttle_read_bps, r->n_blkio_throttle_read_bps, err)) < 0 ||
      (ret = io_max(dir, "wbps", r->blkio_throttle_write_bps, r->n_blkio_throttle_write_bps, err)) < 0 ||
      (ret = io_max(dir, "riops", r->blkio_throttle_read_iops, r->n_blkio_throttle_read_iops, err)) < 0 ||
      (ret = io_max(dir, "wiops", r->blkio_throttle_write_iops, r->n_blkio_throttle_write_iops, err)) < 0)
    return ret;
  return 0;
}
