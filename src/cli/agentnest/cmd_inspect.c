/* cli/agentnest/cmd_inspect.c — `agentnest inspect [--policy] ID`: one
 * sandbox as JSON (state, ids, cgroup, workspace, options without secrets),
 * or its effective policy (agentnest/policy.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/policy.h"
#include "agentnest/sandbox.h"
#include "cli.h"

static const char inspect_usage[] =
    "Usage: agentnest inspect [--policy] ID   (options may also follow ID)\n"
    "\n"
    "Print sandbox ID (id or name) as a JSON object: id, name, image, status, created,\n"
    "deadline, init_pid, monitor_pid, cgroup, workspace, host_uid_base, options (never\n"
    "secrets), pids_current, egress_counters (the egress ruleset's counters, as in\n"
    "`agentnest network ID`; null for --network none).\n"
    "  --policy     print instead the effective policy, from the OCI spec the engine\n"
    "               applied: namespaces, user and id mappings, capabilities (all five\n"
    "               sets), rlimits, every mount with its options, masked/read-only paths,\n"
    "               devices, cgroup limits, seccomp (default action, architectures, rules,\n"
    "               digest, which dangerous calls it denies), Landlock (mode, whether this\n"
    "               kernel enforces it, writable paths), network, and what is NOT enforced\n"
    CLI_JSON_ALREADY_HELP
    "  -h, --help   this help\n";

int cmd_inspect(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      {"policy", no_argument, NULL, CLI_OPT_JSON}, CLI_JSON_ALREADY_OPT, {"help", no_argument, NULL, 'h'}, {0}};
  const char *cmd = argv[0];
  bool policy = false;
  int r = cli_parse_opts(cmd, argc, argv, ":h", longopts, inspect_usage, cli_opt_flag, &policy);
  if (r >= 0) return r;
  if (argc - optind != 1) return cli_usage_error(cmd, "expected one sandbox ID");
  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  if (an_sandbox_open_ctx(cli_ctx(), g->root, argv[optind], &sb, &err) < 0) return cli_fail(cmd, &err);
  char *doc = NULL;
  r = policy ? an_sandbox_policy(sb, &doc, &err) : an_sandbox_inspect(sb, &doc, &err);
  an_sandbox_close(sb);
  if (r < 0) return cli_fail(cmd, &err);
  fputs(doc, stdout);
  if (!*doc || doc[strlen(doc) - 1] != '\n') fputc('\n', stdout);
  free(doc);
  return 0;
}
