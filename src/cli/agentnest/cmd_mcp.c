/* cli/agentnest/cmd_mcp.c — `agentnest mcp [OPTIONS]`: the Model Context
 * Protocol server over stdio (src/mcp/mcp.h).  Parses the options, fills
 * the API context, runs the server. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/common/ctx_env.h"
#include "agentnest/api.h"
#include "cli.h"
#include "mcp/mcp.h"
#include "util/units.h"

static const char mcp_usage[] =
    "Usage: agentnest mcp [OPTIONS]\n"
    "\n"
    "Serve the Model Context Protocol (revision 2025-11-25; also 2025-06-18, 2025-03-26) on\n"
    "stdin/stdout, for an MCP client that starts this command.  Tools: create, run_code, exec,\n"
    "write_file, read_file, list_files, artifacts, snapshot, restore, fork, ls, inspect, events,\n"
    "destroy, session_start, session_run, session_stop, network, network_change, extend,\n"
    "audit (each with an input and an output JSON Schema).  Tools act only on sandboxes this\n"
    "server created; all of them are destroyed when the client goes away (end of stdin,\n"
    "SIGTERM, SIGINT, SIGHUP); after a SIGKILL their monitors destroy them and\n"
    "`agentnest prune` removes what is left.\n"
    "\n"
    "  --allow-tools LIST     offer only these tools (comma-separated names)\n"
    "  --profile NAME         every sandbox uses this profile; clients cannot pick another\n"
    "                         profile or image\n"
    "  --max-sandboxes N      at most N sandboxes at once (default 8; 0: no cap); a create or\n"
    "                         fork counts from its start, a one-shot run_code while it runs\n"
    "  --max-lifetime DUR     cap on each sandbox's lifetime (default 1h)\n"
    "  --quiet                no log lines on stderr\n"
    "  -h, --help             this help\n"
    "\n"
    "Client configuration (Claude Desktop, VS Code, ...):\n"
    "  {\"mcpServers\": {\"agentnest\": {\"command\": \"agentnest\", \"args\": [\"mcp\"]}}}\n"
    "See agentnest-mcp(1).\n";

enum { OPT_ALLOW = 2000, OPT_PROFILE, OPT_MAX_SB, OPT_MAX_LIFE, OPT_QUIET };

struct mcp_cli {
  const char *cmd;
  char *allow;
  const char *profile;
  size_t max_sandboxes;
  uint64_t max_lifetime_ms;
  bool quiet;
};

static int mcp_opt(void *ctx, int code, char *arg) {
  struct mcp_cli *m = ctx;
  an_error_t err = NULL;
  switch (code) {
  case OPT_ALLOW: m->allow = arg; return -1;
  case OPT_PROFILE: m->profile = arg; return -1;
  case OPT_QUIET: m->quiet = true; return -1;
  case OPT_MAX_SB: {
    char *end = NULL;
    unsigned long long v = strtoull(arg, &end, 10);
    if (!*arg || *end || v > 100000) return cli_usage_error(m->cmd, "--max-sandboxes %s: expected 0..100000", arg);
    m->max_sandboxes = (size_t) v;
    return -1;
  }
  case OPT_MAX_LIFE:
    if (an_parse_duration_ms(arg, &m->max_lifetime_ms, &err) < 0 || !m->max_lifetime_ms) {
      if (!err) an_error_set(&err, 0, "must be more than 0");
      an_error_prefix(&err, "--max-lifetime %s", arg);
      return cli_fail(m->cmd, &err);
    }
    return -1;
  }
  return AN_EXIT_RUNTIME;
}

int cmd_mcp(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      {"allow-tools", required_argument, NULL, OPT_ALLOW},
      {"profile", required_argument, NULL, OPT_PROFILE},
      {"max-sandboxes", required_argument, NULL, OPT_MAX_SB},
      {"max-lifetime", required_argument, NULL, OPT_MAX_LIFE},
      {"quiet", no_argument, NULL, OPT_QUIET},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  struct mcp_cli m = {.cmd = argv[0], .max_sandboxes = 8, .max_lifetime_ms = 3600 * 1000};
  int r = cli_parse_opts(argv[0], argc, argv, ":h", longopts, mcp_usage, mcp_opt, &m);
  if (r >= 0) return r;
  if (optind < argc) return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
  /* --allow-tools: names of the table, else a usage error naming the first unknown one */
  char *list[64] = {0};
  size_t nl = 0;
  for (char *save = NULL, *t = m.allow ? strtok_r(m.allow, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
    if (!an_api_op_find(t)) return cli_usage_error(argv[0], "--allow-tools: unknown tool '%s'", t);
    if (nl < 63) list[nl++] = t;
  }
  if (m.allow && !nl) return cli_usage_error(argv[0], "--allow-tools: no tool named");
  /* the servers' context reads no secret from this process's environment */
  __attribute__((cleanup(an_ctx_freep))) struct an_ctx *lib = NULL;
  {
    an_error_t err = NULL;
    if (an_cli_ctx_from_env(NULL, false, &lib, &err) < 0) return cli_fail(argv[0], &err);
  }
  if (m.profile) {
    /* refuse a profile that does not load now, not at the first create */
    struct an_sandbox_opts *o = NULL;
    an_error_t err = NULL;
    if (an_sandbox_opts_new_ctx(lib, &o, &err) < 0 || an_sandbox_opts_load_profile(o, m.profile, NULL, &err) < 0) {
      an_sandbox_opts_free(o);
      an_error_prefix(&err, "--profile %s", m.profile);
      return cli_fail(argv[0], &err);
    }
    an_sandbox_opts_free(o);
  }
  struct an_mcp_opts o = {
      .api = {.store_root = g->root, .lib = lib, .profile = m.profile,
              .max_lifetime_ms = m.max_lifetime_ms, .lifeline_fd = -1},
      .allow_tools = m.allow ? (const char *const *) list : NULL,
      .max_sandboxes = m.max_sandboxes,
      .in_fd = 0, .out_fd = 1, .log_fd = m.quiet ? -1 : 2,
  };
  an_error_t err = NULL;
  if (an_mcp_serve(&o, &err) < 0) return cli_fail(argv[0], &err);
  return 0;
}
