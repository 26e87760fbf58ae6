/* engine/cgroup_view.c — the container's own cgroup at /sys/fs/cgroup (see
 * cgroup_view.h; open_tree(2), fsmount(2), move_mount(2)). */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "engine/cgroup_internal.h"
#include "engine/cgroup_view.h"
#include "engine/mount.h"
#include "util/cleanup.h"

/* A detached bind of `dir` (the container's cgroup in one hierarchy). */
static int bind_own_dir(const char *dir, uint64_t attrs, int *mnt, an_error_t *err) {
  cleanup_close int src = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (src < 0) return an_error_set(err, errno, "cgroup view: open %s", dir);
  int r = an_mount_clone_fd(src, false, attrs, 0, mnt, err);
  return r < 0 ? an_error_prefix(err, "cgroup view: bind %s", dir) : 0;
}

static int hierarchy_dir(int tmpfs_fd, const char *name, int *fd, an_error_t *err) {
  if (mkdirat(tmpfs_fd, name, 0755) < 0 && errno != EEXIST)
    return an_error_set(err, errno, "cgroup view: mkdir %s", name);
  struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                         .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS};
  int d = (int) syscall(SYS_openat2, tmpfs_fd, name, &how, sizeof how);
  if (d < 0) return an_error_set(err, errno, "cgroup view: open %s", name);
  *fd = d;
  return 0;
}

int an_cgroup_view_mount(const struct an_cgroup *cg, int target_fd, bool own_cgroupns,
                         uint64_t attrs, an_error_t *err) {
  const struct an_cg_layout *l = &cg->l;
  cleanup_close int mnt = -1;
  int r;
  if (l->layout == AN_CGROUP_UNIFIED) {
    if (own_cgroupns) r = an_mount_new_fs("cgroup2", "cgroup2", NULL, attrs, &mnt, err);
    else r = bind_own_dir(cg->dir[l->unified], attrs, &mnt, err);
    return r < 0 ? r : an_mount_attach(mnt, target_fd, err);
  }
  /* v1 or hybrid: runc's layout, a tmpfs with one directory per hierarchy.
   * The tmpfs is made read-only (if asked) only once it is filled. */
  r = an_mount_new_fs("tmpfs", "cgroup", "mode=755,size=64k", attrs & ~(uint64_t) MOUNT_ATTR_RDONLY,
                      &mnt, err);
  if (r < 0) return r;
  if ((r = an_mount_attach(mnt, target_fd, err)) < 0) return r;
  for (size_t i = 0; i < l->n; i++) {
    if (!an_cg_has(cg, i)) continue;   /* made sparse: nothing of its own there to show */
    const char *slash = strrchr(l->h[i].mount, '/');
    const char *name = slash ? slash + 1 : l->h[i].mount;
    if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
    cleanup_close int dir = -1, sub = -1;
    if ((r = hierarchy_dir(mnt, name, &dir, err)) < 0) return r;
    if ((r = bind_own_dir(cg->dir[i], attrs, &sub, err)) < 0) return r;
    if ((r = an_mount_attach(sub, dir, err)) < 0)
      return an_error_prefix(err, "cgroup view: attach %s", name);
  }
  if (attrs & MOUNT_ATTR_RDONLY) {
    struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY};
    if (mount_setattr(mnt, "", AT_EMPTY_PATH, &a, sizeof a) < 0)
      return an_error_set(err, errno, "cgroup view: make the tmpfs read-only");
  }
  return 0;
}
