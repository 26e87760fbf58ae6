/* engine/seccomp.h — compile a runtime-spec seccomp profile (linux.seccomp,
 * config-linux.md "Seccomp") into a classic BPF program with libseccomp, cache
 * compiled programs by profile text, and install a program in the container's
 * init process (seccomp(2), SECCOMP_SET_MODE_FILTER).
 *
 * Split in two because the parent may allocate and read files but the child,
 * after clone, should only make the one syscall: an_seccomp_prepare() runs in
 * the runtime before the container is cloned; an_seccomp_install() runs in the
 * child right before execve.  What does NOT live here: no_new_privs (the
 * engine sets PR_SET_NO_NEW_PRIVS before calling install), the Docker-format
 * profile loader (spec-parser), seccomp user notification (not supported).
 *
 * Action encoding (struct an_spec_seccomp): actions are libseccomp SCMP_ACT_*
 * values.  For SCMP_ACT_ERRNO / SCMP_ACT_TRACE the returned value is, in
 * order: errnoRet when given (has_errno_ret / has_default_errno_ret), else the
 * value folded into the action, else EPERM when that is 0 (runc's default).
 */
#ifndef AN_ENGINE_SECCOMP_H
#define AN_ENGINE_SECCOMP_H

#include <linux/filter.h>
#include <stddef.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

struct an_seccomp_program {
  unsigned int flags;           /* SECCOMP_FILTER_FLAG_* for seccomp(2) */
  struct sock_fprog prog;       /* .filter points into `filter` */
  struct sock_filter *filter;   /* prog.len instructions, owned */
  int from_cache;               /* 1 when read from the cache, 0 when compiled now */
};

/* Build the BPF program for profile `s` (parent side).
 *
 * The filter allows only the architectures listed in s->architectures (the
 * native one when the list is empty); any other architecture or ABI (i386 via
 * int $0x80 on x86_64, x32 numbers with bit 0x40000000) kills the process
 * (libseccomp bad-arch action SCMP_ACT_KILL_PROCESS; libseccomp also routes
 * x32 numbers on an x86_64-only filter to that action).  Syscall names this
 * libseccomp does not know are skipped, as runc does; rules whose action
 * equals the default action are skipped (libseccomp refuses them).  Several
 * conditions on the same argument index become separate rules (OR), as runc.
 *
 * cache_dir (may be NULL = no cache): directory for compiled programs, one
 * file per canonical serialization of the profile (with the libseccomp
 * version and the native arch), named by an_seccomp_cache_name and holding
 * that text and the program.  It is created (0700) if missing.  A cache file
 * is used only if it is a regular file owned by the effective uid, not
 * writable by group or others, of a valid size, and holds exactly this
 * profile's text; otherwise the profile is compiled and the file rewritten
 * atomically.  Cache problems never fail the call.
 *
 * *out owns a new program; free with an_seccomp_program_free().
 * Errors: -EINVAL bad action, operator, argument index, architecture or flag
 * (message names the field); -EOPNOTSUPP SCMP_ACT_NOTIFY / listenerPath or
 * SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (user notification is not supported);
 * -ENOMEM; or libseccomp's error for a rule, naming the syscall. */
int an_seccomp_prepare(const struct an_spec_seccomp *s, const char *cache_dir,
                       struct an_seccomp_program **out, an_error_t *err);

/* Keep program `p` with a container's state: write it as `name` in the
 * state directory `dirfd` (atomically, 0600), so that exec reads it back
 * with an_seccomp_program_load() instead of hashing the profile and looking
 * in the cache again.  Errors: errno of create/write/rename, naming the file. */
int an_seccomp_program_save(int dirfd, const char *name, const struct an_seccomp_program *p,
                            an_error_t *err);

/* Read back a program saved with an_seccomp_program_save() for profile `s`
 * (its flags are taken from s->flags).  The file is trusted as the cache is:
 * a regular file of the effective uid, not group/other-writable, of a valid
 * size.  *out owns a new program.  Errors: -ENOENT missing or not trusted
 * (the caller compiles with an_seccomp_prepare() instead), -EINVAL /
 * -EOPNOTSUPP a flag as prepare. */
int an_seccomp_program_load(int dirfd, const char *name, const struct an_spec_seccomp *s,
                            struct an_seccomp_program **out, an_error_t *err);

/* Load the program into the calling thread (child side, no allocation unless
 * it fails).  The caller must have set no_new_privs or hold CAP_SYS_ADMIN
 * (seccomp(2)).  Errors: the errno of seccomp(2) (-EACCES without
 * no_new_privs/CAP_SYS_ADMIN, -EINVAL unsupported flag or bad program). */
int an_seccomp_install(const struct an_seccomp_program *p, an_error_t *err);

/* Release a program; NULL allowed. */
void an_seccomp_program_free(struct an_seccomp_program *p);

/* The cache file name prepare uses for `s` ("p-" + 16 hex digits of FNV-1a
 * of the canonical text + ".bpf": a slot, not a digest), for tests.  *name
 * heap-allocated, owned by the caller.  Errors: -EINVAL as prepare, -ENOMEM. */
int an_seccomp_cache_name(const struct an_spec_seccomp *s, char **name, an_error_t *err);

/* "sha256:" + the hex sha256 of `s`'s canonical text (the profile after
 * action resolution, the libseccomp version and the native arch): the
 * profile's identity that `agentnest policy` reports.  Two profiles with the
 * same digest compile to the same program.  Errors: -EINVAL as prepare;
 * -ENOMEM / -EIO of the hash (libcrypto). */
#define AN_SECCOMP_DIGEST_LEN 72
int an_seccomp_digest(const struct an_spec_seccomp *s, char out[AN_SECCOMP_DIGEST_LEN], an_error_t *err);

#endif
