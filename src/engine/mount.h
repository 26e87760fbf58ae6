/* engine/mount.h — mounts[] entries (config.md "Mounts") done by file
 * descriptor: every target is resolved inside the container root with
 * openat2(RESOLVE_IN_ROOT; no symlink as the last component) and mounted through the new
 * mount API (open_tree / fsopen+fsconfig+fsmount / mount_setattr /
 * move_mount onto that fd), never through a path string that was checked
 * and then used (BL-20, runc CVE-2021-30465).  What does NOT live here: the
 * root itself, pivot_root, masked/readonly paths (rootfs.c), device nodes
 * (devices.c). */
#ifndef AN_ENGINE_MOUNT_H
#define AN_ENGINE_MOUNT_H

#include <stdbool.h>
#include <stdint.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

struct an_cgroup;

/* Mount options parsed from an options[] list (mount(8) names). */
struct an_mount_options {
  uint64_t attr_set, attr_clr;   /* MOUNT_ATTR_* (mount_setattr(2)) */
  uint64_t propagation;          /* MS_PRIVATE, MS_SLAVE, MS_SHARED, MS_UNBINDABLE or 0 */
  bool bind, recursive, idmap;
  char *data;                    /* the remaining filesystem options, comma-separated; owned */
};

/* Parse options (NULL-terminated, may be NULL).  Errors: -ENOMEM. */
int an_mount_options_parse(char *const *options, struct an_mount_options *o, an_error_t *err);
void an_mount_options_free(struct an_mount_options *o);

/* Resolve `path` (absolute, inside the container) below `root_fd` to an
 * O_PATH fd: symlinks in the parent components are followed inside the
 * root (openat2 RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS: an absolute link
 * or ".." never leaves it, as runc's and crun's resolution), the last
 * component must not be a symlink (RESOLVE_NO_SYMLINKS: a name swapped for
 * a link is refused, BL-20).  With `create`, missing components are made:
 * directories 0755, and the last one as an empty regular file when
 * `as_file`.  *fd owned by the caller.  Errors: -ELOOP the last component
 * (or a component that had to be created) is a symlink, or a magic link on
 * the way, -ENOENT missing (without create), -EINVAL a path that is not
 * absolute or ends in "..", errno of mkdirat/openat. */
int an_mount_resolve(int root_fd, const char *path, bool create, bool as_file, int *fd,
                     an_error_t *err);

/* Parent side, for mounts[] entries with uidMappings/gidMappings: a
 * detached bind mount of the source, idmapped with `userns_fd`
 * (MOUNT_ATTR_IDMAP needs privilege over the source filesystem, which only
 * the runtime in the host user namespace has).  Errors: -EINVAL not a bind
 * mount, errno of open_tree/mount_setattr. */
int an_mount_prepare_idmapped(const struct an_spec_mount *m, const char *bundle, int userns_fd,
                              int *mnt_fd, an_error_t *err);

/* A detached sysfs mount showing the network namespace at `netns_path`,
 * made by the parent (root in the initial user namespace) for a container
 * that joins that netns from a user namespace that does not own it (there
 * sysfs cannot be mounted, and the fallback would bind the host's /sys with
 * all its submounts: the host's cgroup tree and interfaces); read-only,
 * nosuid, nodev, noexec whatever the entry's options.  *mnt_fd is
 * owned by the caller; attach it as an an_mount_entry premade_fd.  Errors:
 * the errno of open/setns/fsopen/fsmount, message naming the netns.
 * Thread-safe (the netns is joined by a thread of its own). */
int an_mount_prepare_sysfs(const char *netns_path, int *mnt_fd, an_error_t *err);

/* Do one mounts[] entry below `root_fd` (the container root, before
 * pivot_root).  `bundle` resolves relative bind sources; `premade_fd` (or
 * -1) is a detached mount made by an_mount_prepare_idmapped or
 * an_mount_prepare_sysfs, only attached.  Types: bind/rbind
 * (any type with a "bind"/"rbind" option), tmpfs, proc, sysfs (falls back to
 * a read-only recursive bind of the host /sys where sysfs cannot be mounted,
 * as runc), devpts (retries without gid= where that gid is unmapped), mqueue,
 * cgroup/cgroup2 (the container's own cgroup `cg` as cgroup_view.h
 * describes, `own_cgroupns` telling whether it has its own cgroup
 * namespace; without `cg`: cgroup2, or an empty read-only tmpfs when that
 * cannot be mounted), and any
 * other filesystem type fsopen(2) knows.  Errors: the errno of the failing
 * call, message "mount <type> on <rootfs><destination>: <ERRNO>". */
int an_mount_entry(int root_fd, const char *rootfs, const char *bundle,
                   const struct an_spec_mount *m, int premade_fd, const struct an_cgroup *cg,
                   bool own_cgroupns, an_error_t *err);

/* A detached bind mount of `fd` (a path opened O_PATH in the current mount
 * namespace), recursive with `recursive`, with mount attributes set; ready for
 * an_mount_attach.  Errors: errno of open_tree/mount_setattr. */
int an_mount_clone_fd(int fd, bool recursive, uint64_t attr_set, uint64_t attr_clr, int *mnt_fd,
                      an_error_t *err);

/* A new detached filesystem mount (fsopen/fsconfig/fsmount).  `data` are
 * comma-separated options ("mode=755,size=64m"); attrs are MOUNT_ATTR_*.
 * Errors: errno of the failing call, message naming the type and, where the
 * kernel logged one, its reason. */
int an_mount_new_fs(const char *type, const char *source, const char *data, uint64_t attrs,
                    int *mnt_fd, an_error_t *err);

/* move_mount(2) the detached mount onto the O_PATH fd `target_fd`.
 * Errors: errno of move_mount. */
int an_mount_attach(int mnt_fd, int target_fd, an_error_t *err);

#endif
