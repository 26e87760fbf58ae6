/* cli/agentnest/cmd_extend.c — `agentnest extend ID DURATION [--json]`: a
 * longer lifetime for a live sandbox (an_sandbox_extend), bounded by its
 * profile's max_lifetime. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "cli.h"
#include "util/units.h"

static const char extend_usage[] =
    "Usage: agentnest extend ID DURATION [--json]\n"
    "\n"
    "Add DURATION (\"300\", \"10m\", \"1.5h\"...) to the lifetime of the live sandbox ID: its\n"
    "deadline moves by that much and its monitor re-arms its timer.  The whole lifetime,\n"
    "counted from creation, may not exceed the profile's max_lifetime (default: 1 h, or\n"
    "the lifetime if longer).  Prints the new deadline (or a JSON {id, deadline_ms}).\n"
    "Exit status: 0, or 125 (no such sandbox, expired, over the maximum, bad DURATION).\n";

int cmd_extend(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, CLI_OPT_JSON}, {"help", no_argument, NULL, 'h'}, {0}};
  const char *cmd = argv[0];
  bool json = g->json;
  const char *ops[2] = {0};
  size_t nops = 0;
  optind = 1;
  opterr = 0;
  while (optind < argc) {
    int c = getopt_long(argc, argv, "+:h", longopts, NULL);
    if (c == -1) {
      if (nops >= 2) return cli_usage_error(cmd, "too many operands");
      ops[nops++] = argv[optind++];
      continue;
    }
    if (c == 'h') { fputs(extend_usage, stdout); return 0; }
    if (c == CLI_OPT_JSON) { json = true; continue; }
    return cli_getopt_error(cmd, c, argc, argv);
  }
  if (nops != 2) return cli_usage_error(cmd, "takes ID DURATION");
  uint64_t ms = 0;
  an_error_t err = NULL;
  if (an_parse_duration_ms(ops[1], &ms, &err) < 0 || !ms) {
    if (!err) an_error_set(&err, 0, "must be more than 0");
    an_error_prefix(&err, "DURATION %s", ops[1]);
    return cli_fail(cmd, &err);
  }
  struct an_sandbox *sb = NULL;
  if (an_sandbox_open_ctx(cli_ctx(), g->root, ops[0], &sb, &err) < 0) return cli_fail(cmd, &err);
  uint64_t d = 0;
  int rc = 0;
  if (an_sandbox_extend(sb, ms, &d, &err) < 0) {
    rc = cli_fail(cmd, &err);
  } else if (json) {
    struct an_jgen j;
    an_jgen_init(&j, true);
    an_jgen_map_open(&j);
    an_jgen_kv_str(&j, "id", an_sandbox_id(sb));
    an_jgen_kv_u64(&j, "deadline_ms", d);
    an_jgen_map_close(&j);
    rc = cli_print_json(cmd, &j, "extend");
  } else {
    time_t t = (time_t) (d / 1000);
    struct tm tm;
    char buf[64];
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    printf("%s: deadline %s\n", an_sandbox_id(sb), buf);
  }
  an_sandbox_close(sb);
  return rc;
}
