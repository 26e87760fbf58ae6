/* agentnest/ctx.h — the library's explicit context: where the store, the
 * agentnest-init binary, the profiles and the id-range reservations are,
 * how a secret named without a value is looked up, and where warnings and
 * log lines go.  The library reads no environment variable: the front ends
 * (agentnest(1) and its `mcp` and `serve` commands) build a context from
 * their flags and from AGENTNEST_INIT, AGENTNEST_PROFILES and
 * AGENTNEST_IDRANGE_ROOT (src/cli/common/ctx_env.c), as crun builds its
 * libcrun_context_t.  (agentnest-oci(1) uses only the engine layer, which
 * needs none of these.)
 *
 * How a context reaches the library: an_sandbox_opts_new_ctx stores it in
 * the options (borrowed); a sandbox created from those options finds
 * agentnest-init and reserves its id range as the context says (the range's
 * root is recorded with the sandbox, so its teardown releases it there
 * whoever tears it down); a handle opened with an_sandbox_open_ctx hands the
 * context on to what it makes (fork); the few calls that have neither
 * options nor a handle take one (an_sandbox_prune_ctx).  A NULL context
 * means the built-in defaults listed per field below.
 *
 * Thread-safety: a context is immutable once made.  Any number of threads
 * may use one context at the same time (the accessors only read it);
 * an_ctx_free must not race with any use.  The callbacks may be called from
 * any thread that uses the context, and concurrently: they must be
 * thread-safe themselves. */
#ifndef AGENTNEST_CTX_H
#define AGENTNEST_CTX_H

#include <stdarg.h>
#include <stdbool.h>
#include "agentnest/error.h"
#include "agentnest/files.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Log levels of an_log_fn (syslog's numbers). */
enum { AN_LOG_ERR = 3, AN_LOG_WARNING = 4, AN_LOG_INFO = 6, AN_LOG_DEBUG = 7 };

/* A log line: msg is NUL-terminated, without a trailing newline, valid only
 * during the call. */
typedef void (*an_log_fn)(void *data, int level, const char *msg);

/* The value of the secret `name` given without a value ("--secret NAME"),
 * or NULL when there is none.  The string must stay valid until the call
 * that asked returns (the library copies it). */
typedef const char *(*an_secret_env_fn)(void *data, const char *name);

/* What an_ctx_new copies.  Every field may be NULL/0 (the default). */
struct an_ctx_config {
  const char *store_root;    /* image store and sandbox state; NULL: AN_IMAGE_DEFAULT_STORE
                                (used where a call's own store_root argument is NULL) */
  const char *init_path;     /* agentnest-init; NULL: "agentnest-init"
                                next to /proc/self/exe, else AN_LIBEXECDIR "/agentnest-init" */
  const char *profiles_dir;  /* named profiles and seccomp/default.json; NULL: AN_DATADIR
                                "/profiles" */
  const char *idrange_root;  /* machine-wide id-range reservations; NULL:
                                AN_IDRANGE_ROOT_DEFAULT (tests keep theirs apart) */
  an_secret_env_fn secret_env; /* NULL: a secret named without a value is refused (the
                                  servers: a client must not read the server's environment) */
  void *secret_env_data;
  an_warn_fn warn;           /* warnings of calls that take no warning callback of their own
                                (an_sandbox_open_ctx: a sandbox whose secret values are gone);
                                NULL: dropped */
  void *warn_data;
  an_log_fn log;             /* debug lines (which agentnest-init was found); NULL: dropped */
  void *log_data;
};

struct an_ctx;               /* opaque: an_ctx_free */

/* Make a context from `config` (NULL: all defaults); the strings are copied,
 * the callback data pointers are borrowed.  *out is heap memory owned by the
 * caller (an_ctx_free), and must outlive every options object, sandbox
 * handle and call that uses it.
 * Paths are not checked for existence here (an_ctx_init_path checks the
 * binary when a sandbox is made).
 * Errors: -EINVAL a path that is empty, not absolute or longer than
 * PATH_MAX - 1 (the message names the field); -ENOMEM. */
int an_ctx_new(const struct an_ctx_config *config, struct an_ctx **out, an_error_t *err);

/* Free a context (NULL allowed).  Not while anything still uses it.
 * an_ctx_freep: the same through a pointer, for __attribute__((cleanup)). */
void an_ctx_free(struct an_ctx *ctx);
void an_ctx_freep(struct an_ctx **ctx);

/* The fields, defaults applied (ctx NULL allowed).  Storage of the context
 * or static; do not free.  an_ctx_store_root returns NULL when unset (the
 * callee's own default then applies). */
const char *an_ctx_store_root(const struct an_ctx *ctx);
const char *an_ctx_profiles_dir(const struct an_ctx *ctx);
const char *an_ctx_idrange_root(const struct an_ctx *ctx);

/* The agentnest-init binary: the context's init_path, else the search above.
 * *path is heap memory owned by the caller.  Errors: -ENOENT none found (the
 * message lists where it looked); -ENOMEM. */
int an_ctx_init_path(const struct an_ctx *ctx, char **path, an_error_t *err);

/* The value of secret `name` through the context's secret_env (ctx NULL or no
 * callback: NULL).  The string is borrowed from the callback's owner (not to
 * be freed; valid as long as the callback promises, for getenv(3) until the
 * environment changes). */
const char *an_ctx_secret_env(const struct an_ctx *ctx, const char *name);
/* Whether the context has a secret_env callback. */
bool an_ctx_has_secret_env(const struct an_ctx *ctx);

/* Send a printf-formatted warning / log line to the context's callback (none:
 * dropped; a message that cannot be formatted is dropped). */
void an_ctx_warn(const struct an_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same for a log line of syslog level `level` (LOG_ERR .. LOG_DEBUG). */
void an_ctx_log(const struct an_ctx *ctx, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif
