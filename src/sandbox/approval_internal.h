/* sandbox/approval_internal.h — the hooks through which the options code
 * (opts.c, opts_json.c, profile.c) and create (sandbox.c) handle the
 * approval options (sandbox/approval_opts.c; not installed). */
#ifndef AN_SANDBOX_APPROVAL_INTERNAL_H
#define AN_SANDBOX_APPROVAL_INTERNAL_H

#include <stdbool.h>
#include "agentnest/error.h"

struct an_sandbox_opts;
struct an_jgen;
struct yajl_val_s;

/* True when `option` is approve_with or approval_timeout (*r: the
 * setter's result). */
bool an_sb_approval_set_option(struct an_sandbox_opts *o, const char *option, const char *text, int *r,
                               an_error_t *err);
/* The same for a profile key with its JSON value (a relative program is
 * taken relative to the profile's directory). */
bool an_sb_approval_profile_key(struct an_sandbox_opts *o, const char *profile_path, const char *key,
                                struct yajl_val_s *v, int *r, an_error_t *err);
/* Members "approve_with" and "approval_timeout" of options.json (when set). */
void an_sb_approval_opts_gen(struct an_jgen *j, const struct an_sandbox_opts *o);
/* Copy into c (zeroed fields); -ENOMEM. */
int an_sb_approval_opts_dup(const struct an_sandbox_opts *o, struct an_sandbox_opts *c);
void an_sb_approval_opts_free(struct an_sandbox_opts *o);
/* At create: the hook program is an executable regular file, or the socket
 * exists and is a socket.  Errors: the stat/access errno, -ENOTSOCK,
 * -EACCES, naming the hook. */
int an_sb_approval_validate(const struct an_sandbox_opts *o, an_error_t *err);

#endif
