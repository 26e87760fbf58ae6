/* cli/agentnest/cmd_batch.c — `agentnest batch JOBS`: parse the options,
 * block SIGINT/SIGTERM/SIGHUP into a signalfd the library reads
 * (agentnest/batch.h), print progress (a live line on a terminal, one line
 * per finished job and a periodic summary elsewhere) and the summary table
 * on stderr, and turn the summary into the exit status.  agentnest-batch(1). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include "agentnest/batch.h"
#include "agentnest/pool.h"
#include "cli.h"
#include "cli_pool.h"
#include "stream.h"
#include "util/units.h"

static const char batch_usage[] =
    "Usage: agentnest batch [OPTIONS] JOBS\n"
    "\n"
    "Run the jobs of JOBS (JSON Lines, one job a line; '-' reads standard input) in parallel\n"
    "sandboxes; append one JSON record per job to the results (fsync'ed as each job ends).\n"
    "A job: {\"id\":\"t1\",\"shell\":\"make test\",\"timeout\":\"60s\",\"memory\":\"256m\",\"get\":[\"out/**\"]}\n"
    "with one of cmd (argv) / shell / python / file, and optional image, profile, memory, cpus,\n"
    "pids, tmp_size, max_output, max_read, workdir, network, seccomp_profile, timeout, env,\n"
    "secrets (names), put, get.  See agentnest-batch(1).\n"
    "\n"
    "Batch options:\n"
    "  -j, --jobs N            jobs at once (default: online CPUs)\n"
    "  --results FILE          append records here (default: standard output, no resume)\n"
    "  --junit FILE            write JUnit XML (a job = a test case) at the end\n"
    "  --output-dir DIR        full stdout/stderr and artifacts in DIR/ID/\n"
    "  --resume                keep FILE's records, run the jobs it lacks (interrupted: attempt+1)\n"
    "  --shard K/N             run the jobs whose ordinal o (1-based) has (o-1) mod N = K-1\n"
    "  --fail-fast             start no job after the first one that did not pass\n"
    "  --lenient               record a malformed line as a failed job (default: refuse the file)\n"
    "  --drain                 on SIGINT/SIGTERM let running jobs finish (a second signal ends them)\n"
    "  --max-memory SIZE       running jobs' memory limits add up to at most SIZE (default: RAM)\n"
    "  --record-output SIZE    stdout/stderr bytes kept per stream in a record (default 64k)\n"
    "  --pool NAME             the defaults are warm pool NAME's options (agentnest pool start),\n"
    "                          and a job with no options of its own takes a ready sandbox of it\n"
    "                          (a fresh one when the pool is empty or its keeper is dead: a\n"
    "                          warning then); records get \"pooled\"\n"
    "  -h, --help              this help\n"
    "\n"
    "The sandbox options below are the defaults of every job (a job's members override them).\n"
    "\n"
    "Exit status: 0 every job of the shard passed; 1 a job failed, timed out, was OOM-killed or\n"
    "could not run, or some did not run (--fail-fast); 125 the batch itself failed (bad option,\n"
    "malformed JOBS, unreadable results); 128+N stopped by signal N (130 SIGINT, 143 SIGTERM).\n\n";

enum { OPT_RESULTS = 1200, OPT_JUNIT, OPT_OUTPUT_DIR, OPT_RESUME, OPT_SHARD, OPT_FAIL_FAST,
       OPT_LENIENT, OPT_DRAIN, OPT_MAX_MEMORY, OPT_RECORD_OUTPUT };

struct progress {
  bool tty;
  bool line_shown;
  const char *jobs;      /* JOBS as named in messages */
  uint64_t invalid;      /* malformed lines reported */
};

static void clear_line(struct progress *p) {
  if (p->tty && p->line_shown) fputs("\r\033[K", stderr);
  p->line_shown = false;
}

static void rate_eta(const struct an_batch_counts *c, char *buf, size_t len) {
  uint64_t ran = c->done - c->resumed;
  double secs = (double) c->elapsed_ms / 1000.0;
  double rate = secs > 0 ? (double) ran / secs : 0;
  if (rate > 0 && c->total > c->done)
    snprintf(buf, len, "%.1f jobs/s, ETA %.0fs", rate, (double) (c->total - c->done) / rate);
  else snprintf(buf, len, "%.1f jobs/s", rate);
}

static uint64_t not_passed(const struct an_batch_counts *c) {
  return c->done - c->by_result[AN_BATCH_PASSED];
}

static void on_event(void *arg, const struct an_batch_event *ev) {
  struct progress *p = arg;
  const struct an_batch_counts *c = ev->counts;
  char re[64];
  rate_eta(c, re, sizeof re);
  switch (ev->kind) {
  case AN_BATCH_EV_INVALID:
    clear_line(p);
    /* the one report of this line: the final error does not repeat it */
    fprintf(stderr, "agentnest batch: JOBS %s line %llu: %s\n", p->jobs, (unsigned long long) ev->line, ev->reason);
    p->invalid++;
    return;
  case AN_BATCH_EV_STOPPING:
    clear_line(p);
    if (ev->signal)
      fprintf(stderr, "agentnest batch: %s: no more jobs start; %s\n", sigabbrev_np(ev->signal) ? sigabbrev_np(ev->signal) : "signal",
              "running jobs end (with --drain: finish; a second signal ends them)");
    else fprintf(stderr, "agentnest batch: --fail-fast: no more jobs start; running jobs finish\n");
    return;
  case AN_BATCH_EV_STARTED:
    if (!p->tty) return;
    break;
  case AN_BATCH_EV_FINISHED:
    if (p->tty) {
      if (ev->result == AN_BATCH_PASSED) break;
      clear_line(p);
    }
    fprintf(stderr, "batch: [%llu/%llu] %s %s%s%s (%llu ms)\n", (unsigned long long) c->done,
            (unsigned long long) c->total, an_batch_result_name(ev->result), ev->id,
            ev->reason ? ": " : "", ev->reason ? ev->reason : "", (unsigned long long) ev->duration_ms);
    break;
  case AN_BATCH_EV_TICK:
    if (!p->tty) {
      fprintf(stderr, "batch: progress %llu/%llu done, %llu not passed, %llu running, %s\n",
              (unsigned long long) c->done, (unsigned long long) c->total,
              (unsigned long long) not_passed(c), (unsigned long long) c->running, re);
      return;
    }
    break;
  }
  if (p->tty) {
    fprintf(stderr, "\r\033[Kbatch: %llu/%llu done, %llu failed, %llu running, %s",
            (unsigned long long) c->done, (unsigned long long) c->total,
            (unsigned long long) not_passed(c), (unsigned long long) c->running, re);
    p->line_shown = true;
  }
}

static void print_summary(const struct an_batch_summary *s, const struct an_batch_config *cfg) {
  const struct an_batch_counts *c = &s->counts;
  fprintf(stderr, "\nbatch summary");
  if (cfg->shard_n) fprintf(stderr, " (shard %u/%u)", cfg->shard_k, cfg->shard_n);
  fprintf(stderr, ":\n  %-12s %8s\n", "result", "jobs");
  for (int r = 0; r < AN_BATCH__NRESULTS; r++)
    fprintf(stderr, "  %-12s %8llu\n", an_batch_result_name((enum an_batch_result) r),
            (unsigned long long) c->by_result[r]);
  fprintf(stderr, "  %-12s %8llu\n", "not run", (unsigned long long) s->not_run);
  fprintf(stderr, "  %-12s %8llu", "total", (unsigned long long) c->total);
  if (c->resumed) fprintf(stderr, "   (%llu recorded by an earlier run)", (unsigned long long) c->resumed);
  uint64_t n = c->done ? c->done : 1;
  fprintf(stderr, "\n  wall time %.2f s; job time %.2f s in all, %.0f ms per job\n",
          (double) s->wall_ms / 1000.0, (double) s->job_ms_total / 1000.0,
          (double) s->job_ms_total / (double) n);
  if (s->nslowest) {
    fprintf(stderr, "  slowest:");
    for (size_t i = 0; i < s->nslowest; i++)
      fprintf(stderr, "%s %s %.2f s", i ? "," : "", s->slowest[i].id, (double) s->slowest[i].ms / 1000.0);
    fputc('\n', stderr);
  }
}

struct batch_args {
  struct an_batch_config cfg;
  struct cli_sandbox_flags *flags;
  const char *max_memory, *record_output;
  bool bad;
};

static int parse_shard(const char *s, unsigned *k, unsigned *n) {
  char *end;
  errno = 0;
  unsigned long a = strtoul(s, &end, 10);
  if (errno || end == s || *end != '/' || a == 0) return -1;
  const char *t = end + 1;
  unsigned long b = strtoul(t, &end, 10);
  if (errno || end == t || *end || b == 0 || a > b || b > 1000000) return -1;
  *k = (unsigned) a;
  *n = (unsigned) b;
  return 0;
}

static int on_opt(void *ctx, int code, char *arg) {
  struct batch_args *a = ctx;
  if (cli_sandbox_flag(a->flags, code, arg)) return -1;
  switch (code) {
  case 'j': {
    char *end;
    errno = 0;
    unsigned long v = strtoul(arg, &end, 10);
    if (errno || !*arg || *end || v == 0 || v > 4096)
      return cli_usage_error("batch", "-j %s: expected a number of jobs, 1..4096", arg);
    a->cfg.jobs = (unsigned) v;
    return -1;
  }
  case OPT_RESULTS: a->cfg.results_path = arg; return -1;
  case OPT_JUNIT: a->cfg.junit_path = arg; return -1;
  case OPT_OUTPUT_DIR: a->cfg.output_dir = arg; return -1;
  case OPT_RESUME: a->cfg.resume = true; return -1;
  case OPT_FAIL_FAST: a->cfg.fail_fast = true; return -1;
  case OPT_LENIENT: a->cfg.lenient = true; return -1;
  case OPT_DRAIN: a->cfg.drain = true; return -1;
  case OPT_MAX_MEMORY: a->max_memory = arg; return -1;
  case OPT_RECORD_OUTPUT: a->record_output = arg; return -1;
  case CLI_OPT_POOL: a->cfg.pool = arg; return -1;
  case OPT_SHARD:
    if (parse_shard(arg, &a->cfg.shard_k, &a->cfg.shard_n) < 0)
      return cli_usage_error("batch", "--shard %s: expected K/N with 1 <= K <= N", arg);
    return -1;
  }
  return cli_usage_error("batch", "unknown option");
}

int cmd_batch(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      CLI_SANDBOX_LONGOPTS,
      {"jobs", required_argument, NULL, 'j'},
      {"results", required_argument, NULL, OPT_RESULTS},
      {"junit", required_argument, NULL, OPT_JUNIT},
      {"output-dir", required_argument, NULL, OPT_OUTPUT_DIR},
      {"resume", no_argument, NULL, OPT_RESUME},
      {"shard", required_argument, NULL, OPT_SHARD},
      {"fail-fast", no_argument, NULL, OPT_FAIL_FAST},
      {"lenient", no_argument, NULL, OPT_LENIENT},
      {"drain", no_argument, NULL, OPT_DRAIN},
      {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
      {"record-output", required_argument, NULL, OPT_RECORD_OUTPUT},
      {"pool", required_argument, NULL, CLI_OPT_POOL},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  static struct cli_sandbox_flags flags;
  memset(&flags, 0, sizeof flags);
  struct batch_args a = {.flags = &flags, .cfg = {.store_root = g->root, .echo_fd = -1, .signal_fd = -1}};
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(batch_usage, stdout);
      fputs(cli_sandbox_opts_help, stdout);
      return 0;
    }
  int r = cli_parse_opts("batch", argc, argv, ":hj:", longopts, batch_usage, on_opt, &a);
  if (r >= 0) return r;
  if (optind != argc - 1) return cli_usage_error("batch", optind >= argc ? "no JOBS file" : "one JOBS file only");
  a.cfg.jobs_path = argv[optind];
  an_error_t err = NULL;
  uint64_t v;
  if (a.max_memory) {
    if (an_parse_size(a.max_memory, &v, &err) < 0 || !v) {
      an_error_free(&err);
      return cli_usage_error("batch", "--max-memory %s: expected a size such as 8g", a.max_memory);
    }
    a.cfg.max_memory = v;
  }
  if (a.record_output) {
    if (an_parse_size(a.record_output, &v, &err) < 0 || !v || v > (4u << 20)) {
      an_error_free(&err);
      return cli_usage_error("batch", "--record-output %s: expected a size, 1 byte to 4m", a.record_output);
    }
    a.cfg.record_output_max = (size_t) v;
  }
  if (a.cfg.resume && !a.cfg.results_path) return cli_usage_error("batch", "--resume needs --results FILE");
  struct an_sandbox_opts *opts = NULL;
  if ((r = cli_pool_check_flags("batch", a.cfg.pool, flags.n, flags.profile)) != 0) return r;
  if (a.cfg.pool) {
    if (an_pool_options(g->root, a.cfg.pool, &opts, NULL, &err) < 0 || an_sandbox_opts_set_ctx(opts, cli_ctx(), &err) < 0) {
      an_sandbox_opts_free(opts);
      return cli_fail("batch", &err);
    }
    if (an_pool_check(g->root, a.cfg.pool, &err) == -ESRCH)   /* its claims would all fail */
      fprintf(stderr, "agentnest batch: warning: every job gets a fresh sandbox with the pool's options: %s\n", err->msg);
    an_error_free(&err);
  } else if ((r = cli_sandbox_opts("batch", &flags, &opts)) != 0) {
    return r;
  }
  a.cfg.defaults = opts;
  if (!a.cfg.results_path) a.cfg.echo_fd = 1;

  sigset_t mask, old;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGHUP);
  sigprocmask(SIG_BLOCK, &mask, &old);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    fprintf(stderr, "agentnest batch: signalfd: %s\n", strerror(errno));
    an_sandbox_opts_free(opts);
    return AN_EXIT_RUNTIME;
  }
  /* a live line, unless the records go to the same terminal */
  struct progress p = {.tty = isatty(2) == 1 && (a.cfg.results_path || isatty(1) != 1),
                       .jobs = strcmp(a.cfg.jobs_path, "-") ? a.cfg.jobs_path : "(standard input)"};
  a.cfg.signal_fd = sfd;
  a.cfg.tmp_dir = getenv("TMPDIR");   /* the library reads no environment */
  a.cfg.on_event = on_event;
  a.cfg.event_arg = &p;
  a.cfg.progress_ms = p.tty ? 500 : 10000;
  struct an_batch_summary sum;
  r = an_batch_run(&a.cfg, &sum, &err);
  clear_line(&p);
  close(sfd);
  an_sandbox_opts_free(opts);
  int status;
  if (r < 0 && p.invalid && !a.cfg.lenient && err && err->errnum == EINVAL) {
    /* malformed JOBS: each line was reported above (file, line, cause) */
    fprintf(stderr, "agentnest batch: JOBS %s: %llu malformed line%s; nothing was run (--lenient runs the "
            "other jobs and records each malformed line as a failed job)\n", p.jobs,
            (unsigned long long) p.invalid, p.invalid > 1 ? "s" : "");
    cli_error_json_print("EINVAL", err->msg);   /* --json: the error document */
    an_error_free(&err);
    status = AN_EXIT_RUNTIME;
  } else if (r < 0) {
    status = cli_fail("batch", &err);
  } else {
    print_summary(&sum, &a.cfg);
    if (sum.signal) status = 128 + sum.signal;
    else status = sum.not_run || not_passed(&sum.counts) ? 1 : 0;
  }
  an_batch_summary_release(&sum);
  sigprocmask(SIG_SETMASK, &old, NULL);
  return status;
}
