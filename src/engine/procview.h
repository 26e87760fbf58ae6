/* engine/procview.h — what a container sees of the host's identity through
 * /proc beyond the runtime-spec's maskedPaths (issue 10 item 3), asked for
 * with annotations so that plain OCI containers keep the runtime-spec's
 * behaviour:
 *
 *   "org.agentnest.timens-offsets": "zero"
 *       a time namespace the container creates (linux.namespaces "time")
 *       gets offsets (time_namespaces(7), /proc/PID/timens_offsets) that put
 *       CLOCK_MONOTONIC and CLOCK_BOOTTIME near 0 when it is made, so
 *       /proc/uptime and the clocks start near 0 instead of the host's
 *       uptime.  Init unshares the namespace, writes the offsets and enters
 *       it (as crun does; offsets can only be written before a process is
 *       in it); a process exec'd later joins it with the others.
 *   "org.agentnest.boot-id": "private"
 *       /proc/sys/kernel/random/boot_id shows a UUID of the container's own
 *       (a file on a detached read-only tmpfs of its own, made by init and
 *       bound over it, so no host path appears in its mountinfo); where the
 *       kernel cannot clone a file out of a detached mount (open_tree(2) of a
 *       detached tree, Linux 6.15) it is masked with /dev/null instead: never
 *       the host's.
 *
 * What does NOT live here: the maskedPaths themselves (rootfs.c); what is
 * still the host's (meminfo, cpuinfo, loadavg, the kernel version: no
 * lxcfs-like view), see agentnest(1) SECURITY. */
#ifndef AN_ENGINE_PROCVIEW_H
#define AN_ENGINE_PROCVIEW_H

#include <stdbool.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

#define AN_TIMENS_ANNOTATION "org.agentnest.timens-offsets"
#define AN_BOOT_ID_ANNOTATION "org.agentnest.boot-id"

/* Validate both annotations (before anything is made).  Errors: -EINVAL an
 * unknown value or timens-offsets without a new time namespace. */
int an_procview_check(const struct an_spec *spec, an_error_t *err);

/* Whether init makes the container's time namespace itself (the spec
 * creates one and asks for zero offsets): the runtime then clones init
 * without CLONE_NEWTIME. */
bool an_procview_timens_zero(const struct an_spec *spec);

/* Init side, right after its user namespace is entered (it needs
 * CAP_SYS_ADMIN and CAP_SYS_TIME there) and before it has any child: when
 * an_procview_timens_zero, unshare(CLONE_NEWTIME), write the offsets to
 * /proc/self/timens_offsets (only possible before any process is in the
 * namespace) and enter it (setns on /proc/self/ns/time_for_children; init is
 * single-threaded).  Errors: errno of unshare, the offsets write, setns. */
int an_procview_timens_init(const struct an_spec *spec, an_error_t *err);

/* Init side, after pivot_root and the masked paths (in the container's
 * mount namespace, "/" its root): the private boot_id when the annotation
 * asks for it.  Errors: errno of fsopen, the file write, open_tree or
 * move_mount, naming boot_id. */
int an_procview_apply(const struct an_spec *spec, an_error_t *err);

#endif
