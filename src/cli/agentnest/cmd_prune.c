/* cli/agentnest/cmd_prune.c — `agentnest prune [--all]`: remove what dead
 * or expired sandboxes left behind (with --all: every sandbox), print JSON
 * of what was removed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>
#include "agentnest/sandbox.h"
#include "cli.h"

static const char prune_usage[] =
    "Usage: agentnest prune [--all]\n"
    "\n"
    "Find sandboxes whose monitor (or one-shot owner) died or whose lifetime ended, and remove\n"
    "everything they left: processes, cgroups, container state, workspace (its mount, loop\n"
    "device and image), name, id range; also orphan agentnest cgroups and id ranges, and the\n"
    "tombstones of expired sandboxes.  Prints a JSON report:\n"
    "  {\"removed\":[{\"id\",\"reason\",\"container\",\"cgroup\",\"workspace\",\"state\",\"idrange\"}],\n"
    "   \"containers\":[...],\"orphan_cgroups\":[...],\"idranges\":[...],\"tombstones\":[...],\"errors\":[...]}\n"
    "  (container, cgroup, workspace, state: booleans, whether there was one to remove; idrange: the\n"
    "  freed range's first host uid, 0 none, -1 not freed; containers: engine state dirs with no\n"
    "  sandbox; tombstones: ids of expired sandboxes whose tombstone was removed)\n"
    "  Pools whose keeper died (with --all: every pool, its keeper ended) are removed with their\n"
    "  ready sandboxes; \"pools\" lists their names.\n"
    "  --all        destroy live sandboxes too\n"
    CLI_JSON_ALREADY_HELP
    "  -h, --help   this help\n"
    "Exit status 125 when the state cannot be read or the report lists errors.\n";

int cmd_prune(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      {"all", no_argument, NULL, CLI_OPT_ALL}, CLI_JSON_ALREADY_OPT, {"help", no_argument, NULL, 'h'}, {0}};
  const char *cmd = argv[0];
  bool all = false;
  int r = cli_parse_opts(cmd, argc, argv, ":h", longopts, prune_usage, cli_opt_flag, &all);
  if (r >= 0) return r;
  if (optind < argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
  an_error_t err = NULL;
  char *report = NULL;
  if (an_sandbox_prune_ctx(cli_ctx(), g->root, all, &report, &err) < 0) return cli_fail(cmd, &err);
  fputs(report, stdout);
  if (!*report || report[strlen(report) - 1] != '\n') fputc('\n', stdout);
  /* The report says what failed; make that visible in the status too. */
  bool errors = false;
  yajl_val doc = yajl_tree_parse(report, NULL, 0);
  const char *path[] = {"errors", NULL};
  yajl_val e = doc ? yajl_tree_get(doc, path, yajl_t_array) : NULL;
  if (e) errors = YAJL_GET_ARRAY(e)->len > 0;
  yajl_tree_free(doc);
  free(report);
  return errors ? AN_EXIT_RUNTIME : 0;
}
