/* cli/agentnest/cmd_create.c — `agentnest create [OPTIONS]`: start a
 * persistent sandbox (kept alive by its monitor until `destroy` or the end
 * of its lifetime) and print its id. */
#include <stdio.h>
#include <string.h>
#include "agentnest/sandbox.h"
#include "cli.h"
#include "cli_pool.h"

static const char create_usage[] =
    "Usage: agentnest create [OPTIONS]\n"
    "\n"
    "Create a persistent sandbox and print its id.  It lives until `agentnest destroy ID` or\n"
    "the end of its lifetime (--timeout), whichever comes first; use `agentnest exec`, `cp`,\n"
    "`snapshot`, `artifacts` on it meanwhile.\n\n";

int cmd_create(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      CLI_SANDBOX_LONGOPTS,
      CLI_POOL_LONGOPTS,
      {"json", no_argument, NULL, CLI_OPT_JSON},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  static struct cli_sandbox_flags flags;
  memset(&flags, 0, sizeof flags);
  int c;
  const char *pool = NULL;
  bool pool_only = false;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
    if (cli_sandbox_flag(&flags, c, optarg)) continue;
    if (c == 'h') {
      printf("%s%s\n%s\n  -h, --help              this help\n"
             "  --json                  print {\"id\",\"pooled\"} instead of the id alone (also the\n"
             "                          global --json)\n",
             create_usage, cli_sandbox_opts_help, cli_pool_opts_help);
      return 0;
    }
    if (c == CLI_OPT_JSON) { g->json = true; continue; }
    if (c == CLI_OPT_POOL) { pool = optarg; continue; }
    if (c == CLI_OPT_POOL_ONLY) { pool_only = true; continue; }
    return cli_getopt_error(argv[0], c, argc, argv);
  }
  if (optind < argc) return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
  if (pool_only && !pool) return cli_usage_error(argv[0], "--pool-only needs --pool NAME");
  int r = cli_pool_check_flags(argv[0], pool, flags.n, flags.profile);
  if (r) return r;
  struct an_sandbox *sb = NULL;
  bool pooled = false;
  if (pool) {
    if ((r = cli_pool_take(argv[0], g->root, pool, pool_only, false, &sb, &pooled))) return r;
  } else {
    struct an_sandbox_opts *opts = NULL;
    if ((r = cli_sandbox_opts(argv[0], &flags, &opts))) return r;
    an_error_t err = NULL;
    r = an_sandbox_create(g->root, opts, &sb, &err);
    an_sandbox_opts_free(opts);
    if (r < 0) return cli_fail(argv[0], &err);
  }
  if (g->json) printf("{\"id\":\"%s\",\"pooled\":%s}\n", an_sandbox_id(sb), pooled ? "true" : "false");
  else printf("%s\n", an_sandbox_id(sb));
  an_sandbox_close(sb);
  return 0;
}
