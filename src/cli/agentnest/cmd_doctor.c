/* cli/agentnest/cmd_doctor.c — `agentnest doctor`: print what this host
 * offers (agentnest/doctor.h) and exit 1 when something required is
 * missing. */
#include <stdio.h>
#include <stdlib.h>
#include "agentnest/doctor.h"
#include "cli.h"

static const char doctor_usage[] =
    "Usage: agentnest doctor\n"
    "\n"
    "Print a JSON report of what this host offers sandboxes: kernel, the caller's privilege\n"
    "(host root is needed: as another user it is missing), namespaces (and the\n"
    "unprivileged user namespace sysctls), cgroup layout and controllers per hierarchy,\n"
    "seccomp and its actions, Landlock ABI, nftables, idmapped mounts, openat2, pidfd,\n"
    "clone3, the image store (path, image count), whether the state directory is writable\n"
    "and whether its parent directories let sandboxes through (others need search, o+x).\n"
    "\"egress\" says whether --network allowlist|full can be enforced here (a netns, the\n"
    "veth pair and the nftables ruleset are tried in a scratch netns and removed).\n"
    "\"missing\" lists what is required and absent.\n"
    "Exit status: 0 all required features present; 1 something is missing; 125 error.\n"
    "  -h, --help   this help\n";

int cmd_doctor(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, CLI_OPT_JSON}, {"help", no_argument, NULL, 'h'}, {0}};
  const char *cmd = argv[0];
  bool json_flag = true; /* the report is always JSON; --json is accepted */
  int r = cli_parse_opts(cmd, argc, argv, ":h", longopts, doctor_usage, cli_opt_flag, &json_flag);
  if (r >= 0) return r;
  if (optind < argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
  char *json = NULL;
  bool ok = false;
  an_error_t err = NULL;
  if (an_doctor_probe(g->root, &json, &ok, &err) < 0) return cli_fail(cmd, &err);
  fputs(json, stdout);
  free(json);
  return ok ? 0 : 1;
}
