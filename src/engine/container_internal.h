/* engine/container_internal.h — helpers shared by container.c, lifecycle.c
 * and exec.c (internal). */
#ifndef AN_ENGINE_CONTAINER_INTERNAL_H
#define AN_ENGINE_CONTAINER_INTERNAL_H

#include "agentnest/container.h"

/* `root`, or AN_STATE_ROOT_DEFAULT when NULL/empty. */
const char *an_state_root_or_default(const char *root);

/* Open and lock the state dir of `id`, read its state and refresh the
 * status: a recorded init that is gone (or whose start time differs: PID
 * reuse) makes it "stopped".  *dirfd (locked) and *st owned by the caller;
 * *pidfd (may be NULL) is a pidfd of the live init or -1.  Errors: -ENOENT
 * no such container, errors of reading the state. */
int an_container_load(const char *state_root, const char *id, int *dirfd,
                      struct an_container_state **st, int *pidfd, an_error_t *err);

/* Refuse a process that asks for an LSM confinement this runtime cannot
 * apply: a non-empty process.apparmorProfile or process.selinuxLabel (fail
 * closed).  Errors: -EOPNOTSUPP naming the member.  Used by create/run and
 * exec. */
int an_process_lsm_check(const struct an_spec_process *p, an_error_t *err);

#endif
