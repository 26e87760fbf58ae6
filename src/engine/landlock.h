/* engine/landlock.h — Landlock (Documentation/userspace-api/landlock.rst,
 * landlock(7)) as a second line behind the mount flags: confine a
 * container's writes to its writable mounts.
 *
 * What lives here: the ABI probe, the list of writable mount points of a
 * spec, and the ruleset (handled = every filesystem write access this
 * kernel's ABI knows; one path-beneath rule per writable mount point
 * allowing all of them; landlock_restrict_self).  What does not: reads and
 * execution (the mount flags and permissions handle those), networking
 * (the netns), no_new_privs (the engine sets it before calling), and the
 * decision whether a missing Landlock is fatal (the caller's, from the
 * sandbox's request).
 *
 * Call order in the container's init (engine/init.c): after pivot_root and
 * the read-only/masked paths (the paths are inside the new root), after
 * no_new_privs, right before the seccomp filter is installed — in the
 * exec path as well, since an exec'd process does not descend from init. */
#ifndef AN_ENGINE_LANDLOCK_H
#define AN_ENGINE_LANDLOCK_H

#include <stddef.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

/* The Landlock ABI version of the running kernel (landlock_create_ruleset
 * with LANDLOCK_CREATE_RULESET_VERSION): >= 1, or -EOPNOTSUPP when the
 * kernel was built without Landlock or it is disabled at boot (ENOSYS /
 * EOPNOTSUPP from the kernel).  No error object: nothing to name. */
int an_landlock_abi_version(void);

/* The write accesses (LANDLOCK_ACCESS_FS_* bits) handled for an ABI
 * version: WRITE_FILE, REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR,
 * MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM; REFER from ABI 2;
 * TRUNCATE from ABI 3.  0 for abi < 1. */
unsigned long long an_landlock_write_accesses(int abi);

/* Confine the calling thread (and every process it later starts) so that
 * filesystem writes are only possible beneath writable_paths[0..n-1]
 * (absolute paths in the caller's mount namespace; each must exist; a
 * non-directory gets only the file rights WRITE_FILE and TRUNCATE).  Reads
 * and exec are not restricted.  Best-effort ABI negotiation: what the
 * kernel's ABI does not know is not handled (ABI 1 cannot allow renames or
 * links across directories: they fail with EXDEV, and tools fall back to a
 * copy).  The caller must have no_new_privs set (prctl PR_SET_NO_NEW_PRIVS)
 * or CAP_SYS_ADMIN in its user namespace (landlock_restrict_self(2)).
 * Nothing is applied unless every step succeeds.
 * Errors:
 *   -EOPNOTSUPP  the kernel has no usable Landlock (the caller decides:
 *                fatal only when the sandbox asked for Landlock);
 *   -EINVAL      n == 0, a NULL or relative path;
 *   the open(2) errno of a path (-ENOENT, -EACCES, ...), message naming it;
 *   the landlock_add_rule / landlock_restrict_self errno (-EPERM: neither
 *                no_new_privs nor CAP_SYS_ADMIN; -E2BIG: too many stacked
 *                domains), message naming the step. */
int an_landlock_confine_writes(const char **writable_paths, size_t n, an_error_t *err);

/* The writable mount points of a spec, for an_landlock_confine_writes:
 * "/" when root.readonly is false, then each mounts[].destination whose
 * options do not contain "ro" and whose type is not proc, sysfs, cgroup,
 * cgroup2 or mqueue (procfs/sysfs writes are governed by their masked and
 * read-only paths; message queues are not path-based).  *paths is a
 * heap array (free() it; the strings are borrowed from spec), *n entries.
 * Errors: -ENOMEM. */
int an_landlock_writable_paths(const struct an_spec *spec, const char ***paths, size_t *n,
                               an_error_t *err);

/* Whether a container asks for Landlock: the annotation
 * "org.agentnest.landlock" (runtime-spec "annotations": implementation-
 * specific keys in reverse domain notation) with the value
 *   "off"           (or no annotation) — not applied;
 *   "if-available"  — applied where the kernel has Landlock, skipped where it
 *                     has not (the sandbox layer's default, DESIGN "landlock");
 *   "required"      — applied, and a kernel without Landlock refuses the
 *                     container (fail closed).
 * Errors: -EINVAL another value, naming it. */
#define AN_LANDLOCK_ANNOTATION "org.agentnest.landlock"
enum an_landlock_mode { AN_LANDLOCK_OFF, AN_LANDLOCK_IF_AVAILABLE, AN_LANDLOCK_REQUIRED };
int an_landlock_mode_of(const struct an_spec *spec, enum an_landlock_mode *mode, an_error_t *err);

/* Check, before a container is made, that what the spec asks for can be
 * enforced: -EINVAL a bad annotation value; -EOPNOTSUPP "required" on a
 * kernel without Landlock (message says so). */
int an_landlock_check(const struct an_spec *spec, an_error_t *err);

/* Apply what the spec asks for (an_landlock_mode_of) to the calling process:
 * nothing when off or when "if-available" finds no Landlock; else confine
 * writes to an_landlock_writable_paths(spec) — with no writable mount at
 * all, every write is denied.  Called by the container's init and by each
 * exec'd process after pivot_root, before the identity change (so that
 * CAP_SYS_ADMIN in the user namespace allows it without no_new_privs) and
 * before seccomp.  Errors: as an_landlock_mode_of, an_landlock_confine_writes
 * (-EOPNOTSUPP only when "required"). */
int an_landlock_apply(const struct an_spec *spec, an_error_t *err);

#endif
