/* cli/agentnest/cmd_events.c — `agentnest events ID [--follow]`: the
 * sandbox's event log, one JSON object per line. */
#include <stdio.h>
#include "agentnest/sandbox.h"
#include "cli.h"

static const char events_usage[] =
    "Usage: agentnest events ID [--follow]\n"
    "\n"
    "Print the events of sandbox ID (created, exec, expired, destroyed, ...), one JSON object\n"
    "per line.\n"
    "  -f, --follow   keep printing new events until the sandbox is destroyed\n"
    CLI_JSON_ALREADY_HELP
    "  -h, --help     this help\n";

static int print_event(void *data, const char *json) {
  (void) data;
  printf("%s\n", json);
  return fflush(stdout) == EOF ? 1 : 0;
}

int cmd_events(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      {"follow", no_argument, NULL, 'f'}, CLI_JSON_ALREADY_OPT, {"help", no_argument, NULL, 'h'}, {0}};
  const char *cmd = argv[0];
  bool follow = false;
  int r = cli_parse_opts(cmd, argc, argv, ":fh", longopts, events_usage, cli_opt_flag, &follow);
  if (r >= 0) return r;
  if (argc - optind != 1) return cli_usage_error(cmd, "expected one sandbox ID");
  an_error_t err = NULL;
  if (an_sandbox_events(g->root, argv[optind], follow, print_event, NULL, &err) < 0)
    return cli_fail(cmd, &err);
  return 0;
}
