/* engine/cgroup_v1_blkio.c — linux.resources.blockIO on the v1 blkio
 * controller (cgroup-v1/blkio-controller.rst): weight / leafWeight /
 * weightDevice -> blkio.weight, blkio.leaf_weight, blkio.weight_device
 * (or the blkio.bfq.* files when BFQ provides them), throttle* ->
 * blkio.throttle.{read,write}_{bps,iops}_device.  A weight asked for on a
 * kernel without a weight file fails closed. */
#include <errno.h>
#include <inttypes.h>
#include "engine/cgroup_internal.h"

static const char *weight_file(const char *dir, const char *cfq, const char *bfq) {
  if (an_cg_file_exists(dir, cfq)) return cfq;
  if (bfq && an_cg_file_exists(dir, bfq)) return bfq;
  return NULL;
}

static int throttle(const char *dir, const char *file, const struct an_spec_throttle_device *t,
                    size_t n, an_error_t *err) {
  for (size_t i = 0; i < n; i++) {
    int r = an_cg_writef(err, dir, file, "%" PRId64 ":%" PRId64 " %" PRIu64, t[i].major, t[i].minor,
                         t[i].rate);
    if (r < 0) return r;
  }
  return 0;
}

int an_cg_v1_blkio_apply(const char *dir, const struct an_spec_resources *r, an_error_t *err) {
  int ret;
  const char *f;
  if (r->has_blkio_weight && r->blkio_weight) {
    if (!(f = weight_file(dir, "blkio.weight", "blkio.bfq.weight")))
      return an_error_set(err, EOPNOTSUPP, "linux.resources.blockIO.weight: %s has no blkio.weight "
                          "(no CFQ/BFQ scheduler)", dir);
    if ((ret = an_cg_writef(err, dir, f, "%u", (unsigned) r->blkio_weight)) < 0) return ret;
  }
  if (r->has_blkio_leaf_weight && r->blkio_leaf_weight) {
    if (!(f = weight_file(dir, "blkio.leaf_weight", NULL)))
      return an_error_set(err, EOPNOTSUPP, "linux.resources.blockIO.leafWeight: %s has no "
                          "blkio.leaf_weight", dir);
    if ((ret = an_cg_writef(err, dir, f, "%u", (unsigned) r->blkio_leaf_weight)) < 0) return ret;
  }
  for (size_t i = 0; i < r->n_blkio_weight_device; i++) {
    const struct an_spec_weight_device *w = &r->blkio_weight_device[i];
    if (!w->has_weight) continue;
    if (!(f = weight_file(dir, "blkio.weight_device", "blkio.bfq.weight_device")))
      return an_error_set(err, EOPNOTSUPP, "linux.resources.blockIO.weightDevice: %s has no "
                          "blkio.weight_device", dir);
    if ((ret = an_cg_writef(err, dir, f, "%" PRId64 ":%" PRId64 " %u", w->major, w->minor,
                            (unsigned) w->weight)) < 0)
      return ret;
  }
  if ((ret = throttle(dir, "blkio.throttle.read_bps_device", r->blkio_throttle_read_bps,
                      r->n_blkio_throttle_read_bps, err)) < 0 ||
      (ret = throttle(dir, "blkio.throttle.write_bps_device", r->blkio_throttle_write_bps,
                      r->n_blkio_throttle_write_bps, err)) < 0 ||
      (ret = throttle(dir, "blkio.throttle.read_iops_device", r->blkio_throttle_read_iops,
                      r->n_blkio_throttle_read_iops, err)) < 0 ||
      (ret = throttle(dir, "blkio.throttle.write_iops_device", r->blkio_throttle_write_iops,
                      r->n_blkio_throttle_write_iops, err)) < 0)
    return ret;
  return 0;
}
