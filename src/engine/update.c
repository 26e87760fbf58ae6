/* engine/update.c — `update` (runc's extra operation): new resource limits
 * for a live container, written to its cgroup and merged into the config
 * kept in its state directory, so that later reads and execs see them.
 * What does NOT live here: the cgroup writers (cgroup*.c), parsing the
 * LinuxResources JSON (spec_parse_resources.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agentnest/cgroup.h"
#include "engine/container_internal.h"
#include "engine/state.h"
#include "util/cleanup.h"

/* Copy `n` elements of `size` bytes (plain data). */
static int dup_array(const void *src, size_t n, size_t size, void **out) {
  void *p = NULL;
  if (n) {
    p = malloc(n * size);
    if (!p) return -ENOMEM;
    memcpy(p, src, n * size);
  }
  *out = p;
  return 0;
}

static int dup_str(const char *s, char **out) {
  char *c = s ? strdup(s) : NULL;
  if (s && !c) return -ENOMEM;
  free(*out);
  *out = c;
  return 0;
}

#define MERGE(f)                                                                               \
  do {                                                                                         \
    if (d->has_##f) { dst->has_##f = true; dst->f = d->f; }                                    \
  } while (0)

/* Replace a plain-data array of dst by d's when d has one. */
#define MERGE_ARRAY(f)                                                                         \
  do {                                                                                         \
    if (d->n_##f) {                                                                            \
      void *copy = NULL;                                                                       \
      if (dup_array(d->f, d->n_##f, sizeof *d->f, &copy) < 0) return -ENOMEM;                  \
      free(dst->f);                                                                            \
      dst->f = copy;                                                                           \
      dst->n_##f = d->n_##f;                                                                   \
    }                                                                                          \
  } while (0)

/* dst: the stored resources; d: what update sets.  Errors: -ENOMEM (dst
 * then partly merged, never written). */
static int merge_resources(struct an_spec_resources *dst, const struct an_spec_resources *d) {
  MERGE(memory_limit); MERGE(memory_reservation); MERGE(memory_swap); MERGE(memory_kernel);
  MERGE(memory_swappiness); MERGE(disable_oom_killer);
  MERGE(cpu_shares); MERGE(cpu_quota); MERGE(cpu_period); MERGE(cpu_realtime_runtime);
  MERGE(cpu_realtime_period); MERGE(cpu_idle);
  MERGE(pids_limit); MERGE(blkio_weight); MERGE(blkio_leaf_weight);
  if (d->cpu_cpus && dup_str(d->cpu_cpus, &dst->cpu_cpus) < 0) return -ENOMEM;
  if (d->cpu_mems && dup_str(d->cpu_mems, &dst->cpu_mems) < 0) return -ENOMEM;
  MERGE_ARRAY(blkio_weight_device);
  MERGE_ARRAY(blkio_throttle_read_bps);
  MERGE_ARRAY(blkio_throttle_write_bps);
  MERGE_ARRAY(blkio_throttle_read_iops);
  MERGE_ARRAY(blkio_throttle_write_iops);
  if (d->n_devices) {
    struct an_spec_device_cgroup *v = calloc(d->n_devices, sizeof *v);
    if (!v) return -ENOMEM;
    for (size_t i = 0; i < d->n_devices; i++) {
      v[i] = d->devices[i];
      v[i].access = NULL;
      if (dup_str(d->devices[i].access, &v[i].access) < 0) {
        for (size_t k = 0; k < i; k++) free(v[k].access);
        free(v);
        return -ENOMEM;
      }
    }
    for (size_t i = 0; i < dst->n_devices; i++) free(dst->devices[i].access);
    free(dst->devices);
    dst->devices = v;
    dst->n_devices = d->n_devices;
  }
  /* hugepage limits and unified files: by key, replaced or added */
  for (size_t i = 0; i < d->n_hugepage_limits; i++) {
    const struct an_spec_hugepage_limit *h = &d->hugepage_limits[i];
    size_t k = 0;
    while (k < dst->n_hugepage_limits && strcmp(dst->hugepage_limits[k].page_size, h->page_size))
      k++;
    if (k == dst->n_hugepage_limits) {
      struct an_spec_hugepage_limit *t =
          realloc(dst->hugepage_limits, (k + 1) * sizeof *t);
      if (!t) return -ENOMEM;
      dst->hugepage_limits = t;
      t[k].page_size = strdup(h->page_size);
      if (!t[k].page_size) return -ENOMEM;
      dst->n_hugepage_limits++;
    }
    dst->hugepage_limits[k].limit = h->limit;
  }
  for (size_t i = 0; i < d->n_unified; i++) {
    const struct an_spec_key_value *u = &d->unified[i];
    size_t k = 0;
    while (k < dst->n_unified && strcmp(dst->unified[k].key, u->key)) k++;
    if (k == dst->n_unified) {
      struct an_spec_key_value *t = realloc(dst->unified, (k + 1) * sizeof *t);
      if (!t) return -ENOMEM;
      dst->unified = t;
      t[k].key = strdup(u->key);
      t[k].value = NULL;
      if (!t[k].key) return -ENOMEM;
      dst->n_unified++;
    }
    if (dup_str(u->value, &dst->unified[k].value) < 0) return -ENOMEM;
  }
  return 0;
}

int an_container_update(const char *state_root, const char *id,
                        const struct an_spec_resources *res, an_error_t *err) {
  if (!res) return an_error_set(err, EINVAL, "update container %s: no resources", id);
  cleanup_close int dirfd = -1;
  struct an_container_state *st = NULL;
  int r = an_container_load(state_root, id, &dirfd, &st, NULL, err);
  if (r < 0) return r;
  struct an_spec *spec = NULL;
  struct an_cgroup *cg = NULL;
  if (st->status == AN_STATUS_STOPPED) {
    r = an_error_set(err, ESRCH, "container not running");
    goto out;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d/%s", (int) dirfd, AN_STATE_CONFIG);
  if ((r = an_spec_load_file(path, &spec, err)) < 0) goto out;
  if (!st->cgroup_path) {
    r = an_error_set(err, ENOENT, "no cgroup recorded");
    goto out;
  }
  if ((r = an_cgroup_open(st->cgroup_path, &cg, err)) < 0) goto out;
  if ((r = an_cgroup_apply(cg, res, err)) < 0) goto out;
  if (!spec->linux.resources && !(spec->linux.resources = calloc(1, sizeof *spec->linux.resources))) {
    r = an_error_set(err, ENOMEM, "update");
    goto out;
  }
  if (merge_resources(spec->linux.resources, res) < 0) {
    r = an_error_set(err, ENOMEM, "update");
    goto out;
  }
  {
    cleanup_free char *json = NULL;
    if ((r = an_spec_to_json(spec, &json, err)) == 0)
      r = an_state_write_file(dirfd, AN_STATE_CONFIG, json, strlen(json), err);
  }
out:
  an_cgroup_free(cg);
  an_spec_free(spec);
  an_container_state_free(st);
  return r < 0 ? an_error_prefix(err, "update container %s", id) : 0;
}
