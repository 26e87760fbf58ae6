/* engine/cgroup_v1_freezer.c — the v1 freezer controller
 * (cgroup-v1/freezer-subsystem.rst): write FROZEN / THAWED to
 * freezer.state and wait until it reads back so (FREEZING is transient);
 * a thaw of a cgroup whose ancestor is frozen ends once its own freeze is
 * lifted (freezer.self_freezing 0, parent_freezing 1). */
#include <errno.h>
#include <string.h>
#include <time.h>
#include "engine/cgroup_internal.h"
#include "util/cleanup.h"

static bool own_freeze_lifted(const char *dir) {
  cleanup_free char *self = NULL, *parent = NULL;
  an_error_t e = NULL;
  bool lifted = an_cg_read(dir, "freezer.self_freezing", &self, &e) == 0 && self[0] == '0' &&
                an_cg_read(dir, "freezer.parent_freezing", &parent, &e) == 0 && parent[0] == '1';
  an_error_free(&e);
  return lifted;
}

int an_cg_v1_freezer_set(const char *dir, bool frozen, an_error_t *err) {
  const char *want = frozen ? "FROZEN" : "THAWED";
  int r = an_cg_write(dir, "freezer.state", want, err);
  if (r < 0) return r;
  long waited = 0, step = 1;
  for (;;) {
    cleanup_free char *s = NULL;
    if ((r = an_cg_read(dir, "freezer.state", &s, err)) < 0) return r;
    if (!strncmp(s, want, strlen(want))) return 0;
    /* thawed itself, frozen still by a frozen ancestor: that one's thaw
     * is its owner's (freezer.parent_freezing) */
    if (!frozen && own_freeze_lifted(dir)) return 0;
    if (waited >= 5000)
      return an_error_set(err, ETIMEDOUT, "%s/freezer.state: not %s after 5000 ms", dir, want);
    /* Re-writing FROZEN retries tasks that could not be frozen yet. */
    if (frozen && (r = an_cg_write(dir, "freezer.state", want, err)) < 0) return r;
    struct timespec ts = {0, step * 1000000L};
    nanosleep(&ts, NULL);
    waited += step;
    if (step < 20) step *= 2;
  }
}
