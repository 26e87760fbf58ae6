/* engine/caps.h — the container process's capability sets (runtime-spec
 * config.md "process.capabilities"; capabilities(7)), applied with libcap and
 * prctl(2).  What does NOT live here: no_new_privs, setresuid/setgroups (the
 * engine's process setup), seccomp.
 *
 * Order in the child (capabilities(7), "Effect of user ID changes"):
 *   an_caps_keep_for_setuid()   before setresuid, so the permitted set survives
 *   setresuid / setresgid / setgroups
 *   an_caps_apply()             bounding, then inheritable/permitted/effective, then ambient
 *   execve
 */
#ifndef AN_ENGINE_CAPS_H
#define AN_ENGINE_CAPS_H

#include <stdint.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

/* Set the calling thread's capability sets to `caps` (NULL = drop
 * everything: all five sets empty).  Runs in the container's init after the
 * uid change (with keepcaps set) and before execve:
 *  - every capability not in caps->bounding, from 0 to the kernel's last
 *    (/proc/sys/kernel/cap_last_cap), is dropped from the bounding set
 *    (PR_CAPBSET_DROP; needs CAP_SETPCAP, which is raised from permitted first);
 *  - effective, permitted and inheritable are set exactly (capset via libcap);
 *  - the ambient set is cleared, then each ambient cap raised (PR_CAP_AMBIENT)
 *    that is also permitted and inheritable (the others are skipped, as runc
 *    does: the stock `runc spec` config lists ambient without inheritable).
 * Names must be "CAP_*" names libcap knows; names this kernel lacks (above
 * cap_last_cap) are skipped, as runc does (an_caps_unavailable() lists them so
 * front ends can warn).
 * Errors: -EINVAL unknown capability name (named in the message);
 * -EPERM a set could not be changed (e.g. CAP_SETPCAP missing, effective not
 * within permitted, ambient not within permitted and inheritable), naming the
 * set or capability; errno of reading cap_last_cap. */
int an_caps_apply(const struct an_spec_capabilities *caps, an_error_t *err);

/* an_caps_apply, but the capabilities in the mask `keep` (bit N =
 * capability N) stay in the permitted and effective sets of the calling
 * thread until execve: the exec'd program's sets are computed from the
 * bounding, inheritable and ambient sets (and file capabilities) alone
 * (capabilities(7), "Transformation of capabilities during execve()"), so it
 * never holds them unless `caps` grants them.  Init keeps CAP_SYS_ADMIN so
 * that a seccomp filter without no_new_privs can be installed as the last
 * step before execve.  Errors as an_caps_apply. */
int an_caps_apply_keeping(const struct an_spec_capabilities *caps, uint64_t keep, an_error_t *err);

/* prctl(PR_SET_KEEPCAPS, 1): keep the permitted set across the coming
 * setresuid() away from uid 0 (prctl(2)).  The kernel clears the flag again
 * at execve.  Errors: errno of prctl. */
int an_caps_keep_for_setuid(an_error_t *err);

/* Parent-side check of `caps` before the container is made: every name is a
 * "CAP_*" capability libcap knows.  *unavailable (may be NULL) receives a
 * NULL-terminated heap array of the names that are valid but missing from
 * this kernel (skipped by an_caps_apply), or NULL when there are none; the
 * caller frees each string and the array.  Errors: -EINVAL unknown name
 * (message names the set and the name), -ENOMEM. */
int an_caps_check(const struct an_spec_capabilities *caps, char ***unavailable, an_error_t *err);

/* The kernel's highest capability number (/proc/sys/kernel/cap_last_cap).
 * Errors: errno of open/read, -EINVAL unparsable content. */
int an_caps_last_cap(int *last, an_error_t *err);

#endif
