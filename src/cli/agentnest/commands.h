/* cli/agentnest/commands.h — the agentnest subcommands.  Each takes the
 * arguments after its name (argv[0] is the subcommand name) and returns the
 * process exit status (DESIGN.md: 125 for a runtime failure). */
#ifndef AN_CLI_COMMANDS_H
#define AN_CLI_COMMANDS_H

/* Make the run's library context (cli_ctx.c; cli.h's cli_ctx); -1 after
 * printing why. */
int cli_ctx_init(void);

struct an_global_opts {
  const char *root;      /* image store / state root: --root, $AGENTNEST_ROOT, /var/lib/agentnest */
  int json;              /* --json given globally */
};

int cmd_image(struct an_global_opts *g, int argc, char **argv);
int cmd_run(struct an_global_opts *g, int argc, char **argv);
int cmd_shell(struct an_global_opts *g, int argc, char **argv);
int cmd_python(struct an_global_opts *g, int argc, char **argv);
int cmd_batch(struct an_global_opts *g, int argc, char **argv);
int cmd_create(struct an_global_opts *g, int argc, char **argv);
int cmd_exec(struct an_global_opts *g, int argc, char **argv);
int cmd_cp(struct an_global_opts *g, int argc, char **argv);
int cmd_ls(struct an_global_opts *g, int argc, char **argv);
int cmd_inspect(struct an_global_opts *g, int argc, char **argv);
int cmd_destroy(struct an_global_opts *g, int argc, char **argv);
int cmd_events(struct an_global_opts *g, int argc, char **argv);
int cmd_prune(struct an_global_opts *g, int argc, char **argv);
int cmd_snapshot(struct an_global_opts *g, int argc, char **argv);
int cmd_restore(struct an_global_opts *g, int argc, char **argv);
int cmd_artifacts(struct an_global_opts *g, int argc, char **argv);
int cmd_fork(struct an_global_opts *g, int argc, char **argv);
int cmd_doctor(struct an_global_opts *g, int argc, char **argv);
int cmd_policy(struct an_global_opts *g, int argc, char **argv);
int cmd_profiles(struct an_global_opts *g, int argc, char **argv);
int cmd_demo(struct an_global_opts *g, int argc, char **argv);
int cmd_pool(struct an_global_opts *g, int argc, char **argv);
int cmd_git(struct an_global_opts *g, int argc, char **argv);
int cmd_audit(struct an_global_opts *g, int argc, char **argv);
int cmd_session(struct an_global_opts *g, int argc, char **argv);
int cmd_extend(struct an_global_opts *g, int argc, char **argv);
int cmd_proc(struct an_global_opts *g, int argc, char **argv);
int cmd_mcp(struct an_global_opts *g, int argc, char **argv);
int cmd_serve(struct an_global_opts *g, int argc, char **argv);
int cmd_network(struct an_global_opts *g, int argc, char **argv);

#define AN_EXIT_RUNTIME 125
#endif
