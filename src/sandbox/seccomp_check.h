/* sandbox/seccomp_check.h — does a seccomp profile allow what the default
 * profile denies?  (internal, not installed)
 *
 * The answer comes from the filters themselves, not from reading rule
 * lists: both profiles are compiled with the engine's own compiler
 * (engine/seccomp.h, libseccomp) into the classic BPF the kernel would run,
 * and that BPF is evaluated here on probe calls (seccomp_data with a
 * syscall number, an architecture and arguments), each one a thing the
 * default denies on purpose (and each searched over the argument values the
 * filter's own argument tests make interesting, keeping the dangerous bits,
 * so that a rule allowing it only with other flags, another argument or
 * ignored high bits is found too): new namespaces through clone/unshare flags,
 * setns, the mount API, bpf, perf_event_open, userfaultfd, keyctl, ptrace,
 * modules, kexec, io_uring, socket(AF_VSOCK), TIOCSTI, ...  A probe is
 * "allowed" when the filter returns ALLOW, LOG, TRACE or USER_NOTIF (the
 * call reaches the kernel or a tracer), "denied" for ERRNO, TRAP and KILL.
 * Only probes that the reference (the default profile) denies are reported,
 * so a profile is judged by what it adds to the default, whatever the
 * default is at the time.
 *
 * Probe arguments are chosen for x86_64/aarch64 argument orders (clone's
 * flags in argument 0). */
#ifndef AN_SANDBOX_SECCOMP_CHECK_H
#define AN_SANDBOX_SECCOMP_CHECK_H

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include "agentnest/error.h"
#include "agentnest/sandbox_opts.h"
#include "agentnest/spec.h"

/* Run classic BPF program f[0..n) on `data` as seccomp(2) would and put the
 * filter's return value (SECCOMP_RET_*) in *ret.  Returns 0, or -EINVAL for
 * a program that reads outside seccomp_data, divides by zero, jumps out of
 * range or ends without a return. */
int an_sb_bpf_run(const struct sock_filter *f, size_t n, const struct seccomp_data *data,
                  uint32_t *ret);

/* The probes that `profile` allows and `reference` denies, as labels such
 * as "mount", "unshare(CLONE_NEWUSER)", "socket(AF_VSOCK)" or "bpf (x86)"
 * for a non-native architecture the profile lists, in a NULL-terminated
 * heap array (*labels, free each string and the array; none: an array of
 * just NULL).  Errors: those of an_seccomp_prepare for either profile
 * (-EINVAL, -EOPNOTSUPP), -ENOMEM. */
int an_sb_seccomp_widening(const struct an_spec_seccomp *profile,
                           const struct an_spec_seccomp *reference, char ***labels,
                           an_error_t *err);

/* The widening of opts' seccomp profile over the default profile
 * (<an_sandbox_profiles_dir()>/seccomp/default.json as an_sandbox_opts_new
 * found it), loading the default; none
 * when opts' profile is the default file.  Errors: those of
 * an_seccomp_profile_load and an_sb_seccomp_widening. */
int an_sb_seccomp_widening_of(const struct an_sandbox_opts *opts,
                              const struct an_spec_seccomp *profile, char ***labels,
                              an_error_t *err);

/* Refuse (-EPERM) a profile with a widening unless opts' seccomp_unsafe is
 * set; the message names the profile and the first allowed probe:
 *   seccomp profile /p.json allows mount, which the default profile denies
 *   (also bpf, keyctl); set seccomp_unsafe (--seccomp-unsafe) to
 *   accept it
 * Other errors: as an_sb_seccomp_widening_of. */
int an_sb_seccomp_check(const struct an_sandbox_opts *opts, const struct an_spec_seccomp *profile,
                        an_error_t *err);

/* Record an accepted widening in the sandbox's event log (<dir>/events.jsonl):
 *   {"type":"seccomp_unsafe","profile":PATH,"allows":[labels...],"allows_more":N}
 * when opts' seccomp_unsafe is set and the profile widens the default;
 * nothing otherwise.  Best effort, like every event. */
void an_sb_seccomp_unsafe_event(const char *dir, const struct an_sandbox_opts *opts,
                                const struct an_spec_seccomp *profile);

/* Every probe on the native architecture, split by what `profile`'s
 * compiled filter answers: *allowed and *denied are label lists as above
 * (free both with an_sb_labels_free).  Errors: as an_seccomp_prepare;
 * -ENOMEM. */
int an_sb_seccomp_probe(const struct an_spec_seccomp *profile, char ***allowed, char ***denied,
                        an_error_t *err);

/* Free a label list (NULL allowed). */
void an_sb_labels_free(char **labels);

#endif
