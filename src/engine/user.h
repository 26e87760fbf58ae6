/* engine/user.h — the container process's identity (config.md "User"):
 * supplementary groups set to exactly process.user.additionalGids (BL-18:
 * never the runtime's own), then setresgid, setresuid (keeping the permitted
 * capabilities for caps.c), umask.  What does NOT live here: capability
 * sets (caps.c), uid/gid maps (userns.c). */
#ifndef AN_ENGINE_USER_H
#define AN_ENGINE_USER_H

#include "agentnest/error.h"
#include "agentnest/spec.h"

/* Errors: errno of setgroups/setresgid/setresuid naming the ids (-EINVAL an
 * id not mapped in the container's user namespace). */
int an_user_apply(const struct an_spec_user *u, an_error_t *err);

#endif
