/* cli/agentnest/cli_proc.h — `exec --detach` (cmd_proc.c), called by
 * cmd_exec.c once its options are parsed. */
#ifndef AN_CLI_PROC_H
#define AN_CLI_PROC_H
#include <stdbool.h>
#include "commands.h"

/* Start argv detached in sandbox `id`; print its handle (or a JSON
 * {sandbox, handle, pid}).  Returns the exit status (125 on failure). */
int cli_exec_detach(struct an_global_opts *g, const char *cmd, const char *id, char *const argv[],
                    char *const *env, const char *workdir, bool json);
#endif
