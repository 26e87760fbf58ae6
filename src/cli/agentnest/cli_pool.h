/* cli/agentnest/cli_pool.h — what the commands that take a sandbox from a
 * warm pool share (run/shell/python/create/batch --pool NAME [--pool-only]):
 * the option codes and the --json result document with "pooled". */
#ifndef AN_CLI_POOL_H
#define AN_CLI_POOL_H

#include <stdbool.h>
#include "agentnest/artifacts.h"
#include "agentnest/sandbox.h"

enum { CLI_OPT_POOL = 1300, CLI_OPT_POOL_ONLY };

#define CLI_POOL_LONGOPTS                                   \
  {"pool", required_argument, NULL, CLI_OPT_POOL},          \
  {"pool-only", no_argument, NULL, CLI_OPT_POOL_ONLY}

extern const char cli_pool_opts_help[];

/* With --pool the sandbox options are the pool's: a sandbox flag or a
 * profile given too is refused (125, naming the first flag) — a pooled
 * sandbox must be one that a fresh create with the pool's options makes.
 * nflags: how many sandbox flags were given; profile: --profile's value. */
int cli_pool_check_flags(const char *cmd, const char *pool, size_t nflags, const char *profile);

/* Take a sandbox from `pool` (an_pool_claim, `owned` as there); when the
 * pool is empty and !pool_only, create a fresh one with the pool's options
 * (owned: an_sandbox_create_owned) and warn on stderr.  *pooled says which.
 * Returns 0 or the exit status (125) after printing why. */
int cli_pool_take(const char *cmd, const char *root, const char *pool, bool pool_only, bool owned,
                  struct an_sandbox **out, bool *pooled);

/* cli_print_result_json with a "pooled" member. */
int cli_print_result_json_pooled(const char *cmd, const char *id, const struct an_exec_result *res,
                                 const struct an_artifact_list *arts, bool pooled);

#endif
