/* cli/agentnest/cmd_proc.c — detached processes (agentnest/proc.h):
 * `agentnest exec --detach` (cli_exec_detach, called by cmd_exec.c) and
 * `agentnest proc ls|logs|kill|wait`. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agentnest/proc.h"
#include "agentnest/sandbox.h"
#include "agentnest/sandbox_opts.h"
#include "cli.h"
#include "cli_proc.h"
#include "stream.h"

static const char proc_usage[] =
    "Usage: agentnest proc ls ID [--json]\n"
    "       agentnest proc logs ID H [--follow]\n"
    "       agentnest proc kill ID H [SIGNAL]\n"
    "       agentnest proc wait ID H\n"
    "\n"
    "Background processes started with `agentnest exec --detach ID -- CMD...` (which prints\n"
    "their handle H: p1, p2, ...).  Each runs in its own child cgroup with exec's confinement,\n"
    "outlives the exec call and dies with the sandbox; its stdout and stderr are kept, redacted,\n"
    "in a ring of the last 256 KiB per stream held by the sandbox's monitor.\n"
    "\n"
    "  ls      handle, pid, state (running or the exit status), command\n"
    "  logs    print what the ring holds (stdout to stdout, stderr to stderr); --follow keeps\n"
    "          printing new output until the process ends\n"
    "  kill    send SIGNAL (a number or a name such as TERM, KILL, INT; default TERM); KILL\n"
    "          kills the process's whole cgroup\n"
    "  wait    wait until it ends; exit with its status (128+N for signal N)\n"
    "\n"
    "Exit status: 0 (wait: the process's status); 125 no such sandbox or handle.\n";

int cli_exec_detach(struct an_global_opts *g, const char *cmd, const char *id, char *const argv[],
                    char ***env, size_t *nenv, const char *workdir, bool json) {
  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  if (an_sandbox_open_ctx(cli_ctx(), g->root, id, &sb, &err) < 0) return cli_fail(cmd, &err);
  /* Python unbuffered here too, so that `proc logs --follow` shows prints as they come */
  const struct an_sandbox_opts *so = an_sandbox_get_opts(sb);
  int rc = cli_env_python_unbuffered(cmd, env, nenv, so ? an_sandbox_opts_env(so) : NULL);
  if (rc) {
    an_sandbox_close(sb);
    return rc;
  }
  char *h = NULL;
  pid_t pid = 0;
  if (an_proc_start(sb, argv, *env, workdir, 0, &h, &pid, &err) < 0) {
    rc = cli_fail(cmd, &err);
  } else if (json) {
    struct an_jgen j;
    an_jgen_init(&j, true);
    an_jgen_map_open(&j);
    an_jgen_kv_str(&j, "sandbox", an_sandbox_id(sb));
    an_jgen_kv_str(&j, "handle", h);
    an_jgen_kv_i64(&j, "pid", pid);
    an_jgen_map_close(&j);
    rc = cli_print_json(cmd, &j, "detach");
  } else {
    printf("%s\n", h);
  }
  free(h);
  an_sandbox_close(sb);
  return rc;
}

static int parse_signal(const char *s) {
  char *end;
  long n = strtol(s, &end, 10);
  if (*s && !*end) return n >= 1 && n <= 64 ? (int) n : -1;
  if (!strncasecmp(s, "SIG", 3)) s += 3;
  static const struct { const char *name; int sig; } t[] = {
      {"TERM", SIGTERM}, {"KILL", SIGKILL}, {"INT", SIGINT}, {"HUP", SIGHUP}, {"QUIT", SIGQUIT},
      {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"STOP", SIGSTOP}, {"CONT", SIGCONT}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (!strcasecmp(s, t[i].name)) return t[i].sig;
  return -1;
}

static int do_logs(const char *cmd, struct an_sandbox *sb, const char *h, bool follow) {
  uint64_t from[2] = {0, 0};
  for (;;) {
    struct an_proc_logs l;
    an_error_t err = NULL;
    if (an_proc_logs(sb, h, from, follow && (from[0] || from[1]), &l, &err) < 0) return cli_fail(cmd, &err);
    fputs(l.data[0], stdout);
    fflush(stdout);
    fputs(l.data[1], stderr);
    if (l.dropped[0] || l.dropped[1])
      fprintf(stderr, "agentnest %s: %llu bytes of stdout and %llu of stderr were dropped (ring full)\n", cmd,
              (unsigned long long) l.dropped[0], (unsigned long long) l.dropped[1]);
    bool more = l.next[0] != from[0] || l.next[1] != from[1];
    from[0] = l.next[0];
    from[1] = l.next[1];
    bool running = l.running;
    an_proc_logs_release(&l);
    if (!follow || (!running && !more)) return 0;
    if (!from[0] && !from[1] && !more) {
      /* nothing yet: ask again, waiting this time */
      struct an_proc_logs w;
      if (an_proc_logs(sb, h, from, true, &w, &err) < 0) return cli_fail(cmd, &err);
      fputs(w.data[0], stdout);
      fflush(stdout);
      fputs(w.data[1], stderr);
      from[0] = w.next[0];
      from[1] = w.next[1];
      bool r2 = w.running;
      an_proc_logs_release(&w);
      if (!r2 && !from[0] && !from[1]) return 0;
    }
  }
}

int cmd_proc(struct an_global_opts *g, int argc, char **argv) {
  const char *cmd = "proc";
  if (argc < 2) return cli_usage_error(cmd, "no subcommand given (ls, logs, kill, wait)");
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    fputs(proc_usage, stdout);
    return 0;
  }
  const char *sub = argv[1];
  bool json = g->json, follow = false;
  const char *ops[3] = {0};
  size_t nops = 0;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = true;
    else if (!strcmp(argv[i], "--follow") || !strcmp(argv[i], "-f")) follow = true;
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { fputs(proc_usage, stdout); return 0; }
    else if (argv[i][0] == '-' && argv[i][1] && !(argv[i][1] >= '0' && argv[i][1] <= '9'))
      return cli_usage_error(cmd, "unknown option %s", argv[i]);
    else if (nops < 3) ops[nops++] = argv[i];
    else return cli_usage_error(cmd, "%s: too many operands", sub);
  }
  bool ls = !strcmp(sub, "ls"), logs = !strcmp(sub, "logs"), kil = !strcmp(sub, "kill"),
       wt = !strcmp(sub, "wait");
  if (!ls && !logs && !kil && !wt) return cli_usage_error(cmd, "unknown subcommand \"%s\" (ls, logs, kill, wait)", sub);
  if ((ls && nops != 1) || ((logs || wt) && nops != 2) || (kil && (nops < 2 || nops > 3)))
    return cli_usage_error(cmd, "%s takes %s", sub, ls ? "ID" : kil ? "ID H [SIGNAL]" : "ID H");
  int sig = SIGTERM;
  if (kil && nops == 3 && (sig = parse_signal(ops[2][0] == '-' ? ops[2] + 1 : ops[2])) < 0)
    return cli_usage_error(cmd, "kill: \"%s\" is not a signal", ops[2]);
  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  if (an_sandbox_open_ctx(cli_ctx(), g->root, ops[0], &sb, &err) < 0) return cli_fail(cmd, &err);
  int rc = 0;
  if (ls) {
    struct an_proc_info *l = NULL;
    size_t n = 0;
    if (an_proc_list(sb, &l, &n, &err) < 0) {
      rc = cli_fail(cmd, &err);
    } else if (json) {
      struct an_jgen j;
      an_jgen_init(&j, true);
      an_jgen_array_open(&j);
      for (size_t i = 0; i < n; i++) {
        an_jgen_map_open(&j);
        an_jgen_kv_str(&j, "handle", l[i].handle);
        an_jgen_kv_i64(&j, "pid", l[i].pid);
        an_jgen_kv_bool(&j, "running", l[i].running);
        if (!l[i].running) an_jgen_kv_i64(&j, "status", l[i].status);
        an_jgen_kv_str(&j, "command", l[i].command);
        an_jgen_kv_u64(&j, "started_ms", l[i].started_ms);
        an_jgen_map_close(&j);
      }
      an_jgen_array_close(&j);
      rc = cli_print_json(cmd, &j, "proc list");
    } else {
      printf("%-8s %-8s %-12s %s\n", "HANDLE", "PID", "STATE", "COMMAND");
      for (size_t i = 0; i < n; i++) {
        char st[32];
        if (l[i].running) snprintf(st, sizeof st, "running");
        else snprintf(st, sizeof st, "exited %d", l[i].status);
        printf("%-8s %-8d %-12s %s\n", l[i].handle, (int) l[i].pid, st, l[i].command);
      }
    }
    an_proc_info_list_free(l, n);
  } else if (logs) {
    rc = do_logs(cmd, sb, ops[1], follow);
  } else if (kil) {
    if (an_proc_kill(sb, ops[1], sig, &err) < 0) rc = cli_fail(cmd, &err);
  } else {
    int status = 0;
    if (an_proc_wait(sb, ops[1], &status, &err) < 0) rc = cli_fail(cmd, &err);
    else rc = status;
  }
  an_sandbox_close(sb);
  return rc;
}
