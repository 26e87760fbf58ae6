/* agentnest/seccomp_profile.h — load a seccomp profile written in the
 * Docker/podman JSON format (profiles/seccomp/NAME.json) into the same
 * struct an_spec_seccomp that linux.seccomp of a config.json parses into,
 * so the engine compiles and installs both the same way.
 *
 * The format is the runtime-spec's linux.seccomp object plus Docker's
 * extensions (moby profiles/seccomp, containers/common pkg/seccomp):
 * "archMap" (an architecture and its sub-architectures), per-syscall
 * "name" (one name) besides "names", "comment", and "includes"/"excludes"
 * filters with "arches", "caps" and "minKernel".
 *
 * Thread-safety: no global state; both loaders may run in parallel on any
 * threads.
 */
#ifndef AGENTNEST_SECCOMP_PROFILE_H
#define AGENTNEST_SECCOMP_PROFILE_H

#include <stddef.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Read and convert the profile at `path` (at most 16 MiB).
 *
 * The includes/excludes filters are evaluated as Docker does, for an
 * x86_64 container that holds no capabilities, on the running kernel
 * (uname(2)): a rule is kept only if includes.arches (if given) names
 * x86_64 ("amd64", "x86_64" or "SCMP_ARCH_X86_64"), includes.caps is empty,
 * includes.minKernel (if given) is <= the running kernel, excludes.arches
 * does not name x86_64 and excludes.minKernel (if given) is above the
 * running kernel; excludes.caps never removes a rule (no capability held).
 * archMap: the entry whose architecture is SCMP_ARCH_X86_64 gives
 * architectures = [it, its subArchitectures...]; no such entry gives none
 * (native only).  Giving both "architectures" and "archMap" is an error.
 *
 * On success *out is a new an_spec_seccomp owned by the caller (free with
 * an_spec_seccomp_free), with errnos folded into the actions exactly as
 * an_spec_parse does (SCMP_ACT_ERRNO without errnoRet means EPERM).
 * Errors: -ENOENT/-EACCES/... opening or reading the file, -EFBIG over
 * 16 MiB, -EINVAL malformed JSON or a bad value, with a message naming the
 * file, the JSON path and the cause, e.g.
 *   `/p/default.json: syscalls[3].action: unknown action "SCMP_ACT_FOO"`;
 * -ENOMEM. */
int an_seccomp_profile_load(const char *path, struct an_spec_seccomp **out, an_error_t *err);

/* The same for a profile held in memory (`len` bytes, need not be
 * NUL-terminated); *out is the caller's as an_seccomp_profile_load's, and
 * so are the errors, except that there is no file to open and messages
 * start with the JSON path. */
int an_seccomp_profile_parse(const char *json, size_t len, struct an_spec_seccomp **out,
                             an_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
