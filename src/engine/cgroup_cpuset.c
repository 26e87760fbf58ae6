/* engine/cgroup_cpuset.c — the cpuset controller.  linux.resources.cpu.cpus
 * and .mems are written as given to cpuset.cpus and cpuset.mems, which both
 * versions name alike (cgroup-v2.rst "Cpuset", cgroup-v1/cpusets.rst).  On
 * v2 an empty value means "inherit the parent's"; a new v1 cpuset instead has
 * empty cpuset.cpus and cpuset.mems and then refuses tasks (ENOSPC), so on v1
 * every level the runtime uses first gets its parent's values when empty. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "engine/cgroup_internal.h"
#include "util/cleanup.h"

static bool blank(const char *s) { return strspn(s, " \n") == strlen(s); }

static int copy_if_empty(const char *dir, const char *parent, const char *file, an_error_t *err) {
  cleanup_free char *cur = NULL, *up = NULL;
  int r = an_cg_read(dir, file, &cur, err);
  if (r < 0) return r;
  if (!blank(cur)) return 0;
  if ((r = an_cg_read(parent, file, &up, err)) < 0) return r;
  up[strcspn(up, "\n")] = '\0';
  if (!*up) return an_error_set(err, ENOSPC, "%s/%s: parent has none to copy", dir, file);
  return an_cg_write(dir, file, up, err);
}

int an_cg_v1_cpuset_init(const char *dir, an_error_t *err) {
  cleanup_free char *parent = strdup(dir);
  if (!parent) return an_error_set(err, ENOMEM, "cgroup path");
  char *slash = strrchr(parent, '/');
  if (!slash || slash == parent) return an_error_set(err, EINVAL, "cpuset %s has no parent", dir);
  *slash = '\0';
  int r = copy_if_empty(dir, parent, "cpuset.cpus", err);
  if (r < 0) return r;
  return copy_if_empty(dir, parent, "cpuset.mems", err);
}

int an_cg_cpuset_apply(const char *dir, const struct an_spec_resources *r, an_error_t *err) {
  int ret;
  if (r->cpu_cpus && *r->cpu_cpus && (ret = an_cg_write(dir, "cpuset.cpus", r->cpu_cpus, err)) < 0)
    return ret;
  if (r->cpu_mems && *r->cpu_mems && (ret = an_cg_write(dir, "cpuset.mems", r->cpu_mems, err)) < 0)
    return ret;
  return 0;
}
