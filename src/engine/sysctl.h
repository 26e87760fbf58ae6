/* engine/sysctl.h — linux.sysctl (config-linux.md "Sysctl"): only keys the
 * container's own namespaces isolate are accepted (IPC: kernel.msg*,
 * kernel.sem, kernel.shm*, fs.mqueue.*; network: net.*; UTS:
 * kernel.hostname, kernel.domainname; user namespace: user.max_*, the
 * per-namespace limits of user_namespaces(7), written from inside the new
 * user namespace), and they are written through the
 * container's procfs, opened by fd and checked to be procfs (BL-06).  What
 * does NOT live here: the read-only /proc/sys mount (rootfs.c). */
#ifndef AN_ENGINE_SYSCTL_H
#define AN_ENGINE_SYSCTL_H

#include "agentnest/error.h"
#include "agentnest/spec.h"

/* Parent side: refuse a key the container's namespaces (ns_flags: CLONE_NEW*)
 * do not isolate.  Errors: -EINVAL naming linux.sysctl.<key>. */
int an_sysctl_validate(const struct an_spec_linux *l, int ns_flags, an_error_t *err);

/* Child side, after pivot_root: write every key under /proc/sys.  Errors:
 * -ENOENT /proc is not mounted, -EXDEV /proc is not procfs, errno of the
 * write naming the key. */
int an_sysctl_apply(const struct an_spec_linux *l, an_error_t *err);

#endif
