/* agentnest/cgroup.h — one cgroup manager for cgroup v2 (unified) and v1 /
 * hybrid hosts.  Kernel doc: Documentation/admin-guide/cgroup-v2.rst and
 * cgroup-v1/; runtime-spec config-linux.md "Control groups".
 *
 * A container's cgroup is named by a relative path (`cgroupsPath` as runc
 * reads it, or "agentnest/<id>" when none is given).  On a unified host it is
 * one directory under the cgroup2 mount; on a v1/hybrid host it is one
 * directory per mounted v1 controller plus, when a cgroup2 hierarchy is also
 * mounted (as on hybrid hosts), one in it used for tracking, freezing and
 * killing.  The manager only creates, writes and removes cgroups at or below
 * the path it was given and never moves or edits anything else.
 */
#ifndef AGENTNEST_CGROUP_H
#define AGENTNEST_CGROUP_H

/* GCC predefines `linux` as 1 in GNU modes; spec.h has a member so named. */
#undef linux
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

enum an_cgroup_layout {
  AN_CGROUP_UNIFIED = 2,   /* cgroup2 only, at /sys/fs/cgroup */
  AN_CGROUP_HYBRID = 3,    /* v1 controllers + a cgroup2 mount (e.g. /sys/fs/cgroup/unified) */
  AN_CGROUP_LEGACY = 1,    /* v1 only */
};

struct an_cgroup;          /* opaque handle; free with an_cgroup_free() */

/* Detect the host's layout by reading /proc/self/mountinfo.
 * Errors: -ENOENT no cgroup filesystem mounted; read errors of mountinfo. */
int an_cgroup_detect(enum an_cgroup_layout *layout, an_error_t *err);

/* Create the cgroup `path` (relative, no "..", e.g. "agentnest/abc") in every
 * hierarchy that applies and apply `res` (may be NULL).  Controllers asked for
 * by `res` that the host cannot enforce make the call fail with -EOPNOTSUPP
 * (fail closed) and nothing is left behind.  Errors: -EINVAL bad path or
 * absurd value (message names the field), -EEXIST path already exists,
 * -EOPNOTSUPP controller missing, or the errno of the failing mkdir/write with
 * the cgroup file named. */
int an_cgroup_create(const char *path, const struct an_spec_resources *res,
                     struct an_cgroup **out, an_error_t *err);

/* Open an existing cgroup created earlier (e.g. from a state file).
 * Errors: -ENOENT it does not exist. */
int an_cgroup_open(const char *path, struct an_cgroup **out, an_error_t *err);

/* Create a child cgroup `name` (one path component) below `parent` with no
 * extra limits (used for one exec's process tree).  Errors as create. */
int an_cgroup_create_child(struct an_cgroup *parent, const char *name,
                           struct an_cgroup **out, an_error_t *err);

/* Apply (or re-apply, for `update`) resource limits.  Errors as create. */
int an_cgroup_apply(struct an_cgroup *cg, const struct an_spec_resources *res, an_error_t *err);

/* Move `pid` into the cgroup (every hierarchy).  Errors: errno of the write. */
int an_cgroup_enter(struct an_cgroup *cg, pid_t pid, an_error_t *err);

/* An O_DIRECTORY fd of the unified-hierarchy cgroup for clone3
 * CLONE_INTO_CGROUP, or -1 where the unified hierarchy does not hold the
 * controllers (v1/hybrid: the caller must use an_cgroup_enter).  Owned by cg. */
int an_cgroup_clone_fd(const struct an_cgroup *cg);

/* The relative path given at create/open.  Owned by cg. */
const char *an_cgroup_path(const struct an_cgroup *cg);

/* Send `sig` to every process in the cgroup and below; SIGKILL uses
 * cgroup.kill when the kernel has it (5.14+).  Errors: errno of the write. */
int an_cgroup_kill(struct an_cgroup *cg, int sig, an_error_t *err);

/* Freeze (true) or thaw (false) every process (cgroup.freeze on v2, freezer
 * controller on v1); waits until the state is reached (at most 5000 ms).
 * Errors: -ETIMEDOUT, -EOPNOTSUPP no freezer available. */
int an_cgroup_freeze(struct an_cgroup *cg, bool frozen, an_error_t *err);

/* Pids in the cgroup and its descendants.  *pids is heap-allocated, owned by
 * the caller.  Errors: errno of reading cgroup.procs. */
int an_cgroup_pids(struct an_cgroup *cg, pid_t **pids, size_t *n, an_error_t *err);

/* Number of OOM kills counted for this cgroup (memory.events "oom_kill" on
 * v2, memory.oom_control "oom_kill" on v1).  Errors: -EOPNOTSUPP no memory
 * controller. */
int an_cgroup_oom_kills(struct an_cgroup *cg, uint64_t *count, an_error_t *err);

/* Kill everything left (SIGKILL), wait until empty (at most 5000 ms), and
 * remove the cgroup directories (children first) in every hierarchy.
 * Errors: -EBUSY processes remain, errno of rmdir. */
int an_cgroup_destroy(struct an_cgroup *cg, an_error_t *err);

/* Release the handle (does not remove anything).  NULL allowed. */
void an_cgroup_free(struct an_cgroup *cg);

#ifdef __cplusplus
}
#endif
#endif
