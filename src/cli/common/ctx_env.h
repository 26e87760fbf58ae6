/* cli/common/ctx_env.h — the front ends' library context (agentnest/ctx.h)
 * from the environment variables they keep supporting: AGENTNEST_INIT (the
 * agentnest-init binary), AGENTNEST_PROFILES (the profiles directory),
 * AGENTNEST_IDRANGE_ROOT (where id ranges are reserved).  An unset or empty
 * variable leaves the library's default.  Only front ends read the
 * environment; the library never does. */
#ifndef AN_CLI_CTX_ENV_H
#define AN_CLI_CTX_ENV_H

#include <stdbool.h>
#include "agentnest/ctx.h"

/* Make a context for store `root` (NULL: the library's default) from the
 * environment.  `secret_env`: a secret given as NAME takes the value of NAME
 * from this process's environment (the CLI's --secret NAME); false for the
 * servers (a client must not read the server's environment).  *out is owned
 * by the caller (an_ctx_free).  Errors as an_ctx_new, the message naming the
 * variable. */
int an_cli_ctx_from_env(const char *root, bool secret_env, struct an_ctx **out, an_error_t *err);

#endif
