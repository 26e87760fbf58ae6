/* cli/agentnest/cmd_ls.c — `agentnest ls [--json]`: the sandboxes under the
 * root, as a table (ID NAME IMAGE STATUS CREATED EXPIRES) or JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "agentnest/sandbox.h"
#include "cli.h"

static const char ls_usage[] =
    "Usage: agentnest ls [--json]\n"
    "\n"
    "List sandboxes: ID, NAME, IMAGE, STATUS (running, creating, dead, expired), CREATED, EXPIRES IN.\n"
    "A sandbox whose lifetime ends is removed by its monitor and then no longer listed (its id\n"
    "says \"expired\" until the next prune); \"expired\" shows one its monitor is still removing.\n"
    "\"creating\": its create is at work (no pid 1 yet).  \"dead\": pid 1, the monitor or an owned\n"
    "sandbox's owner gone (destroy or prune removes it).  EXPIRES IN \"-\": a warm pool's ready\n"
    "sandbox (its lifetime starts when it is handed out; agentnest-pool(1)).\n"
    "  --json       one JSON array of {id,name,image,status,created,deadline,init_pid,monitor_pid}\n"
    "  -h, --help   this help\n";

static void fmt_time(uint64_t ms, char *buf, size_t len) {
  time_t t = (time_t) (ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int cmd_ls(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, CLI_OPT_JSON}, {"help", no_argument, NULL, 'h'}, {0}};
  const char *cmd = argv[0];
  bool json = g->json;
  int r = cli_parse_opts(cmd, argc, argv, "+:h", longopts, ls_usage, cli_opt_flag, &json);
  if (r >= 0) return r;
  if (optind < argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
  an_error_t err = NULL;
  if (json) {
    char *doc = NULL;
    if (an_sandbox_list_json(g->root, &doc, &err) < 0) return cli_fail(cmd, &err);
    fputs(doc, stdout);
    if (!*doc || doc[strlen(doc) - 1] != '\n') fputc('\n', stdout);
    free(doc);
    return 0;
  }
  struct an_sandbox_info *l = NULL;
  size_t n = 0;
  if (an_sandbox_list(g->root, &l, &n, &err) < 0) return cli_fail(cmd, &err);
  printf("%-14s %-20s %-16s %-8s %-21s %s\n", "ID", "NAME", "IMAGE", "STATUS", "CREATED",
         "EXPIRES IN");
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  uint64_t now_ms = (uint64_t) now.tv_sec * 1000 + (uint64_t) now.tv_nsec / 1000000;
  for (size_t i = 0; i < n; i++) {
    char created[32];
    fmt_time(l[i].created_ms, created, sizeof created);
    uint64_t left = l[i].deadline_ms > now_ms ? (l[i].deadline_ms - now_ms) / 1000 : 0;
    char expires[32] = "-";   /* no deadline: a warm pool's ready sandbox */
    if (l[i].deadline_ms) snprintf(expires, sizeof expires, "%llus", (unsigned long long) left);
    printf("%-14s %-20s %-16s %-8s %-21s %s\n", l[i].id, l[i].name ? l[i].name : "-",
           l[i].image ? l[i].image : "-", l[i].status ? l[i].status : "?", created, expires);
  }
  an_sandbox_info_list_free(l, n);
  return 0;
}
