/* cli/agentnest/cmd_audit.c — `agentnest audit [--since TIME] [--sandbox ID]
 * [--op OP] [--json]`: the store's audit log across its rotated files, and
 * `agentnest audit config [--max-size SIZE] [--keep N]`: its rotation.  The
 * log itself: agentnest/audit.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yajl/yajl_tree.h>
#include "agentnest/audit.h"
#include "agentnest/sandbox.h"
#include "cli.h"
#include "util/json_tree.h"
#include "util/units.h"

static const char audit_usage[] =
    "Usage: agentnest audit [--since TIME] [--sandbox ID] [--op OP] [--json]\n"
    "       agentnest audit config [--max-size SIZE] [--keep N]\n"
    "\n"
    "Print the store's audit log (<root>/audit/audit.jsonl and its rotated files, oldest first):\n"
    "one record per operation (each one --op lists below: create, exec, sessions, files,\n"
    "network changes, approvals, destroy, ...), with the caller's uid and pid, argv and the\n"
    "NAMES of env variables (never values; secret values are redacted everywhere).  The log\n"
    "outlives every sandbox.  Human output: TIME OP SANDBOX then the other members as\n"
    "KEY=JSON.\n"
    "  --since TIME     records from TIME on: 2026-12-01T12:00:00Z, 2026-12-01, or a duration\n"
    "                   before now (10m, 1h)\n"
    "  --sandbox ID     records of sandbox ID (a live sandbox's name too; also forks naming it\n"
    "                   as parent or child)\n"
    "  --op OP          records of one operation.  This version records: approval, artifacts,\n"
    "                   create, destroy, exec, expire, extend, fork, get, network_change,\n"
    "                   pool_acquire, pool_start, proc_kill, prune, put, reap, restore, run,\n"
    "                   session_run, session_start, session_stop, snapshot.  The set is open (a\n"
    "                   log may hold other versions' operations): an OP that no record has\n"
    "                   matches nothing (exit 0; a note on stderr when this version does not\n"
    "                   record it); an OP that is not [a-z_]{1,32} is refused\n"
    "  --json           the records as stored, one JSON object per line\n"
    "  -h, --help       this help\n"
    "audit config: set the rotation (files of at most SIZE, default 16m; N rotated files kept,\n"
    "default 5) and print it as JSON (--json accepted).\n";

struct audit_args {
  const char *since, *sandbox, *op;
  bool json;
  unsigned long long printed;   /* records delivered */
};

/* The operations this version records (audit_usage lists them too): the
 * sandbox layer's an_sb_audit/an_audit_record calls. */
static const char *const known_ops[] = {
    "approval", "artifacts", "create", "destroy", "exec", "expire", "extend", "fork", "get",
    "network_change", "pool_acquire", "pool_start", "proc_kill", "prune", "put", "reap", "restore",
    "run", "session_run", "session_start", "session_stop", "snapshot",
};

static bool op_known(const char *op) {
  for (size_t i = 0; i < sizeof known_ops / sizeof *known_ops; i++)
    if (!strcmp(op, known_ops[i])) return true;
  return false;
}

/* What an_audit_record accepts as an op: [a-z_]{1,32}. */
static bool op_well_formed(const char *op) {
  size_t n = strspn(op, "abcdefghijklmnopqrstuvwxyz_");
  return n >= 1 && n <= 32 && !op[n];
}

enum { OPT_SINCE = 1200, OPT_SANDBOX, OPT_OP, OPT_MAX_SIZE, OPT_KEEP };

static int on_opt(void *ctx, int code, char *arg) {
  struct audit_args *a = ctx;
  if (code == OPT_SINCE) a->since = arg;
  else if (code == OPT_SANDBOX) a->sandbox = arg;
  else if (code == OPT_OP) a->op = arg;
  else if (code == CLI_OPT_JSON) a->json = true;
  return -1;
}

/* A parsed value back to compact JSON (control characters escaped: safe
 * on a terminal). */
static void gen_value(yajl_gen g, yajl_val v) {
  if (YAJL_IS_STRING(v)) {
    const char *s = v->u.string;
    yajl_gen_string(g, (const unsigned char *) s, strlen(s));
  } else if (YAJL_IS_NUMBER(v)) {
    const char *s = v->u.number.r;
    yajl_gen_number(g, s, strlen(s));
  }
  else if (YAJL_IS_TRUE(v)) yajl_gen_bool(g, 1);
  else if (YAJL_IS_FALSE(v)) yajl_gen_bool(g, 0);
  else if (YAJL_IS_OBJECT(v)) {
    yajl_gen_map_open(g);
    for (size_t i = 0; i < v->u.object.len; i++) {
      yajl_gen_string(g, (const unsigned char *) v->u.object.keys[i], strlen(v->u.object.keys[i]));
      gen_value(g, v->u.object.values[i]);
    }
    yajl_gen_map_close(g);
  } else if (YAJL_IS_ARRAY(v)) {
    yajl_gen_array_open(g);
    for (size_t i = 0; i < v->u.array.len; i++) gen_value(g, v->u.array.values[i]);
    yajl_gen_array_close(g);
  } else yajl_gen_null(g);
}

static void print_value(yajl_val v) {
  yajl_gen g = yajl_gen_alloc(NULL);
  if (!g) return;
  gen_value(g, v);
  const unsigned char *buf = NULL;
  size_t len = 0;
  if (yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok) fwrite(buf, 1, len, stdout);
  yajl_gen_free(g);
}

static int print_record(void *data, const char *json) {
  struct audit_args *a = data;
  a->printed++;
  if (a->json) {
    printf("%s\n", json);
    return fflush(stdout) == EOF ? 1 : 0;
  }
  yajl_val v = NULL;
  an_error_t e = NULL;
  if (an_json_parse(json, strlen(json), "", &v, &e) < 0) {
    an_error_free(&e);
    return 0;
  }
  const char *t = an_json_member_str(v, "time"), *op = an_json_member_str(v, "op"),
             *sb = an_json_member_str(v, "sandbox");
  printf("%s %s %s", t ? t : "-", op ? op : "-", sb ? sb : "-");
  for (size_t i = 0; i < v->u.object.len; i++) {
    const char *k = v->u.object.keys[i];
    if (!strcmp(k, "time") || !strcmp(k, "op") || !strcmp(k, "sandbox")) continue;
    yajl_val m = v->u.object.values[i];
    if (!strcmp(k, "caller") && YAJL_IS_OBJECT(m)) {
      yajl_val uid = an_json_member(m, "uid"), pid = an_json_member(m, "pid");
      printf(" uid=%s pid=%s", uid && YAJL_IS_NUMBER(uid) ? YAJL_GET_NUMBER(uid) : "?",
             pid && YAJL_IS_NUMBER(pid) ? YAJL_GET_NUMBER(pid) : "?");
      continue;
    }
    printf(" %s=", k);
    print_value(m);
  }
  printf("\n");
  yajl_tree_free(v);
  return fflush(stdout) == EOF ? 1 : 0;
}

static int cmd_audit_config(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {{"max-size", required_argument, NULL, OPT_MAX_SIZE},
                                           {"keep", required_argument, NULL, OPT_KEEP},
                                           CLI_JSON_ALREADY_OPT,
                                           {"help", no_argument, NULL, 'h'},
                                           {0}};
  const char *cmd = "audit config";
  const char *size = NULL, *keep = NULL;
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    if (c == 'h') { fputs(audit_usage, stdout); return 0; }
    if (c == CLI_OPT_JSON_ALREADY) continue;
    if (c == OPT_MAX_SIZE) size = optarg;
    else if (c == OPT_KEEP) keep = optarg;
    else return cli_getopt_error(cmd, c, argc, argv);
  }
  if (optind < argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
  an_error_t err = NULL;
  uint64_t max_bytes = 0;
  unsigned k = 0;
  if (an_audit_config(g->root, &max_bytes, &k, &err) < 0) return cli_fail(cmd, &err);
  if (size && an_parse_size(size, &max_bytes, &err) < 0) {
    an_error_prefix(&err, "--max-size %s", size);
    return cli_fail(cmd, &err);
  }
  if (keep) {
    char *end = NULL;
    unsigned long v = strtoul(keep, &end, 10);
    if (!*keep || *end || v > AN_AUDIT_MAX_KEEP || v < 1)
      return cli_usage_error(cmd, "--keep %s: expected 1 .. %u", keep, AN_AUDIT_MAX_KEEP);
    k = (unsigned) v;
  }
  if ((size || keep) && an_audit_configure(g->root, max_bytes, k, &err) < 0) return cli_fail(cmd, &err);
  printf("{\"max_bytes\":%llu,\"keep\":%u}\n", (unsigned long long) max_bytes, k);
  return 0;
}

int cmd_audit(struct an_global_opts *g, int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "config")) return cmd_audit_config(g, argc - 1, argv + 1);
  static const struct option longopts[] = {{"since", required_argument, NULL, OPT_SINCE},
                                           {"sandbox", required_argument, NULL, OPT_SANDBOX},
                                           {"op", required_argument, NULL, OPT_OP},
                                           {"json", no_argument, NULL, CLI_OPT_JSON},
                                           {"help", no_argument, NULL, 'h'},
                                           {0}};
  const char *cmd = argv[0];
  struct audit_args a = {.json = g->json};
  int r = cli_parse_opts(cmd, argc, argv, ":h", longopts, audit_usage, on_opt, &a);
  if (r >= 0) return r;
  if (optind < argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
  if (a.op && !op_well_formed(a.op))
    return cli_usage_error(cmd, "--op '%s': not an operation name (lower-case letters and '_', at most 32)",
                           a.op);
  an_error_t err = NULL;
  /* a live sandbox's name stands for its id (records name sandboxes by id) */
  char id[AN_SANDBOX_ID_LEN + 1] = "";
  struct an_sandbox *sb = NULL;
  if (a.sandbox && an_sandbox_open_ctx(cli_ctx(), g->root, a.sandbox, &sb, &err) == 0) {
    snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
    an_sandbox_close(sb);
    a.sandbox = id;
  }
  an_error_free(&err);
  struct an_audit_filter f = {.sandbox = a.sandbox, .op = a.op};
  if (a.since) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now = (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
    if (an_audit_parse_since(a.since, now, &f.since_ms, &err) < 0) return cli_fail(cmd, &err);
    if (!f.since_ms) f.since_ms = 1;
  }
  if (an_audit_read(g->root, &f, print_record, &a, &err) < 0) return cli_fail(cmd, &err);
  /* like journalctl -u on a unit with no entries: not an error, but say why
   * nothing came when this version never writes that op (a typo?) */
  if (a.op && !a.printed && !op_known(a.op)) {
    fprintf(stderr, "agentnest %s: no record has op '%s'; this version records:", cmd, a.op);
    for (size_t i = 0; i < sizeof known_ops / sizeof *known_ops; i++)
      fprintf(stderr, "%s %s", i ? "," : "", known_ops[i]);
    fputc('\n', stderr);
  }
  return 0;
}
