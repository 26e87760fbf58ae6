/* engine/devices.c — device nodes and /dev symlinks (see devices.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "engine/devices.h"
#include "engine/mount.h"
#include "util/cleanup.h"

static const struct { const char *name; unsigned major, minor; } default_devices[] = {
  {"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7},
  {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0},
};

static const struct { const char *name, *target; } default_links[] = {
  {"ptmx", "pts/ptmx"}, {"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"},
  {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"},
};

/* Bind the host node `host_path` onto `path` inside the root, after checking
 * the host node is the device (type, major, minor) expected. */
static int bind_host_node(int root_fd, const char *host_path, const char *path, mode_t type,
                          unsigned major, unsigned minor, an_error_t *err) {
  cleanup_close int src = open(host_path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (src < 0) return an_error_set(err, errno, "device %s: open host node %s", path, host_path);
  struct stat st;
  if (fstat(src, &st) < 0) return an_error_set(err, errno, "device %s: stat %s", path, host_path);
  if ((st.st_mode & S_IFMT) != type || st.st_rdev != makedev(major, minor))
    return an_error_set(err, ENODEV, "device %s: host node %s is not device %u:%u", path,
                        host_path, major, minor);
  cleanup_close int mnt = -1;
  int r = an_mount_clone_fd(src, false, 0, 0, &mnt, err);
  if (r < 0) return an_error_prefix(err, "device %s: bind %s", path, host_path);
  cleanup_close int target = -1;
  r = an_mount_resolve(root_fd, path, true, true, &target, err);
  if (r < 0) return an_error_prefix(err, "device %s", path);
  /* The target must be a regular file or the same kind of node, never a
   * directory or something the image planted to redirect us. */
  struct stat tst;
  if (fstat(target, &tst) < 0) return an_error_set(err, errno, "device %s: stat", path);
  if (S_ISDIR(tst.st_mode)) return an_error_set(err, EISDIR, "device %s: is a directory", path);
  r = an_mount_attach(mnt, target, err);
  if (r < 0) return an_error_prefix(err, "device %s: bind %s", path, host_path);
  return 0;
}

static int make_node(int root_fd, const struct an_spec_device *d, an_error_t *err) {
  char parent[PATH_MAX];
  snprintf(parent, sizeof parent, "%s", d->path);
  char *slash = strrchr(parent, '/');
  if (!slash || !slash[1]) return an_error_set(err, EINVAL, "linux.devices: bad path %s", d->path);
  const char *base = d->path + (slash - parent) + 1;
  if (slash == parent) strcpy(parent, "/");
  else *slash = '\0';
  cleanup_close int pfd = -1;
  int r = an_mount_resolve(root_fd, parent, true, false, &pfd, err);
  if (r < 0) return an_error_prefix(err, "linux.devices: %s", d->path);
  mode_t type = d->type == 'b' ? S_IFBLK : d->type == 'p' ? S_IFIFO : S_IFCHR;
  mode_t mode = type | (d->has_file_mode ? (d->file_mode & 07777) : 0666);
  /* exactly fileMode, as runc and crun: the runtime's umask must not apply
   * (init is single-threaded, so the process-wide umask is ours to swap) */
  mode_t old_umask = umask(0);
  int made = mknodat(pfd, base, mode, makedev(d->major, d->minor));
  int e = errno;
  umask(old_umask);
  if (made < 0 && e != EEXIST) return an_error_set(err, e, "linux.devices: mknod %s", d->path);
  if (d->has_uid || d->has_gid) {
    if (fchownat(pfd, base, d->has_uid ? d->uid : (uid_t) -1, d->has_gid ? d->gid : (gid_t) -1,
                 AT_SYMLINK_NOFOLLOW) < 0)
      return an_error_set(err, errno, "linux.devices: chown %s", d->path);
  }
  return 0;
}

int an_devices_setup(int root_fd, const struct an_spec_linux *l, bool in_userns,
                     an_error_t *err) {
  char path[64], host[64];
  for (size_t i = 0; i < sizeof default_devices / sizeof default_devices[0]; i++) {
    snprintf(path, sizeof path, "/dev/%s", default_devices[i].name);
    snprintf(host, sizeof host, "/dev/%s", default_devices[i].name);
    int r = bind_host_node(root_fd, host, path, S_IFCHR, default_devices[i].major,
                           default_devices[i].minor, err);
    if (r < 0) return r;
  }
  cleanup_close int dev_fd = -1;
  int r = an_mount_resolve(root_fd, "/dev", true, false, &dev_fd, err);
  if (r < 0) return r;
  for (size_t i = 0; i < sizeof default_links / sizeof default_links[0]; i++) {
    if (symlinkat(default_links[i].target, dev_fd, default_links[i].name) < 0 && errno != EEXIST)
      return an_error_set(err, errno, "symlink /dev/%s", default_links[i].name);
  }
  for (size_t i = 0; i < l->n_devices; i++) {
    const struct an_spec_device *d = &l->devices[i];
    if (!d->path || d->path[0] != '/')
      return an_error_set(err, EINVAL, "linux.devices[%zu]: path must be absolute", i);
    if (!in_userns) {
      r = make_node(root_fd, d, err);
    } else if (d->type == 'p') {
      r = make_node(root_fd, d, err);
    } else {
      r = bind_host_node(root_fd, d->path, d->path, d->type == 'b' ? S_IFBLK : S_IFCHR,
                         (unsigned) d->major, (unsigned) d->minor, err);
      if (r == -ENOENT) {
        an_error_free(err);
        r = an_error_set(err, EPERM, "linux.devices[%zu]: %s cannot be made in a user namespace",
                         i, d->path);
      }
    }
    if (r < 0) return r;
  }
  return 0;
}
