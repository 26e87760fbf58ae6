/* sandbox/spec_build_internal.h — the seccomp-less half of
 * an_sandbox_build_spec (internal, not installed).  Only for callers that
 * attach a seccomp section themselves right after, and for unit tests that
 * check every other default without reading a seccomp file.  Never
 * hand its result to the engine as is. */
#ifndef AN_SANDBOX_SPEC_BUILD_INTERNAL_H
#define AN_SANDBOX_SPEC_BUILD_INTERNAL_H

#include <stdbool.h>
#include "agentnest/sandbox_opts.h"

/* Whether this kernel has time namespaces (/proc/self/ns/time: Linux 5.6,
 * CONFIG_TIME_NS); sandboxes get one, with their own uptime, where it does. */
bool an_sandbox_has_timens(void);

/* an_sandbox_build_spec without loading the seccomp profile:
 * spec->linux.seccomp is NULL.  Same arguments and errors otherwise. */
int an_sandbox_build_spec_without_seccomp(const struct an_sandbox_opts *opts,
                                          const struct an_sandbox_image *img,
                                          const struct an_sandbox_ids *ids, const char *sandbox_id,
                                          const char *workspace_host_path, char **argv,
                                          struct an_spec **out, an_error_t *err);

#endif
