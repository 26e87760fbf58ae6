/* cli/agentnest/cmd_session.c — `agentnest session start|run|ls|stop`:
 * stateful Python and shell sessions in a live sandbox (agentnest/session.h).
 * --stream writes JSON Lines (one {"type":"stdout"|"stderr","data":...} per
 * chunk, base64 with "encoding":"base64" when a chunk is not valid UTF-8,
 * then one {"type":"result",...}): the writer of every --stream (stream.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agentnest/session.h"
#include "cli.h"
#include "stream.h"
#include "util/cleanup.h"
#include "util/units.h"

static const char session_usage[] =
    "Usage: agentnest session start ID [--kind python|shell] [--name S] [--json]\n"
    "       agentnest session run ID S [--timeout DURATION] [--json|--stream] CODE|-\n"
    "       agentnest session ls ID [--json]\n"
    "       agentnest session stop ID S\n"
    "\n"
    "A session is a long-lived interpreter in the live sandbox ID that keeps its state\n"
    "between calls: Python globals, or the shell's cwd, environment and variables.  It\n"
    "runs as the sandbox user with exactly an exec's confinement, survives this command,\n"
    "and dies with the sandbox (or `session stop`).\n"
    "\n"
    "  start   start a session (default kind python; default name s1, s2, ...); prints its name\n"
    "  run     run CODE (or stdin with -) in session S; prints its stdout and stderr as they\n"
    "          come, then (python) the repr of a final expression's value, or the traceback\n"
    "  ls      list the sessions: name, kind, pid, state (idle or busy; --json: busy)\n"
    "  stop    kill session S\n"
    "\n"
    "  --timeout DURATION   interrupt the call after this long (SIGINT: KeyboardInterrupt in\n"
    "                       Python; the foreground command in the shell); the session lives\n"
    "                       on unless it does not stop within 2 s, then it is killed (lost)\n"
    "  --json               print one JSON document (status, stdout, stderr, value {repr,json},\n"
    "                       error {type,message,traceback}, timed_out, session_lost)\n"
    "  --stream             JSON Lines: {\"type\":\"stdout\"|\"stderr\",\"data\":...} as output\n"
    "                       arrives, then one {\"type\":\"result\",...} with the --json members\n"
    "  -h, --help           this help\n"
    "\n"
    "Exit status of run: shell: the code's status; python: 0, or 1 when it raised; 124\n"
    "interrupted at the timeout; 125 runtime failure or session lost; 130 interrupted by\n"
    "SIGINT/SIGTERM/SIGHUP to this command.  See agentnest-session(1).\n";

enum { OPT_KIND = 1200, OPT_STREAM };

struct sopts {
  const char *kind, *name;
  uint64_t timeout_ms;
  bool json, stream;
};

static int on_opt(void *ctx, int code, char *arg) {
  struct sopts *o = ctx;
  switch (code) {
  case OPT_KIND: o->kind = arg; return -1;
  case CLI_OPT_NAME: o->name = arg; return -1;
  case CLI_OPT_JSON: o->json = true; return -1;
  case OPT_STREAM: o->stream = true; return -1;
  case CLI_OPT_TIMEOUT: {
    an_error_t err = NULL;
    if (an_parse_duration_ms(arg, &o->timeout_ms, &err) < 0 || o->timeout_ms == 0) {
      if (!err) an_error_set(&err, 0, "must be more than 0");
      an_error_prefix(&err, "--timeout %s", arg);
      return cli_fail("session", &err);
    }
    return -1;
  }
  }
  return AN_EXIT_RUNTIME;
}

/* ---- the subcommands ---- */

static int g_sigpipe = -1;
static void on_signal(int sig) {
  int saved = errno;
  unsigned char b = (unsigned char) sig;
  if (write(g_sigpipe, &b, 1) < 0) {}
  errno = saved;
}


static int do_run(const char *cmd, struct an_sandbox *sb, const char *name, const char *code_arg,
                  const struct sopts *o) {
  cleanup_free char *stdin_code = NULL;
  const char *code = code_arg;
  size_t len = strlen(code_arg);
  if (!strcmp(code_arg, "-")) {
    int r = cli_read_all(0, &stdin_code, &len);
    if (r < 0) return cli_usage_error(cmd, "read the code from stdin: %s", strerror(-r));
    code = stdin_code;
  }
  int p[2];
  if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) return cli_usage_error(cmd, "pipe: %s", strerror(errno));
  g_sigpipe = p[1];
  struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  struct an_session_run_opts ro = {.timeout_ms = o->timeout_ms, .has_cancel_fd = true, .cancel_fd = p[0]};
  struct cli_stream st = {0};
  if (o->stream) {
    ro.on_data = cli_stream_data;   /* stream.h: the format of every --stream */
    ro.on_data_arg = &st;
  }
  else if (!o->json) ro.on_data = cli_stream_output;
  struct an_session_result res;
  an_error_t err = NULL;
  int r = an_session_run(sb, name, code, len, &ro, &res, &err);
  close(p[0]);
  if (r < 0) return cli_fail(cmd, &err);
  int status = res.status;
  if (o->json || o->stream) {
    if (o->stream) cli_stream_flush(&st);
    cleanup_jgen struct an_jgen j = {0};
    an_jgen_init(&j, o->json);
    an_jgen_map_open(&j);
    if (o->stream) an_jgen_kv_str(&j, "type", "result");
    an_jgen_kv_str(&j, "session", name);
    if (j.g) an_jgen_check(&j, an_session_result_json_fields(j.g, &res));
    an_jgen_map_close(&j);
    if (o->stream) {
      if (cli_stream_line(&j) < 0) status = AN_EXIT_RUNTIME;
    } else if (cli_print_json(cmd, &j, "result") != 0) {
      status = AN_EXIT_RUNTIME;
    }
  } else {
    if (res.value_repr) printf("%s\n", res.value_repr);
    fflush(stdout);
    if (res.error_traceback && *res.error_traceback) fputs(res.error_traceback, stderr);
    else if (res.error_type) fprintf(stderr, "%s: %s\n", res.error_type, res.error_message ? res.error_message : "");
    if (res.timed_out) fprintf(stderr, "agentnest %s: the call timed out and was interrupted\n", cmd);
    if (res.session_lost)
      fprintf(stderr, "agentnest %s: session %s lost: %s\n", cmd, name, res.lost_reason ? res.lost_reason : "");
  }
  an_session_result_release(&res);
  return status;
}

static int do_ls(const char *cmd, struct an_sandbox *sb, bool json) {
  struct an_session_info *l = NULL;
  size_t n = 0;
  an_error_t err = NULL;
  if (an_session_list(sb, &l, &n, &err) < 0) return cli_fail(cmd, &err);
  int rc = 0;
  if (json) {
    struct an_jgen j;
    an_jgen_init(&j, true);
    an_jgen_array_open(&j);
    for (size_t i = 0; i < n; i++) {
      an_jgen_map_open(&j);
      an_jgen_kv_str(&j, "name", l[i].name);
      an_jgen_kv_str(&j, "kind", an_session_kind_name(l[i].kind));
      an_jgen_kv_i64(&j, "pid", l[i].pid);
      an_jgen_kv_bool(&j, "busy", l[i].busy);
      an_jgen_kv_u64(&j, "started_ms", l[i].started_ms);
      an_jgen_map_close(&j);
    }
    an_jgen_array_close(&j);
    rc = cli_print_json(cmd, &j, "session list");
  } else {
    printf("%-32s %-7s %-8s %s\n", "NAME", "KIND", "PID", "STATE");
    for (size_t i = 0; i < n; i++)
      printf("%-32s %-7s %-8d %s\n", l[i].name, an_session_kind_name(l[i].kind), (int) l[i].pid,
             l[i].busy ? "busy" : "idle");
  }
  an_session_info_list_free(l, n);
  return rc;
}

int cmd_session(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      {"kind", required_argument, NULL, OPT_KIND},
      {"name", required_argument, NULL, CLI_OPT_NAME},
      {"timeout", required_argument, NULL, CLI_OPT_TIMEOUT},
      {"json", no_argument, NULL, CLI_OPT_JSON},
      {"stream", no_argument, NULL, OPT_STREAM},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  const char *cmd = "session";
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    if (argc < 2) return cli_usage_error(cmd, "no subcommand given (start, run, ls, stop)");
    fputs(session_usage, stdout);
    return 0;
  }
  const char *sub = argv[1];
  struct sopts o = {.json = g->json};
  /* options may come anywhere; operands in order (a "-" operand is stdin) */
  const char *ops[3] = {0};
  size_t nops = 0;
  argc--;
  argv++;
  optind = 1;
  opterr = 0;
  while (optind < argc) {
    if (!strcmp(argv[optind], "-")) {
      if (nops < 3) ops[nops++] = argv[optind];
      optind++;
      continue;
    }
    int c = getopt_long(argc, argv, "+:h", longopts, NULL);
    if (c == -1) {
      if (optind < argc) {
        if (!strcmp(argv[optind - 1], "--")) {
          while (optind < argc && nops < 3) ops[nops++] = argv[optind++];
          break;
        }
        if (nops >= 3) return cli_usage_error(cmd, "%s: too many operands", sub);
        ops[nops++] = argv[optind++];
      }
      continue;
    }
    if (c == 'h') {
      fputs(session_usage, stdout);
      return 0;
    }
    if (c == ':' || c == '?') return cli_getopt_error(cmd, c, argc, argv);
    int r = on_opt(&o, c, optarg);
    if (r >= 0) return r;
  }
  if (o.json && o.stream) return cli_usage_error(cmd, "--json and --stream exclude each other");
  size_t want = !strcmp(sub, "run") ? 3 : !strcmp(sub, "stop") ? 2
              : !strcmp(sub, "start") || !strcmp(sub, "ls") ? 1 : 0;
  if (!want) return cli_usage_error(cmd, "unknown subcommand \"%s\" (start, run, ls, stop)", sub);
  if (nops != want)
    return cli_usage_error(cmd, "%s takes %s", sub,
                           want == 3 ? "ID S CODE|-" : want == 2 ? "ID S" : "ID");
  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  if (an_sandbox_open_ctx(cli_ctx(), g->root, ops[0], &sb, &err) < 0) return cli_fail(cmd, &err);
  int rc = 0;
  if (!strcmp(sub, "start")) {
    enum an_session_kind kind = AN_SESSION_PYTHON;
    char *name = NULL;
    if ((o.kind && an_session_kind_parse(o.kind, &kind, &err) < 0) ||
        an_session_start(sb, kind, o.name, 0, &name, &err) < 0) {
      rc = cli_fail(cmd, &err);
    } else if (o.json) {
      struct an_jgen j;
      an_jgen_init(&j, true);
      an_jgen_map_open(&j);
      an_jgen_kv_str(&j, "sandbox", an_sandbox_id(sb));
      an_jgen_kv_str(&j, "session", name);
      an_jgen_kv_str(&j, "kind", an_session_kind_name(kind));
      an_jgen_map_close(&j);
      rc = cli_print_json(cmd, &j, "session");
    } else {
      printf("%s\n", name);
    }
    free(name);
  } else if (!strcmp(sub, "run")) {
    rc = do_run(cmd, sb, ops[1], ops[2], &o);
  } else if (!strcmp(sub, "ls")) {
    rc = do_ls(cmd, sb, o.json);
  } else if (an_session_stop(sb, ops[1], &err) < 0) {
    rc = cli_fail(cmd, &err);
  }
  an_sandbox_close(sb);
  return rc;
}
