/* sandbox/audit_internal.h — what audit.c, audit_read.c, audit_ops.c and
 * approval.c share (not installed): the audit directory and its lock, the
 * record time format, and the sandbox layer's one-call recorder. */
#ifndef AN_SANDBOX_AUDIT_INTERNAL_H
#define AN_SANDBOX_AUDIT_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include "agentnest/audit.h"
#include "agentnest/error.h"

struct an_sandbox;

/* O_DIRECTORY fd of <root>/audit (made 0700 with `create`), or -errno
 * (-ELOOP: a symlink or non-directory there). */
int an_audit_open_dir(const char *root, bool create, an_error_t *err);
/* The flock of <dfd>/audit.lock (how: LOCK_EX or LOCK_SH): its fd, or -errno. */
int an_audit_lock(int dfd, const char *root, int how, an_error_t *err);
/* "YYYY-MM-DDTHH:MM:SS.mmmZ" of CLOCK_REALTIME ms. */
void an_audit_time(uint64_t ms, char buf[32]);

/* The sandbox layer's record of operation `op` on sandbox sb (NULL: none;
 * then `root` and `id` name the store and sandbox) with its outcome: the
 * fields f[0..n) (may include AN_AUDIT_SECRETS; the sandbox's secrets are
 * always added), then "result": "ok" when r >= 0, else "error" and
 * "error": the message of *err (redacted).  Best effort: a failure to
 * write is dropped (the operation's own result stands). */
void an_sb_audit(const struct an_sandbox *sb, const char *root, const char *id, const char *op,
                 int r, const an_error_t *err, const struct an_audit_field *f, size_t n);

/* The record of a create (sandbox.c): image, name, profile, network,
 * approve_with, env and secret names (never values), oneshot, outcome. */
struct an_sandbox_opts;
void an_sb_audit_create(const char *root, const char *id, const struct an_sandbox_opts *opts,
                        bool oneshot, int r, const an_error_t *err);

/* The secrets of opts with their values: *out heap (borrowed strings),
 * *n of them.  -ENOMEM. */
int an_sb_opts_secrets(const struct an_sandbox_opts *opts, struct an_secret **out, size_t *n);

/* The secrets of sb whose values are known (approval.c): *out heap
 * (caller frees; borrowed strings), *n of them.  -ENOMEM. */
struct an_secret;
int an_sb_known_secrets(const struct an_sandbox *sb, struct an_secret **out, size_t *n);

/* Collect the fields of a variadic list ended by AN_AUDIT_END into f[],
 * *n of them.  Returns true when there were more than AN_AUDIT_MAX_FIELDS
 * (f then holds the first ones). */
bool an_sb_audit_fields_va(va_list ap, struct an_audit_field f[AN_AUDIT_MAX_FIELDS], size_t *n);

#endif
