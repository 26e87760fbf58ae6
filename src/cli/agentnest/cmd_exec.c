/* cli/agentnest/cmd_exec.c — `agentnest exec ID [--timeout S] [--env K=V]
 * [--workdir D] [-i|--stdin FILE] [-t] [--json|--stream] -- CMD...`: run one
 * command in a live sandbox, stream its output (or print one JSON result,
 * or JSON Lines), exit with its status.  The sandbox stays alive, also when
 * the command times out.
 *
 * Input: -i gives the command this process's stdin, --stdin FILE a regular
 * file (a FIFO or device is refused, as an_open_input does), both copied by
 * the library's pump (never the fd itself).  -t: a pty inside the sandbox;
 * this process's terminal is raw while attached (term.h) and restored
 * before anything is printed, on every return path; SIGPIPE is ignored
 * meanwhile so that a closed stdout cannot kill us with the terminal raw.
 *
 * Caller signals: SIGINT, SIGTERM and SIGHUP write their number to a
 * self-pipe (a handler, not a blocked mask: the process cloned into the
 * sandbox would inherit a mask, and handlers reset at its execve) whose
 * read end is the exec's cancel fd, so the command's whole process tree
 * (its child cgroup) ends with the caller; the CLI then exits 128+N. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/sandbox.h"
#include "agentnest/sandbox_opts.h"
#include "argv_rule.h"
#include "cli.h"
#include "stream.h"
#include "term.h"
#include "util/fdcopy.h"
#include "cli_proc.h"
#include "util/cleanup.h"
#include "util/units.h"

/* the self-pipe's write end (one per process: a signal handler needs it) */
static int g_signal_pipe = -1;

static void on_signal(int sig) {
  int saved = errno;
  unsigned char b = (unsigned char) sig;
  if (write(g_signal_pipe, &b, 1) < 0) {}
  errno = saved;
}

/* Route SIGINT/SIGTERM/SIGHUP to a pipe; returns its read end or -1. */
static int signals_to_pipe(const char *cmd) {
  int p[2];
  if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
    fprintf(stderr, "agentnest %s: pipe: %s\n", cmd, strerror(errno));
    return -1;
  }
  g_signal_pipe = p[1];
  struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  return p[0];
}

static const char exec_usage[] =
    "Usage: agentnest exec ID [OPTIONS] -- CMD [ARG...]\n"
    "\n"
    "Run CMD (an argv, no shell) in the live sandbox ID (id or name) and exit with its status.\n"
    "A timeout kills the command's whole process tree and leaves the sandbox and its files;\n"
    "so does SIGINT, SIGTERM or SIGHUP to this command (it then exits 128+N), or its death.\n"
    "\n"
    "  --timeout DURATION   timeout of this command (default: the sandbox's --exec-timeout,\n"
    "                       at most its remaining lifetime)\n"
    "  --env K=V            extra environment variable (repeatable)\n"
    "  --workdir DIR        working directory inside (absolute)\n"
    "  -i, --interactive    pass this command's stdin to CMD (EOF included; default /dev/null)\n"
    "  --stdin FILE         CMD's stdin is FILE (a regular file; FIFOs and devices refused)\n"
    "  -t, --tty            a terminal for CMD: a pty of the sandbox's own devpts; with -i\n"
    "                       from a terminal, that terminal is raw while attached (Ctrl-C\n"
    "                       reaches CMD, not this command) and resizes follow; output is\n"
    "                       one stream (stdout), escape sequences passed through as a\n"
    "                       terminal session's are\n"
    "  --json               print one JSON result document instead of streaming output\n"
    "  --stream             print JSON Lines as output arrives: {\"type\":\"stdout\"|\"stderr\",\n"
    "                       \"data\":...} (base64 with \"encoding\":\"base64\" when not UTF-8),\n"
    "                       then one {\"type\":\"result\",...} with the --json members\n"
    "  -d, --detach         start CMD in the background and print its handle (see\n"
    "                       `agentnest proc --help`); with --json: {sandbox,handle,pid}.\n"
    "                       No --timeout; a CMD that cannot be started exits 125 (the\n"
    "                       message says why: not found, not executable)\n"
    "  -h, --help           this help\n"
    "\n"
    "An option of ours after CMD is refused, not passed to CMD: put '--' before CMD to pass\n"
    "it on (a CMD that starts with '-' always needs '--').  Under --json/--stream a runtime\n"
    "failure (125) prints {\"type\":\"error\",\"status\":125,\"error\":{\"code\",\"message\"}}.\n"
    "PYTHONUNBUFFERED=1 is set unless the sandbox or --env sets PYTHONUNBUFFERED.\n"
    "\n"
    "Exit status: the command's own; 124 timed out; 125 runtime failure (no such sandbox,\n"
    "expired, bad option); 126 not executable; 127 not found; 128+N killed by signal N.\n";

int cmd_exec(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      {"timeout", required_argument, NULL, CLI_OPT_TIMEOUT},
      {"env", required_argument, NULL, CLI_OPT_ENV},
      {"workdir", required_argument, NULL, CLI_OPT_WORKDIR},
      {"json", no_argument, NULL, CLI_OPT_JSON},
      {"stream", no_argument, NULL, CLI_OPT_STREAM},
      {"interactive", no_argument, NULL, 'i'},
      {"tty", no_argument, NULL, 't'},
      {"stdin", required_argument, NULL, CLI_OPT_STDIN},
      {"detach", no_argument, NULL, 'd'},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  static const char form[] = "agentnest exec ID [OPTIONS] -- CMD [ARG...]";
  const char *cmd = argv[0];
  struct an_exec_opts eo = {0};
  cleanup_free char **env = NULL;
  size_t nenv = 0;
  bool json = g->json, stream = false, interactive = false, detach = false;
  const char *stdin_file = NULL;
  struct cli_stream st = {0};
  int c, r;
  cli_error_json_set(json);
  optind = 1;
  opterr = 0;
  /* ID may come before or after the options; CMD follows "--" (or the first
   * operand after ID). */
  const char *id = NULL;
  while (optind < argc) {
    c = getopt_long(argc, argv, "+:hitd", longopts, NULL);
    if (c == -1) {
      if (!id && optind < argc && strcmp(argv[optind - 1], "--") != 0) {
        id = argv[optind++];
        continue;
      }
      break;
    }
    switch (c) {
    case 'h':
      fputs(exec_usage, stdout);
      return 0;
    case CLI_OPT_TIMEOUT: {
      an_error_t err = NULL;
      if (an_parse_duration_ms(optarg, &eo.timeout_ms, &err) < 0 || eo.timeout_ms == 0) {
        if (!err) an_error_set(&err, 0, "must be more than 0");
        an_error_prefix(&err, "--timeout %s", optarg);
        return cli_fail(cmd, &err);
      }
      break;
    }
    case CLI_OPT_ENV:
      if ((r = cli_env_add(cmd, &env, &nenv, optarg))) return r;
      break;
    case CLI_OPT_WORKDIR:
      if (optarg[0] != '/') return cli_usage_error(cmd, "--workdir %s: must be an absolute path", optarg);
      eo.workdir = optarg;
      break;
    case CLI_OPT_JSON:
      json = true;
      cli_error_json_set(true);
      break;
    case CLI_OPT_STREAM:
      stream = true;
      cli_error_json_set(true);
      break;
    case 'i':
      interactive = true;
      break;
    case 't':
      eo.tty = true;
      break;
    case CLI_OPT_STDIN:
      stdin_file = optarg;
      break;
    case 'd':
      detach = true;
      break;
    default:
      return cli_command_option_error(cmd, c, argc, argv, form);
    }
  }
  if (!id) return cli_usage_error(cmd, "no sandbox ID given");
  if (optind >= argc) return cli_usage_error(cmd, "no command given (agentnest exec ID -- CMD [ARG...])");
  if ((r = cli_check_after_command(cmd, argc, argv, optind, longopts, form))) return r;
  if (json && stream) return cli_usage_error(cmd, "--json and --stream exclude each other");
  if (detach && (stream || interactive || stdin_file || eo.tty))
    return cli_usage_error(cmd, "--detach takes no -i, -t, --stdin or --stream (read its output with proc logs)");
  /* it was accepted and ignored: the process ran to its end (new-user nu9) */
  if (detach && eo.timeout_ms)
    return cli_usage_error(cmd, "--detach takes no --timeout (end it with agentnest proc kill; the "
                                "sandbox's lifetime bounds it)");
  if (detach) {
    return cli_exec_detach(g, cmd, id, argv + optind, &env, &nenv, eo.workdir, json);
  }
  if (interactive && stdin_file) return cli_usage_error(cmd, "-i and --stdin exclude each other");
  cleanup_close int in_fd = -1;
  if (stdin_file) {
    an_error_t e = NULL;
    if ((in_fd = an_open_input(AT_FDCWD, stdin_file, 0, false, NULL, &e)) < 0) {
      an_error_prefix(&e, "--stdin");
      return cli_fail(cmd, &e);
    }
  }
  if (interactive || in_fd >= 0) {
    eo.has_stdin = true;
    eo.stdin_fd = interactive ? 0 : in_fd;
  }
  /* -t whose input is not a terminal (no -i, or --stdin FILE): the pty still
   * gets the size of the caller's terminal, as docker exec -t gives it (it
   * does not follow a resize: no pump watches the caller's terminal) */
  struct winsize ws;
  if (eo.tty && !(interactive && isatty(0)))
    for (int fd = 0; fd <= 2; fd++)
      if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
        eo.tty_rows = ws.ws_row;
        eo.tty_cols = ws.ws_col;
        break;
      }
  if (stream) {
    eo.on_data = cli_stream_data;
    eo.on_data_arg = &st;
  } else if (!json) {
    eo.on_data = cli_stream_output;
  }

  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  if (an_sandbox_open_ctx(cli_ctx(), g->root, id, &sb, &err) < 0) return cli_fail(cmd, &err);
  const struct an_sandbox_opts *so = an_sandbox_get_opts(sb);
  if ((r = cli_env_python_unbuffered(cmd, &env, &nenv, so ? an_sandbox_opts_env(so) : NULL))) {
    an_sandbox_close(sb);
    return r;
  }
  eo.env = env;
  cleanup_close int sigfd = signals_to_pipe(cmd);
  if (sigfd < 0) {
    an_sandbox_close(sb);
    return AN_EXIT_RUNTIME;
  }
  eo.has_cancel_fd = true;
  eo.cancel_fd = sigfd;
  struct an_exec_result res = {0};
  /* -t -i from a terminal: raw while attached, restored before anything else */
  struct cli_term term = {.fd = -1};
  struct sigaction pipe_ign = {.sa_handler = SIG_IGN}, pipe_old;
  if (eo.tty && interactive && cli_term_raw(0, &term)) sigaction(SIGPIPE, &pipe_ign, &pipe_old);
  r = an_sandbox_exec(sb, argv + optind, &eo, &res, &err);
  if (term.fd >= 0) {
    cli_term_restore(&term);
    sigaction(SIGPIPE, &pipe_old, NULL);
  }
  if (r < 0) {
    an_sandbox_close(sb);
    return cli_fail(cmd, &err);
  }
  int status = res.status;
  unsigned char sig = 0;
  if (res.cancelled && read(sigfd, &sig, 1) == 1) {
    fprintf(stderr, "agentnest %s: %s: the command was ended\n", cmd, strsignal(sig));
    status = 128 + sig;
  }
  if (!json && !stream) cli_note_truncated(cmd, &res);
  if (json && cli_print_result_json(cmd, an_sandbox_id(sb), &res, NULL) != 0) status = AN_EXIT_RUNTIME;
  if (stream && cli_stream_result(cmd, &st, an_sandbox_id(sb), &res, NULL) != 0) status = AN_EXIT_RUNTIME;
  an_exec_result_release(&res);
  an_sandbox_close(sb);
  return status;
}
