/* cli/agentnest/cmd_pool.c — `agentnest pool start|ls|stop`: warm pools of
 * ready sandboxes (agentnest/pool.h, agentnest-pool(1)).  Taking one is
 * `run/shell/python/create --pool NAME` (cli_pool.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/pool.h"
#include "cli.h"
#include "util/cleanup.h"

static const char pool_usage[] =
    "Usage: agentnest pool start NAME --size N [SANDBOX OPTIONS]\n"
    "       agentnest pool ls [--json]\n"
    "       agentnest pool stop NAME\n"
    "\n"
    "A warm pool keeps N sandboxes created ahead with one set of options, so that\n"
    "`agentnest run/shell/python/create --pool NAME` takes a ready one instead of creating it.\n"
    "Each pooled sandbox is handed out once and never reused; its policy is exactly that of a\n"
    "fresh sandbox with the same options, its workspace is empty, and its lifetime (--timeout)\n"
    "counts from the moment it is handed out.  A keeper process (one per pool, in the\n"
    "background) refills the pool as sandboxes are taken; if it dies, its ready sandboxes are\n"
    "destroyed with it: the pool's STATE is then \"dead\", it hands out nothing (--pool falls\n"
    "back to a fresh sandbox with a warning; --pool-only fails, 125), and `agentnest pool stop\n"
    "NAME` or `agentnest prune` removes it.\n"
    "\n"
    "  start NAME --size N   start pool NAME (1-64 of [A-Za-z0-9._-]) of N (1-256) sandboxes and\n"
    "                        return once all are ready; sandbox options as for create (--name\n"
    "                        and --secret are refused: a name is one sandbox's, and secret values\n"
    "                        would wait in every ready sandbox)\n"
    "  ls [--json]           list pools: state (starting, running, dead: the keeper died), size,\n"
    "                        ready, handed out, created, failures, keeper pid\n"
    "  stop NAME             end the keeper, destroy the ready sandboxes, remove the pool; the\n"
    "                        sandboxes handed out are left alone\n"
    "  -h, --help            this help\n"
    "See agentnest-pool(1).\n";

enum { OPT_SIZE = 1400 };

static int pool_start(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      CLI_SANDBOX_LONGOPTS,
      {"size", required_argument, NULL, OPT_SIZE},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  static struct cli_sandbox_flags flags;
  memset(&flags, 0, sizeof flags);
  const char *size_s = NULL;
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    if (cli_sandbox_flag(&flags, c, optarg)) continue;
    if (c == 'h') {
      printf("%s\n%s", pool_usage, cli_sandbox_opts_help);
      return 0;
    }
    if (c == OPT_SIZE) { size_s = optarg; continue; }
    return cli_getopt_error("pool start", c, argc, argv);
  }
  if (optind >= argc) return cli_usage_error("pool start", "no pool NAME given");
  const char *name = argv[optind];
  if (optind + 1 < argc) return cli_usage_error("pool start", "unexpected argument '%s'", argv[optind + 1]);
  if (!size_s) return cli_usage_error("pool start", "--size N is required");
  char *end;
  errno = 0;
  unsigned long size = strtoul(size_s, &end, 10);
  if (errno || !*size_s || *end || size < 1 || size > AN_POOL_SIZE_MAX)
    return cli_usage_error("pool start", "--size %s: expected a number, 1..%d", size_s, AN_POOL_SIZE_MAX);
  struct an_sandbox_opts *opts = NULL;
  int r = cli_sandbox_opts("pool start", &flags, &opts);
  if (r) return r;
  an_error_t err = NULL;
  pid_t keeper = 0;
  fflush(NULL);
  r = an_pool_start(g->root, name, (unsigned) size, opts, &keeper, &err);
  an_sandbox_opts_free(opts);
  if (r < 0) return cli_fail("pool start", &err);
  if (g->json) printf("{\"name\":\"%s\",\"size\":%lu,\"keeper_pid\":%d}\n", name, size, (int) keeper);
  else printf("pool %s: %lu ready (keeper pid %d)\n", name, size, (int) keeper);
  return 0;
}

static int pool_ls(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, CLI_OPT_JSON}, {"help", no_argument, NULL, 'h'}, {0}};
  bool json = g->json;
  int r = cli_parse_opts("pool ls", argc, argv, ":h", longopts, pool_usage, cli_opt_flag, &json);
  if (r >= 0) return r;
  if (optind < argc) return cli_usage_error("pool ls", "unexpected argument '%s'", argv[optind]);
  struct an_pool_info *list = NULL;
  size_t n = 0;
  an_error_t err = NULL;
  if (an_pool_list(g->root, &list, &n, &err) < 0) return cli_fail("pool ls", &err);
  if (json) {
    cleanup_jgen struct an_jgen j;
    if (an_jgen_init(&j, false) < 0) {
      an_pool_info_list_free(list, n);
      return cli_print_json("pool ls", &j, "pools");
    }
    an_jgen_array_open(&j);
    for (size_t i = 0; i < n; i++) {
      an_jgen_map_open(&j);
      an_jgen_kv_str(&j, "name", list[i].name);
      an_jgen_kv_u64(&j, "size", list[i].size);
      an_jgen_kv_u64(&j, "ready", list[i].ready);
      an_jgen_kv_u64(&j, "handed_out", list[i].handed_out);
      an_jgen_kv_u64(&j, "created", list[i].created);
      an_jgen_kv_u64(&j, "failures", list[i].failures);
      cli_json_kv_path(&j, "last_error", list[i].last_error);
      an_jgen_kv_i64(&j, "keeper_pid", list[i].keeper_pid);
      an_jgen_kv_bool(&j, "keeper_alive", list[i].keeper_alive);
      an_jgen_kv_str(&j, "state", list[i].state);
      an_jgen_kv_u64(&j, "stale", list[i].stale);
      an_jgen_kv_u64(&j, "created_ms", list[i].created_ms);
      an_jgen_map_close(&j);
    }
    an_jgen_array_close(&j);
    an_pool_info_list_free(list, n);
    return cli_print_json("pool ls", &j, "pools");
  }
  printf("%-20s %-8s %5s %5s %10s %8s %s\n", "NAME", "STATE", "SIZE", "READY", "HANDED_OUT", "FAILURES", "KEEPER");
  bool dead = false;
  for (size_t i = 0; i < n; i++) {
    printf("%-20s %-8s %5u %5u %10llu %8llu %d\n", list[i].name, list[i].state, list[i].size, list[i].ready,
           (unsigned long long) list[i].handed_out, (unsigned long long) list[i].failures,
           (int) list[i].keeper_pid);
    dead |= !strcmp(list[i].state, "dead");
  }
  /* on stderr: the table stays a table for scripts */
  if (dead)
    fprintf(stderr, "agentnest pool ls: a dead pool hands out nothing (its keeper died and its ready "
                    "sandboxes with it); `agentnest pool stop NAME` or `agentnest prune` removes it\n");
  an_pool_info_list_free(list, n);
  return 0;
}

static int pool_stop(struct an_global_opts *g, int argc, char **argv) {
  int r = cli_parse_opts("pool stop", argc, argv, ":h", (const struct option[]){{"help", no_argument, NULL, 'h'}, {0}},
                         pool_usage, NULL, NULL);
  if (r >= 0) return r;
  if (argc - optind != 1) return cli_usage_error("pool stop", "expected one pool NAME");
  an_error_t err = NULL;
  unsigned destroyed = 0;
  if (an_pool_stop(g->root, argv[optind], &destroyed, &err) < 0) return cli_fail("pool stop", &err);
  if (g->json) printf("{\"name\":\"%s\",\"stopped\":true}\n", argv[optind]);
  else printf("pool %s stopped\n", argv[optind]);
  return 0;
}

int cmd_pool(struct an_global_opts *g, int argc, char **argv) {
  if (argc < 2) return cli_usage_error("pool", "expected start, ls or stop");
  const char *sub = argv[1];
  if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
    fputs(pool_usage, stdout);
    return 0;
  }
  if (!strcmp(sub, "start")) return pool_start(g, argc - 1, argv + 1);
  if (!strcmp(sub, "ls")) return pool_ls(g, argc - 1, argv + 1);
  if (!strcmp(sub, "stop")) return pool_stop(g, argc - 1, argv + 1);
  return cli_usage_error("pool", "unknown subcommand '%s' (start, ls, stop)", sub);
}
