/* cli/agentnest/cmd_fork.c — `agentnest fork ID`: a new sandbox with the
 * same options and a point-in-time copy of the workspace; prints its id. */
#include <stdio.h>
#include "agentnest/sandbox.h"
#include "cli.h"

static const char fork_usage[] =
    "Usage: agentnest fork ID\n"
    "\n"
    "Create a new sandbox with the options of sandbox ID (a fresh id, no name, a full new\n"
    "lifetime) and a point-in-time copy of its workspace (ID is frozen during the copy).\n"
    "Prints the new id.\n"
    "  -h, --help   this help\n";

int cmd_fork(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {0}};
  const char *cmd = argv[0];
  int r = cli_parse_opts(cmd, argc, argv, ":h", longopts, fork_usage, NULL, NULL);
  if (r >= 0) return r;
  if (argc - optind != 1) return cli_usage_error(cmd, "expected one sandbox ID");
  struct an_sandbox *sb = NULL, *copy = NULL;
  an_error_t err = NULL;
  if (an_sandbox_open_ctx(cli_ctx(), g->root, argv[optind], &sb, &err) < 0) return cli_fail(cmd, &err);
  r = an_sandbox_fork(sb, &copy, &err);
  an_sandbox_close(sb);
  if (r < 0) return cli_fail(cmd, &err);
  printf("%s\n", an_sandbox_id(copy));
  an_sandbox_close(copy);
  return 0;
}
