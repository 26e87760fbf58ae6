/* cli/agentnest/cmd_run.c — the one-shot commands `agentnest run -- CMD`,
 * `agentnest shell 'SCRIPT'` and `agentnest python CODE|FILE.py`: create a
 * sandbox, put files in, run one command (output streamed live, stdout and
 * stderr kept apart, or one --json document), copy artifacts out, destroy.
 *
 * Signals: SIGINT, SIGTERM and SIGHUP are blocked and read from a
 * signalfd.  The command runs in a forked child process of the CLI (the
 * library must be called from single-threaded processes, agentnest/sandbox.h
 * "PROCESSES AND THREADS"), which execs, copies artifacts out and prints the
 * result; meanwhile the parent waits on the signalfd and the child's pidfd.
 * On a signal the parent destroys the sandbox (which ends the exec) and
 * exits 128+N: the sandbox is gone before the CLI is.  The sandbox is
 * created owned (an_sandbox_create_owned): if the CLI is SIGKILLed, its
 * monitor sees it exit and tears the sandbox down. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/pool.h"
#include "agentnest/sandbox.h"
#include "agentnest/sandbox_opts.h"
#include "argv_rule.h"
#include "cli.h"
#include "cli_pool.h"
#include "stream.h"
#include "util/cleanup.h"
#include "util/fdcopy.h"

enum oneshot_kind { ONESHOT_RUN, ONESHOT_SHELL, ONESHOT_PYTHON };

static const char run_usage[] =
    "Usage: agentnest run [OPTIONS] -- CMD [ARG...]\n"
    "\n"
    "Run CMD (an argv, no shell; looked up in the sandbox's PATH) in a new sandbox, stream its\n"
    "stdout and stderr, destroy the sandbox, and exit with CMD's status.\n";
static const char shell_usage[] =
    "Usage: agentnest shell [OPTIONS] 'SCRIPT' [ARG...]\n"
    "       agentnest shell ID\n"
    "\n"
    "Run SCRIPT with `sh -c` in a new sandbox (ARGs become $1, $2, ...; $0 is sh), stream its output,\n"
    "destroy the sandbox, and exit with the script's status.  SCRIPT - reads the script from\n"
    "stdin (no -i or --stdin then).\n"
    "\n"
    "With only ID (the id or name of a live sandbox, no options): an interactive login shell\n"
    "(`sh -l`) in that sandbox, on a pty of its own when stdin is a terminal (as exec -i -t),\n"
    "else reading commands from stdin (as exec -i); the sandbox lives on when it ends.\n";
static const char python_usage[] =
    "Usage: agentnest python [OPTIONS] CODE|FILE.py [ARG...]\n"
    "\n"
    "Run Python in a new sandbox: FILE.py (a host file ending in .py) is copied into the\n"
    "workspace and run as `python3 FILE.py ARG...`; anything else runs as `python3 -c CODE`.\n"
    "CODE - reads the code from stdin (as python3 -; no -i or --stdin then).\n";
static const char oneshot_common_help[] =
    "\n"
    "One-shot options:\n"
    "  --put LOCAL[:DEST]      copy a host file or directory into the workspace first\n"
    "                          (DEST relative to /workspace; default its basename)\n"
    "  --get GLOB[:DIR]        after the command, copy workspace files matching GLOB (`**`\n"
    "                          spans directories) to host DIR (default .), keeping their\n"
    "                          paths under /workspace (out/x.txt -> DIR/out/x.txt); one that\n"
    "                          matches nothing is a warning, not an error\n"
    "  -i, --interactive       pass this command's stdin to the command (default /dev/null)\n"
    "  --stdin FILE            the command's stdin is FILE (a regular file; FIFOs refused)\n"
    "  --json                  print one JSON result document instead of streaming output\n"
    "  --stream                print JSON Lines as output arrives: {\"type\":\"stdout\"|\"stderr\",\n"
    "                          \"data\":...} (base64 with \"encoding\":\"base64\" when not UTF-8),\n"
    "                          then one {\"type\":\"result\",...} with the --json members\n"
    "  -h, --help              this help\n"
    "\n"
    "An option of ours after the command (CMD, SCRIPT or CODE) is refused, not passed to it:\n"
    "put '--' before the command to pass it on (one that starts with '-' always needs '--').\n"
    "Under --json/--stream a runtime failure (125) prints one error document,\n"
    "{\"type\":\"error\",\"status\":125,\"error\":{\"code\",\"message\"}}, see agentnest(1).\n"
    "PYTHONUNBUFFERED=1 is set unless the profile or --env sets PYTHONUNBUFFERED.\n"
    "\n"
    "Exit status: the command's own; 124 timed out; 125 runtime failure (bad option, image\n"
    "missing, refused); 126 not executable; 127 not found; 128+N killed by signal N.\n\n";

struct oneshot {
  const char *cmd;
  const char *root;
  bool json, stream;
  char **env;              /* extra environment of the command (PYTHONUNBUFFERED) */
  bool interactive;        /* -i: this process's stdin */
  const char *stdin_file;  /* --stdin FILE (checked by the parent, opened by the child) */
  const char *puts[CLI_MAX_FLAGS];
  size_t nputs;
  const char *gets[CLI_MAX_FLAGS];
  size_t ngets;
  const char *pool;     /* --pool NAME */
  bool pool_only;       /* --pool-only */
  bool pooled;          /* the sandbox came from the pool */
};

/* Split "A[:B]": B is what follows the last ':' unless A names an existing
 * host path as a whole.  Returns a heap copy of A in *first (caller frees). */
static void split_spec(const char *spec, bool first_is_host_path, char **first,
                       const char **second) {
  struct stat st;
  const char *colon = strrchr(spec, ':');
  if (!colon || (first_is_host_path && lstat(spec, &st) == 0)) {
    *first = strdup(spec);
    *second = NULL;
    return;
  }
  *first = strndup(spec, (size_t) (colon - spec));
  *second = colon[1] ? colon + 1 : NULL;
}

static int do_puts(struct oneshot *o, struct an_sandbox *sb) {
  for (size_t i = 0; i < o->nputs; i++) {
    cleanup_free char *local = NULL;
    const char *dest;
    an_error_t err = NULL;
    split_spec(o->puts[i], true, &local, &dest);
    if (!local) return cli_usage_error(o->cmd, "out of memory");
    if (an_sandbox_put(sb, local, dest, &err) < 0) {
      an_error_prefix(&err, "--put %s", o->puts[i]);
      return cli_fail(o->cmd, &err);
    }
  }
  return 0;
}

/* Move the items of *from to the end of *to. */
static int list_append(struct an_artifact_list *to, struct an_artifact_list *from) {
  if (!from->n) return 0;
  struct an_artifact *items = realloc(to->items, (to->n + from->n) * sizeof *items);
  if (!items) return -ENOMEM;
  memcpy(items + to->n, from->items, from->n * sizeof *items);
  to->items = items;
  to->n += from->n;
  free(from->items);
  from->items = NULL;
  from->n = 0;
  return 0;
}

static void warn_stderr(void *data, const char *msg) {
  fprintf(stderr, "agentnest %s: warning: %s\n", (const char *) data, msg);
}

static int do_gets(struct oneshot *o, struct an_sandbox *sb, struct an_artifact_list *all) {
  for (size_t i = 0; i < o->ngets; i++) {
    cleanup_free char *glob = NULL;
    const char *dir;
    an_error_t err = NULL;
    split_spec(o->gets[i], false, &glob, &dir);
    if (!glob) return cli_usage_error(o->cmd, "out of memory");
    const char *globs[1] = {glob};
    struct an_artifact_opts ao = {.to_dir = dir ? dir : ".", .skip_symlinks = true,
                                  .warn = warn_stderr, .warn_data = (void *) o->cmd};
    struct an_artifact_list l = {0};
    if (an_sandbox_artifacts(sb, globs, 1, &ao, &l, &err) < 0) {
      an_error_prefix(&err, "--get %s", o->gets[i]);
      return cli_fail(o->cmd, &err);
    }
    if (!l.n) {   /* not an error (an optional output), but never silent */
      char msg[600];
      snprintf(msg, sizeof msg, "--get %s: no file in the workspace matched %s", o->gets[i], glob);
      warn_stderr((void *) o->cmd, msg);
    }
    if (list_append(all, &l) < 0) {
      an_artifact_list_free(&l);
      return cli_usage_error(o->cmd, "out of memory");
    }
  }
  return 0;
}

/* Destroy through a fresh handle (the worker thread may be using the
 * other). */
static void destroy_by_id(const char *cmd, const char *root, const char *id) {
  struct an_sandbox *sb2 = NULL;
  an_error_t err = NULL;
  if (an_sandbox_open_ctx(cli_ctx(), root, id, &sb2, &err) < 0) {
    if (err && err->errnum != ENOENT && err->errnum != ETIME) cli_fail(cmd, &err);
    an_error_free(&err);
    return;
  }
  if (an_sandbox_destroy(sb2, 0, &err) < 0) cli_fail(cmd, &err);
  an_sandbox_close(sb2);
}

static int pending_signal(int sfd) {
  struct signalfd_siginfo si;
  ssize_t r = read(sfd, &si, sizeof si);
  return r == (ssize_t) sizeof si ? (int) si.ssi_signo : 0;
}

/* The child's part: open its own handle, exec, copy artifacts out, print
 * the --json document; the exit status is the command's (125 on failure). */
static _Noreturn void oneshot_child(struct oneshot *o, const char *id, char **argv) {
  an_error_t err = NULL;
  struct an_sandbox *sb = NULL;
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  /* Ctrl-C reaches the whole foreground process group: the parent handles
   * it (destroying the sandbox ends this exec). */
  signal(SIGINT, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  if (an_sandbox_open_ctx(cli_ctx(), o->root, id, &sb, &err) < 0) exit(cli_fail(o->cmd, &err));
  struct an_exec_opts eo = {.env = o->env};
  if (o->stdin_file) {
    int fd = an_open_input(AT_FDCWD, o->stdin_file, 0, false, NULL, &err);
    if (fd < 0) {
      an_error_prefix(&err, "--stdin");
      exit(cli_fail(o->cmd, &err));
    }
    eo.has_stdin = true;
    eo.stdin_fd = fd;
  } else if (o->interactive) {
    eo.has_stdin = true;
    eo.stdin_fd = 0;
  }
  struct an_exec_result res = {0};
  struct an_artifact_list arts = {0};
  struct cli_stream st = {0};
  if (o->stream) {
    eo.on_data = cli_stream_data;
    eo.on_data_arg = &st;
  } else if (!o->json) {
    eo.on_data = cli_stream_output;
  }
  if (an_sandbox_exec(sb, argv, &eo, &res, &err) < 0) exit(cli_fail(o->cmd, &err));
  if (do_gets(o, sb, &arts) != 0) exit(AN_EXIT_RUNTIME);
  int status = res.status;
  if (!o->json && !o->stream) cli_note_truncated(o->cmd, &res);
  if (o->json && (o->pool ? cli_print_result_json_pooled(o->cmd, id, &res, &arts, o->pooled)
                          : cli_print_result_json(o->cmd, id, &res, &arts)) != 0)
    status = AN_EXIT_RUNTIME;
  if (o->stream && cli_stream_result(o->cmd, &st, id, &res, &arts) != 0) status = AN_EXIT_RUNTIME;
  fflush(stdout);
  an_exec_result_release(&res);
  an_artifact_list_free(&arts);
  an_sandbox_close(sb);
  exit(status);
}

static int oneshot_run(struct oneshot *o, struct an_sandbox_opts *opts, char **argv,
                       const char *put_file) {
  sigset_t mask, old;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGHUP);
  sigprocmask(SIG_BLOCK, &mask, &old);
  cleanup_close int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  cleanup_close int pidfd = -1;
  if (sfd < 0) {
    fprintf(stderr, "agentnest %s: signalfd: %s\n", o->cmd, strerror(errno));
    return AN_EXIT_RUNTIME;
  }

  an_error_t err = NULL;
  struct an_sandbox *sb = NULL;
  /* owned: a CLI killed with SIGKILL takes the sandbox with it (a pooled
   * one too: the claim makes this process its owner) */
  if (o->pool) {
    int pr = cli_pool_take(o->cmd, o->root, o->pool, o->pool_only, true, &sb, &o->pooled);
    if (pr) return pr;
  } else if (an_sandbox_create_owned(o->root, opts, &sb, &err) < 0) {
    return cli_fail(o->cmd, &err);
  }
  cleanup_free char *id = strdup(an_sandbox_id(sb));
  int status = AN_EXIT_RUNTIME, sig = pending_signal(sfd);

  if (!sig && put_file) {
    const char *base = strrchr(put_file, '/');
    if (an_sandbox_put(sb, put_file, base ? base + 1 : put_file, &err) < 0) {
      cli_fail(o->cmd, &err);
      goto out;
    }
  }
  if (!sig && do_puts(o, sb) != 0) goto out;
  sig = sig ? sig : pending_signal(sfd);
  if (sig || !id) goto out;

  fflush(NULL);
  pid_t child = fork();
  if (child < 0) {
    fprintf(stderr, "agentnest %s: fork: %s\n", o->cmd, strerror(errno));
    goto out;
  }
  if (child == 0) oneshot_child(o, id, argv);
  /* the child prints the one JSON document (result or error) from here on */
  cli_error_json_set(false);
  pidfd = (int) syscall(SYS_pidfd_open, child, 0);
  /* pidfd_open (Linux 5.3) is required by doctor; without it the CLI just
   * waits for the child. */
  while (pidfd >= 0) {
    struct pollfd p[2] = {{.fd = sfd, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
    if (poll(p, 2, -1) < 0 && errno != EINTR) break;
    if (p[0].revents && (sig = pending_signal(sfd))) {
      /* Stop the child first (it would only report the exec failing), then
       * destroy the sandbox: the exec's processes die with it. */
      kill(child, SIGKILL);
      destroy_by_id(o->cmd, o->root, id);
      break;
    }
    if (p[1].revents) break;
  }
  int wst = 0;
  while (waitpid(child, &wst, 0) < 0 && errno == EINTR) {
  }
  if (!sig) status = WIFEXITED(wst) ? WEXITSTATUS(wst) : AN_EXIT_RUNTIME;

out:
  /* The result is out: pid 1 is killed and waited for (no process of the
   * sandbox outlives this command), the rest is removed by a detached
   * reaper (the caller does not wait for that). */
  if (!sig && an_sandbox_destroy_background(sb, &err) == 0) {
    an_sandbox_close(sb);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return status;
  }
  an_error_free(&err);
  if (an_sandbox_destroy(sb, 0, &err) < 0) {
    cli_fail(o->cmd, &err);
    if (!sig) status = AN_EXIT_RUNTIME;
  }
  an_sandbox_close(sb);
  if (sig) {
    fflush(stdout);
    return 128 + sig;
  }
  sigprocmask(SIG_SETMASK, &old, NULL);
  return status;
}

/* `agentnest shell ID`: a login shell in the live sandbox ID, as
 * `exec -i [-t] ID -- sh -l` (a pty when stdin is a terminal).  Returns -1
 * when ID names no live sandbox (then it is a one-shot SCRIPT). */
static int shell_attach_or_not(struct an_global_opts *g, const char *id) {
  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  if (an_sandbox_open_ctx(cli_ctx(), g->root, id, &sb, &err) < 0) {
    an_error_free(&err);
    return -1;
  }
  an_sandbox_close(sb);
  if (isatty(0)) {
    char *xargv[] = {"shell", "-i", "-t", (char *) id, "--", "sh", "-l", NULL};
    return cmd_exec(g, 7, xargv);
  }
  char *xargv[] = {"shell", "-i", (char *) id, "--", "sh", NULL};
  return cmd_exec(g, 5, xargv);
}

static int oneshot_main(enum oneshot_kind kind, struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      CLI_SANDBOX_LONGOPTS,
      {"put", required_argument, NULL, CLI_OPT_PUT},
      {"get", required_argument, NULL, CLI_OPT_GET},
      {"json", no_argument, NULL, CLI_OPT_JSON},
      CLI_POOL_LONGOPTS,
      {"stream", no_argument, NULL, CLI_OPT_STREAM},
      {"interactive", no_argument, NULL, 'i'},
      {"stdin", required_argument, NULL, CLI_OPT_STDIN},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  const char *usage = kind == ONESHOT_RUN ? run_usage : kind == ONESHOT_SHELL ? shell_usage
                                                                                : python_usage;
  const char *form = kind == ONESHOT_RUN     ? "agentnest run [OPTIONS] -- CMD [ARG...]"
                   : kind == ONESHOT_SHELL ? "agentnest shell [OPTIONS] -- 'SCRIPT' [ARG...]"
                                           : "agentnest python [OPTIONS] -- CODE|FILE.py [ARG...]";
  struct oneshot o = {.cmd = argv[0], .root = g->root, .json = g->json};
  cli_error_json_set(o.json);
  static struct cli_sandbox_flags flags;
  memset(&flags, 0, sizeof flags);
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+:hi", longopts, NULL)) != -1) {
    if (cli_sandbox_flag(&flags, c, optarg)) continue;
    switch (c) {
    case 'h':
      printf("%s\n%s\n%s%s", usage, cli_sandbox_opts_help, cli_pool_opts_help, oneshot_common_help);
      return 0;
    case CLI_OPT_POOL:
      o.pool = optarg;
      break;
    case CLI_OPT_POOL_ONLY:
      o.pool_only = true;
      break;
    case CLI_OPT_PUT:
      if (o.nputs < CLI_MAX_FLAGS) o.puts[o.nputs++] = optarg;
      break;
    case CLI_OPT_GET: {
      cleanup_free char *glob = NULL;
      const char *dir;
      an_error_t err = NULL;
      split_spec(optarg, false, &glob, &dir);
      if (!glob || an_glob_check(glob, &err) < 0) {
        an_error_prefix(&err, "--get %s", optarg);
        return cli_fail(o.cmd, &err);
      }
      if (o.ngets < CLI_MAX_FLAGS) o.gets[o.ngets++] = optarg;
      break;
    }
    case CLI_OPT_JSON:
      o.json = true;
      cli_error_json_set(true);
      break;
    case CLI_OPT_STREAM:
      o.stream = true;
      cli_error_json_set(true);
      break;
    case 'i':
      o.interactive = true;
      break;
    case CLI_OPT_STDIN: {
      an_error_t err = NULL;
      int fd = an_open_input(AT_FDCWD, optarg, 0, false, NULL, &err);
      if (fd < 0) {
        an_error_prefix(&err, "--stdin");
        return cli_fail(o.cmd, &err);
      }
      close(fd);
      o.stdin_file = optarg;
      break;
    }
    default:
      return cli_command_option_error(o.cmd, c, argc, argv, form);
    }
  }
  if (o.json && o.stream) return cli_usage_error(o.cmd, "--json and --stream exclude each other");
  if (o.interactive && o.stdin_file) return cli_usage_error(o.cmd, "-i and --stdin exclude each other");
  if (kind == ONESHOT_SHELL && argc - optind == 1 && optind == 1) {
    int a = shell_attach_or_not(g, argv[optind]);
    if (a >= 0) return a;
  }
  if (optind >= argc)
    return cli_usage_error(o.cmd, kind == ONESHOT_RUN     ? "no command given (agentnest run [OPTIONS] -- CMD [ARG...])"
                                  : kind == ONESHOT_SHELL ? "no script given"
                                                          : "no code or FILE.py given");
  if (kind == ONESHOT_SHELL && !argv[optind][0]) return cli_usage_error(o.cmd, "empty script");
  int r = cli_check_after_command(o.cmd, argc, argv, optind, longopts, form);
  if (r) return r;
  /* CODE or SCRIPT "-": read from stdin, as python3 - and sh -s do */
  cleanup_free char *stdin_code = NULL;
  if (kind != ONESHOT_RUN && !strcmp(argv[optind], "-")) {
    if (o.interactive || o.stdin_file)
      return cli_usage_error(o.cmd, "%s - reads the %s from stdin: it takes no -i or --stdin",
                             kind == ONESHOT_SHELL ? "SCRIPT" : "CODE", kind == ONESHOT_SHELL ? "script" : "code");
    size_t len = 0;
    if ((r = cli_read_all(0, &stdin_code, &len)) < 0)
      return cli_usage_error(o.cmd, "read the %s from stdin: %s", kind == ONESHOT_SHELL ? "script" : "code",
                             strerror(-r));
    if (strlen(stdin_code) != len || !len)
      return cli_usage_error(o.cmd, "the %s on stdin is %s", kind == ONESHOT_SHELL ? "script" : "code",
                             len ? "not text (a NUL byte)" : "empty");
  }

  if (o.pool_only && !o.pool) return cli_usage_error(o.cmd, "--pool-only needs --pool NAME");
  if ((r = cli_pool_check_flags(o.cmd, o.pool, flags.n, flags.profile))) return r;
  struct an_sandbox_opts *opts = NULL;
  if (!o.pool && (r = cli_sandbox_opts(o.cmd, &flags, &opts))) return r;
  cleanup_free char **env = NULL;
  size_t nenv = 0;
  if ((r = cli_env_python_unbuffered(o.cmd, &env, &nenv, opts ? an_sandbox_opts_env(opts) : NULL))) {
    an_sandbox_opts_free(opts);
    return r;
  }
  o.env = env;

  int rest = argc - optind;
  cleanup_free char **cargv = calloc((size_t) rest + 5, sizeof *cargv);
  if (!cargv) {
    an_sandbox_opts_free(opts);
    return cli_usage_error(o.cmd, "out of memory");
  }
  const char *put_file = NULL;
  size_t n = 0;
  if (kind == ONESHOT_RUN) {
    for (int i = optind; i < argc; i++) cargv[n++] = argv[i];
  } else if (kind == ONESHOT_SHELL) {
    cargv[n++] = "sh";
    cargv[n++] = "-c";
    cargv[n++] = stdin_code ? stdin_code : argv[optind];
    cargv[n++] = "sh";
    for (int i = optind + 1; i < argc; i++) cargv[n++] = argv[i];
  } else {
    const char *code = stdin_code ? stdin_code : argv[optind];
    size_t len = strlen(code);
    struct stat st;
    cargv[n++] = "python3";
    if (stdin_code) {
      cargv[n++] = "-c";
      cargv[n++] = stdin_code;
    } else if (len > 3 && !strcmp(code + len - 3, ".py") && !strchr(code, '\n') && stat(code, &st) == 0 &&
        S_ISREG(st.st_mode)) {
      const char *base = strrchr(code, '/');
      put_file = code;
      cargv[n++] = (char *) (base ? base + 1 : code);
    } else if (len > 3 && !strcmp(code + len - 3, ".py") && !strchr(code, '\n') &&
               !strchr(code, ' ') && !strchr(code, '(')) {
      an_sandbox_opts_free(opts);
      fprintf(stderr, "agentnest %s: %s: no such file (give Python code or an existing FILE.py)\n",
              o.cmd, code);
      return AN_EXIT_RUNTIME;
    } else {
      cargv[n++] = "-c";
      cargv[n++] = (char *) code;
    }
    for (int i = optind + 1; i < argc; i++) cargv[n++] = argv[i];
  }
  cargv[n] = NULL;
  r = oneshot_run(&o, opts, cargv, put_file);
  an_sandbox_opts_free(opts);
  return r;
}

int cmd_run(struct an_global_opts *g, int argc, char **argv) {
  return oneshot_main(ONESHOT_RUN, g, argc, argv);
}
int cmd_shell(struct an_global_opts *g, int argc, char **argv) {
  return oneshot_main(ONESHOT_SHELL, g, argc, argv);
}
int cmd_python(struct an_global_opts *g, int argc, char **argv) {
  return oneshot_main(ONESHOT_PYTHON, g, argc, argv);
}
