/* engine/hooks.h — POSIX-platform hooks (config.md "POSIX-platform Hooks",
 * runtime.md "Lifecycle"): each hook's path is executed with its args and
 * env (without env: the runtime's own environment, as runc and crun), the
 * container state JSON on stdin, and killed when its timeout (in seconds)
 * passes.  Which stage runs where is container.c's and init.c's
 * concern. */
#ifndef AN_ENGINE_HOOKS_H
#define AN_ENGINE_HOOKS_H

#include <stddef.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

/* Run hooks[0..n) in order; stop at the first failure.  `stage` names the
 * stage in messages ("createRuntime").  Errors: -ETIMEDOUT a hook outlived
 * its timeout (it is killed), -ECANCELED a hook exited non-zero or was
 * killed by a signal, errno of spawning it; message
 * "hooks.<stage>[i] <path>: ...". */
int an_hooks_run(const struct an_spec_hook *hooks, size_t n, const char *stage,
                 const char *state_json, an_error_t *err);

#endif
