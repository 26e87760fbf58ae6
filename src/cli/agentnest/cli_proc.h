/* cli/agentnest/cli_proc.h — `exec --detach` (cmd_proc.c), called by
 * cmd_exec.c once its options are parsed. */
#ifndef AN_CLI_PROC_H
#define AN_CLI_PROC_H
#include <stdbool.h>
#include <stddef.h>
#include "commands.h"

/* Start argv detached in sandbox `id` with the extra environment *env
 * (*nenv entries; PYTHONUNBUFFERED=1 is added, cli_env_python_unbuffered,
 * so *env may be reallocated: the caller frees it); print its handle (or a
 * JSON {sandbox, handle, pid}).  Returns the exit status (125 on failure). */
int cli_exec_detach(struct an_global_opts *g, const char *cmd, const char *id, char *const argv[],
                    char ***env, size_t *nenv, const char *workdir, bool json);
#endif
