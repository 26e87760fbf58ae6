/* cli/agentnest/cmd_destroy.c — `agentnest destroy ID...`: stop every
 * process of each sandbox and remove all it has (cgroups, workspace, state,
 * name, id range): in the background after the processes are dead and the
 * sandbox is unreachable (an_sandbox_destroy_detached), or all of it before
 * returning with --wait. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "agentnest/sandbox.h"
#include "cli.h"
#include "util/units.h"

static const char destroy_usage[] =
    "Usage: agentnest destroy [--grace DURATION] [--wait] ID...\n"
    "\n"
    "Destroy each sandbox ID (id or name): SIGTERM to its processes, SIGKILL after the grace\n"
    "period (default 0: at once).  When it returns, no process of the sandbox runs and no\n"
    "command finds it (its name is free); a background reaper removes its cgroups,\n"
    "workspace and state (`agentnest prune` finishes what a killed reaper left).  Prints\n"
    "each id destroyed.  A dead sandbox (its monitor or pid 1 gone, `ls`: dead) is removed\n"
    "as `agentnest prune` would remove it.  Exit status 125 if any sandbox could not be\n"
    "destroyed.\n"
    "  --grace DURATION   time between SIGTERM and SIGKILL (e.g. 2s)\n"
    "  --wait             remove everything before returning (no background reaper)\n"
    "  -h, --help         this help\n";

struct destroy_flags {
  const char *cmd;
  uint64_t grace_ms;
  bool wait;
};

static int destroy_opt(void *ctx, int code, char *arg) {
  struct destroy_flags *f = ctx;
  an_error_t err = NULL;
  if (code == 'w') {
    f->wait = true;
    return -1;
  }
  if (an_parse_duration_ms(arg, &f->grace_ms, &err) < 0) {
    an_error_prefix(&err, "--grace %s", arg);
    return cli_fail(f->cmd, &err);
  }
  return -1;
}

int cmd_destroy(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      {"grace", required_argument, NULL, 'g'}, {"wait", no_argument, NULL, 'w'},
      {"help", no_argument, NULL, 'h'}, {0}};
  const char *cmd = argv[0];
  struct destroy_flags f = {.cmd = cmd};
  int r = cli_parse_opts(cmd, argc, argv, ":h", longopts, destroy_usage, destroy_opt, &f);
  if (r >= 0) return r;
  uint64_t grace = f.grace_ms;
  if (optind >= argc) return cli_usage_error(cmd, "no sandbox ID given");
  int status = 0;
  for (int i = optind; i < argc; i++) {
    struct an_sandbox *sb = NULL;
    an_error_t err = NULL;
    int o = an_sandbox_open_ctx(cli_ctx(), g->root, argv[i], &sb, &err);
    if (o == -ESRCH) {   /* dead: its remains are removed as prune would */
      an_error_free(&err);
      char id[AN_SANDBOX_ID_LEN + 1];
      if (an_sandbox_destroy_dead_ctx(cli_ctx(), g->root, argv[i], id, &err) < 0) status = cli_fail(cmd, &err);
      else printf("%s\n", id);
      continue;
    }
    if (o < 0) {
      status = cli_fail(cmd, &err);
      continue;
    }
    int d = f.wait ? an_sandbox_destroy(sb, grace, &err) : an_sandbox_destroy_detached(sb, grace, &err);
    if (d < 0) status = cli_fail(cmd, &err);
    else printf("%s\n", an_sandbox_id(sb));
    an_sandbox_close(sb);
  }
  return status;
}
