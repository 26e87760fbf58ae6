/* engine/rootfs.h — the container's root: mount propagation, the bind of
 * root.path onto itself, pivot_root (or MS_MOVE + chroot with --no-pivot),
 * the read-only root, and linux.readonlyPaths / linux.maskedPaths, applied
 * last and verified (config-linux.md "Masked Paths", "Readonly Paths";
 * BL-07, BL-09).  What does NOT live here: mounts[] (mount.c), /dev
 * (devices.c). */
#ifndef AN_ENGINE_ROOTFS_H
#define AN_ENGINE_ROOTFS_H

#include <stdbool.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

/* In a fresh mount namespace: make every mount a slave (events from the host
 * still arrive, nothing leaks back; private when `propagation`, the
 * spec's linux.rootfsPropagation or NULL, is "private"/"rprivate", as runc)
 * and attach `root_mnt_fd` — a detached
 * clone of the root that the runtime made with open_tree(2) while it could
 * still reach the root's path as itself — on top of "/" (move_mount(2)).
 * Nothing is looked up by path, so a root under a directory the container's
 * ids cannot search (the 0700 image store) works, and no mount is ever made
 * in the host's namespace.  The attached root and its submounts are made
 * slaves (or private) too: a clone of a shared mount would otherwise be the
 * host's peer (pivot_root refuses it, mounts below it would leak).  *root_fd
 * gets an fd of the attached root.
 * Errors: errno of mount/move_mount naming `rootfs`. */
int an_rootfs_prepare(const char *rootfs, const char *propagation, int root_mnt_fd, int *root_fd,
                      an_error_t *err);

/* Make root_fd the process's root: pivot_root(".", ".") and detach the old
 * root (runc/lxc), or with `no_pivot` chroot into it (it is already mounted
 * over "/", as runc's MS_MOVE would leave it).  Afterwards cwd is "/".
 * Errors: errno of the failing call. */
int an_rootfs_pivot(int root_fd, bool no_pivot, an_error_t *err);

/* After pivot_root: apply linux.rootfsPropagation, make / read-only when
 * root.readonly, then readonlyPaths (recursive read-only binds of
 * themselves), then maskedPaths (directories: an empty read-only tmpfs;
 * other files: the container's /dev/null, which must be the null device
 * 1:3).  Each result is checked by reopening the path; a path that does not
 * exist is skipped, one that cannot be protected fails the start (fail
 * closed).  Errors: -ELOOP a symlink on the path, -EIO verification failed,
 * errno of the failing call, naming the path. */
int an_rootfs_finalize(const struct an_spec *spec, an_error_t *err);

#endif
