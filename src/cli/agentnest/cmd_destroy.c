/* cli/agentnest/cmd_destroy.c — `agentnest destroy ID...`: stop every
 * process of each sandbox and remove all it has (cgroups, workspace, state,
 * name, id range). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "agentnest/sandbox.h"
#include "cli.h"
#include "util/units.h"

static const char destroy_usage[] =
    "Usage: agentnest destroy [--grace DURATION] ID...\n"
    "\n"
    "Destroy each sandbox ID (id or name): SIGTERM to its processes, SIGKILL after the grace\n"
    "period (default 0: at once), then remove its cgroups, workspace and state.  Prints each\n"
    "id destroyed.  Exit status 125 if any sandbox could not be destroyed.\n"
    "  --grace DURATION   time between SIGTERM and SIGKILL (e.g. 2s)\n"
    "  -h, --help         this help\n";

int cmd_destroy(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      {"grace", required_argument, NULL, 'g'}, {"help", no_argument, NULL, 'h'}, {0}};
  const char *cmd = argv[0];
  uint64_t grace = 0;
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    if (c == 'h') {
      fputs(destroy_usage, stdout);
      return 0;
    }
    if (c == 'g') {
      an_error_t err = NULL;
      if (an_parse_duration_ms(optarg, &grace, &err) < 0) {
        an_error_prefix(&err, "--grace %s", optarg);
        return cli_fail(cmd, &err);
      }
      continue;
    }
    return cli_getopt_error(cmd, c, argc, argv);
  }
  if (optind >= argc) return cli_usage_error(cmd, "no sandbox ID given");
  int status = 0;
  for (int i = optind; i < argc; i++) {
    struct an_sandbox *sb = NULL;
    an_error_t err = NULL;
    if (an_sandbox_open(g->root, argv[i], &sb, &err) < 0) {
      status = cli_fail(cmd, &err);
      continue;
    }
    if (an_sandbox_destroy(sb, grace, &err) < 0) status = cli_fail(cmd, &err);
    else printf("%s\n", an_sandbox_id(sb));
    an_sandbox_close(sb);
  }
  return status;
}
