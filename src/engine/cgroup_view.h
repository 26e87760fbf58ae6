/* engine/cgroup_view.h — what a container sees at a mounts[] entry of type
 * "cgroup"/"cgroup2" (usually /sys/fs/cgroup): its own cgroup and nothing
 * above it, as runc shows it (libcontainer rootfs_linux.go mountCgroupV1 /
 * mountCgroupV2).  What does NOT live here: making the cgroup (cgroup.c),
 * other mounts (mount.c). */
#ifndef AN_ENGINE_CGROUP_VIEW_H
#define AN_ENGINE_CGROUP_VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include "agentnest/error.h"

struct an_cgroup;

/* Mount the container's cgroup view on `target_fd` (an O_PATH fd of the
 * target directory inside the root).  On a cgroup2-only host: with its own
 * cgroup namespace (`own_cgroupns`) a fresh cgroup2 mount (the namespace's
 * root is the container's cgroup), else a bind of the container's cgroup2
 * directory.  On a hybrid or v1 host: a tmpfs holding one directory per
 * hierarchy (named as the host's mount point: cpu, memory, unified...),
 * each a bind of the container's own directory in that hierarchy.  `attrs`
 * (MOUNT_ATTR_*, e.g. RDONLY|NOSUID|NODEV|NOEXEC from the entry's options)
 * apply to every mount made.  Runs in init, in the container's mount
 * namespace before pivot_root, where the host's cgroup mounts are still
 * reachable.  Errors: errno of open_tree/fsopen/mkdirat/move_mount/
 * mount_setattr, naming the hierarchy. */
int an_cgroup_view_mount(const struct an_cgroup *cg, int target_fd, bool own_cgroupns,
                         uint64_t attrs, an_error_t *err);

#endif
