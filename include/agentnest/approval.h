/* agentnest/approval.h — approval hooks: a host program or unix socket,
 * chosen when the sandbox is created, that allows or denies each operation
 * on it before it runs (exec, file put/get, snapshot, restore, fork; other
 * operations call an_approval_check).  Fail closed: no answer in time, an
 * answer that is not one of the two documented ones, a hook that crashes
 * or exits non-zero, a hook that cannot be started — each is a denial.
 *
 * CONFIGURATION.  The option "approve_with" (profile key; CLI
 * --approve-with) is either
 *   PROGRAM     a host executable, stored as an absolute path (a relative
 *               one is resolved against the caller's working directory,
 *               or, in a profile, against the profile's directory), or
 *   unix:PATH   a listening SOCK_STREAM unix socket at an absolute PATH,
 * and "approval_timeout" (CLI --approval-timeout) the time an answer may
 * take, default AN_APPROVAL_DEFAULT_TIMEOUT_MS.  Both are recorded with the
 * sandbox (its options.json, in the root-only state directory), so every
 * later call on it — from any CLI process, the library, another front end,
 * and a fork of it — is checked.  No option or call removes or changes
 * them after create: that takes editing the state as root on the host.
 * create refuses (-ENOENT/-EACCES/-ENOTSOCK) a hook that does not exist or
 * cannot be run.
 *
 * REQUEST (one JSON object and a newline, on the program's stdin or sent on
 * the socket, which is then shut down for writing):
 *   {"version":1,"operation":"exec",
 *    "sandbox":{"id":"3f2a9c01b7de","name":"agent1"},
 *    "arguments":{"argv":["sh","-c","make test"],"env":["DEBUG"],"workdir":null},
 *    "caller":{"uid":0,"pid":4242},"time":"2026-12-01T12:00:00.123Z"}
 * "arguments" per operation: exec {argv, env (names only), workdir,
 * timeout_ms}; put {host_path, path}; get {path, host_path}; snapshot
 * {tar_path}; restore {tar_path, sha256}; fork {}; run {argv, env} (a one-shot
 * run, asked before its sandbox exists: "sandbox" {"id":null,...});
 * artifacts {globs, host_path} (only when files are copied out).  Values
 * of secrets never appear: env entries are names, and every string passes
 * through the sandbox's secret redaction ("[REDACTED:NAME]").
 *
 * ANSWER (the program's whole stdout, or everything read from the socket
 * until the peer closes it; at most AN_APPROVAL_ANSWER_MAX bytes):
 *   {"decision":"allow"}
 *   {"decision":"deny","reason":"rm -rf is not allowed"}
 * "reason" (optional string) is shown to the caller, control characters
 * replaced by '?', cut at AN_APPROVAL_REASON_MAX bytes.  Other members are
 * ignored.
 *
 * THE PROGRAM runs on the host with the caller's credentials (never the
 * sandbox's), in a process group of its own, working directory "/", an
 * empty signal mask and default dispositions, the environment
 * "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" only,
 * stdin and stdout one unix socket, stderr /dev/null, and no other fd.  It
 * must write its answer and exit 0 within the timeout; then, or at the
 * timeout, its process group is killed (SIGKILL).  Nothing inside a
 * sandbox can reach it: it is not in the sandbox's namespaces and receives
 * no fd from it.
 *
 * AUDIT.  Every decision is an audit record (agentnest/audit.h) of op
 * "approval": {"operation","decision":"allow"|"deny","reason","hook", then
 * the members of the request's "arguments"}, written before the operation
 * runs.
 *
 * PROCESSES AND THREADS.  an_approval_check forks (the program mode), so
 * the rules of agentnest/sandbox.h apply: a single-threaded caller, SIGCHLD
 * not ignored.  It changes no signal disposition of the caller and writes to
 * the socket with MSG_NOSIGNAL (no SIGPIPE).
 */
#ifndef AGENTNEST_APPROVAL_H
#define AGENTNEST_APPROVAL_H

#include <stddef.h>
#include <stdint.h>
#include "agentnest/audit.h"
#include "agentnest/error.h"
#include "agentnest/output.h"
#include "agentnest/sandbox_opts.h"

#ifdef __cplusplus
extern "C" {
#endif

struct an_sandbox;

#define AN_APPROVAL_DEFAULT_TIMEOUT_MS 5000u
#define AN_APPROVAL_TIMEOUT_MAX_MS (600u * 1000u)   /* 10 minutes */
#define AN_APPROVAL_ANSWER_MAX (64u << 10)
#define AN_APPROVAL_REASON_MAX 512u
/* Status of an operation an approval hook denied (errno of the error). */
#define AN_APPROVAL_DENIED EACCES

/* Set the hook (PROGRAM or unix:PATH, see CONFIGURATION).  A relative
 * PROGRAM is made absolute with realpath(3) now.  Errors: -EINVAL empty,
 * "unix:" with a relative or empty path, longer than PATH_MAX; the
 * realpath errno (-ENOENT) of a relative PROGRAM; -ENOMEM. */
int an_sandbox_opts_set_approve_with(struct an_sandbox_opts *opts, const char *hook, an_error_t *err);
/* Answer timeout in ms.  Refused (-EINVAL): 0, > AN_APPROVAL_TIMEOUT_MAX_MS. */
int an_sandbox_opts_set_approval_timeout(struct an_sandbox_opts *opts, uint64_t ms, an_error_t *err);
/* The hook (NULL: none; owned by opts) and the timeout in force (ms). */
const char *an_sandbox_opts_approve_with(const struct an_sandbox_opts *opts);
uint64_t an_sandbox_opts_approval_timeout(const struct an_sandbox_opts *opts);

/* Ask sandbox sb's hook whether `operation` ([a-z_]{1,32}) with the given
 * arguments (the fields, as for an_audit_record, ended by AN_AUDIT_END) may
 * run; record the decision.  Call it before doing anything the operation
 * does.  Returns 0 when allowed or when sb has no hook (nothing recorded
 * then); -EACCES (AN_APPROVAL_DENIED) with "denied by approval hook:
 * REASON" when denied, for whatever cause (see the top: timeout, crash,
 * bad answer, hook missing); -EINVAL a bad operation name or field.  The
 * sandbox's secrets are redacted from the request.  Not thread-safe with
 * respect to other threads of the caller (it forks). */
int an_approval_check(struct an_sandbox *sb, const char *operation, an_error_t *err, ...);
/* The same with an array of n fields; returns as an_approval_check. */
int an_approval_checkv(struct an_sandbox *sb, const char *operation, const struct an_audit_field *args,
                       size_t n, an_error_t *err);

/* The check without a sandbox handle (a one-shot run before its sandbox
 * exists, a pool): hook and timeout from opts (no hook: 0), the decision
 * recorded in store_root's audit log under sandbox_id (may be NULL).
 * secrets (n may be 0) are redacted from the request.  Returns as
 * an_approval_check. */
int an_approval_check_opts(const char *store_root, const struct an_sandbox_opts *opts,
                           const char *sandbox_id, const char *sandbox_name, const char *operation,
                           const struct an_audit_field *args, size_t n,
                           const struct an_secret *secrets, size_t nsecrets, an_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
