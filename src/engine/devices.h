/* engine/devices.h — /dev inside the container (config-linux.md "Default
 * Devices", "Devices").  mknod is impossible inside a user namespace, so the
 * default set (null zero full random urandom tty) is made by bind-mounting
 * the host's nodes, each checked to be the expected character device; the
 * spec's linux.devices are bound from the host node at the same path (user
 * namespace) or made with mknod (no user namespace).  Also the standard
 * symlinks ptmx -> pts/ptmx, fd, stdin, stdout, stderr.  What does NOT live
 * here: the /dev tmpfs and devpts mounts themselves (mounts[], mount.c). */
#ifndef AN_ENGINE_DEVICES_H
#define AN_ENGINE_DEVICES_H

#include <stdbool.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

/* Before pivot_root, with the host's /dev still visible.  Errors: -ELOOP a
 * symlink on a node's path inside the root, -ENODEV a host node is not the
 * device it should be, -EPERM a device that cannot be made in a user
 * namespace, errno of the failing call; the message names the device. */
int an_devices_setup(int root_fd, const struct an_spec_linux *l, bool in_userns,
                     an_error_t *err);

#endif
