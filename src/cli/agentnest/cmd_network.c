/* cli/agentnest/cmd_network.c — `agentnest network ID [--mode M] [--allow E]...
 * [--deny E]...`: print or change a live sandbox's egress policy
 * (an_sandbox_network_change / an_sandbox_network_json). */
#include <stdio.h>
#include <stdlib.h>
#include "agentnest/sandbox.h"
#include "cli.h"

static const char network_usage[] =
    "Usage: agentnest network ID [--mode allowlist|full] [--allow ENTRY]... [--deny ENTRY]...\n"
    "\n"
    "Without options: print sandbox ID's egress policy and its counters as JSON (mode,\n"
    "allow, dns_upstream, counters: packets redirected to the proxy, dropped, DNS).  The\n"
    "output is always JSON; there is no --json option.\n"
    "With options: change it, atomically (one nftables transaction), and print the new one.\n"
    "  --mode MODE     allowlist or full (a sandbox made with --network none has no egress)\n"
    "  --allow ENTRY   add an entry (NAME[:PORTS], *.ZONE[:PORTS], CIDR[:PORTS]; repeatable)\n"
    "  --deny ENTRY    remove an entry, given exactly as it was added (repeatable)\n"
    "  -h, --help      this help\n"
    "Addresses already resolved for names are forgotten and resolved again. See NETWORK in\n"
    "agentnest(1).\n";

enum { OPT_MODE = 1, OPT_ALLOW, OPT_DENY };

struct network_args {
  const char *mode;
  const char *allow[256], *deny[256];
  size_t nallow, ndeny;
};

static int on_opt(void *ctx, int code, char *arg) {
  struct network_args *a = ctx;
  if (code == OPT_MODE) a->mode = arg;
  else if (code == OPT_ALLOW && a->nallow < 256) a->allow[a->nallow++] = arg;
  else if (code == OPT_DENY && a->ndeny < 256) a->deny[a->ndeny++] = arg;
  else return cli_usage_error("network", "more than 256 --allow or --deny");
  return -1;
}

int cmd_network(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {{"mode", required_argument, NULL, OPT_MODE},
                                           {"allow", required_argument, NULL, OPT_ALLOW},
                                           {"deny", required_argument, NULL, OPT_DENY},
                                           {"help", no_argument, NULL, 'h'}, {0}};
  const char *cmd = argv[0];
  struct network_args a = {0};
  int r = cli_parse_opts(cmd, argc, argv, ":h", longopts, network_usage, on_opt, &a);
  if (r >= 0) return r;
  if (argc - optind != 1) return cli_usage_error(cmd, "expected one sandbox ID");
  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  if (an_sandbox_open_ctx(cli_ctx(), g->root, argv[optind], &sb, &err) < 0) return cli_fail(cmd, &err);
  if ((a.mode || a.nallow || a.ndeny) &&
      an_sandbox_network_change(sb, a.mode, a.allow, a.nallow, a.deny, a.ndeny, &err) < 0) {
    an_sandbox_close(sb);
    return cli_fail(cmd, &err);
  }
  char *json = NULL;
  r = an_sandbox_network_json(sb, &json, &err);
  an_sandbox_close(sb);
  if (r < 0) return cli_fail(cmd, &err);
  fputs(json, stdout);
  free(json);
  return 0;
}
