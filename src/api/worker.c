/* api/worker.c — one operation call in a worker process of its own
 * (agentnest/api.h CONCURRENCY: why processes, not threads).
 *
 * The worker is forked by an_api_job_start.  It makes itself a clean
 * process (default signal dispositions, empty mask, /dev/null as stdin and
 * stdout, only its own pipes open, death with its parent), applies the
 * context to the process-wide knobs the library reads, parses and validates
 * the input, runs the handler and writes back, on fd 3:
 *   "D<s><len: 8 hex>\n" <len bytes>...  output chunks of a streaming call
 *                          (s: 1 stdout, 2 stderr), as they come
 *   "W <warning>\n"...     warnings of the call (newlines made spaces)
 *   "KEEP\n"               it stays alive as the owner of a created sandbox
 *   "OK\n" <JSON object>   success, or
 *   "ERR <errno>\n" <msg>  failure of the operation
 * and exits (or, with KEEP, waits for the lifeline to close). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "api_internal.h"
#include "util/cleanup.h"
#include "util/json_tree.h"

#define FD_RESULT 3
#define FD_CANCEL 4
#define FD_LIFELINE 5
#define RESULT_MAX (1ull << 30)

struct an_api_job {
  const struct an_api_ctx *ctx;
  pid_t pid;
  int result_fd;          /* read end, O_NONBLOCK */
  int cancel_fd;          /* write end */
  char *buf;
  size_t len, cap;
  size_t off;             /* output frames before this are delivered */
  bool done, cancelled, reaped;
  bool holds_sandbox;     /* create, fork, run_code: never SIGKILLed within HOLD_GRACE_MS */
  uint64_t start_ms, kill_at_ms;
};

/* A worker killed while it makes (or tears down) a sandbox leaves a half-made
 * one ("dead", no pids) that only prune removes: such a call is given this
 * long to finish after a cancel, and one that made a sandbox for a caller who
 * is gone destroys it itself (worker_run). */
#define HOLD_GRACE_MS 30000

static uint64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static void write_all(int fd, const void *p, size_t n) {
  const char *b = p;
  while (n) {
    ssize_t w = write(fd, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    b += w;
    n -= (size_t) w;
  }
}

/* ---- the worker side ---------------------------------------------------------------------- */

struct worker_warnings { char *text; size_t len; };

static void worker_warn(void *data, const char *msg) {
  struct worker_warnings *w = data;
  size_t m = strlen(msg);
  char *t = realloc(w->text, w->len + m + 4);
  if (!t) return;
  w->text = t;
  memcpy(t + w->len, "W ", 2);
  for (size_t i = 0; i < m; i++) t[w->len + 2 + i] = msg[i] == '\n' ? ' ' : msg[i];
  w->len += m + 2;
  t[w->len++] = '\n';
}

/* Whether the front end asked to cancel (a byte on FD_CANCEL): its caller is gone. */
static bool cancel_pending(void) {
  struct pollfd p = {.fd = FD_CANCEL, .events = POLLIN};
  return poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP));
}

/* The call made a sandbox (doc: its result, with "id") but nobody is there to
 * receive it: destroy it now rather than leave it running, unowned by anyone
 * who knows its id, until its timeout.  Returns -ECANCELED (err says what
 * was destroyed), or the destroy's error. */
static int destroy_made(struct an_api_call *call, const struct an_api_op *op, const char *doc, size_t dlen,
                        an_error_t *err) {
  yajl_val res = NULL, in = NULL;
  int r = an_json_parse(doc, dlen, "result", &res, err);
  const char *id = r >= 0 ? an_json_member_str(res, "id") : NULL;
  if (r >= 0 && !id) r = an_error_set(err, EPROTO, "%s: result without \"id\"", op->name);
  char input[160];
  if (r >= 0 && id) {
    snprintf(input, sizeof input, "{\"sandbox\":\"%.64s\",\"grace_ms\":0}", id);
    r = an_json_parse(input, strlen(input), "input", &in, err);
  }
  const struct an_api_op *destroy = an_api_op_find("destroy");
  yajl_gen g = r >= 0 ? yajl_gen_alloc(NULL) : NULL;
  if (r >= 0 && (!destroy || !g)) r = an_error_set(err, ENOMEM, "%s: destroy", op->name);
  /* the caller's view (serve: a token's sandboxes) has not taken the new id in yet */
  struct an_api_ctx own_ctx = *call->ctx;
  own_ctx.may_use = NULL;
  struct an_api_call own = *call;
  own.ctx = &own_ctx;
  if (r >= 0) r = destroy->handler(&own, in, g, err);
  if (r >= 0)
    r = an_error_set(err, ECANCELED, "%s: cancelled by the caller after sandbox %s was made; it is destroyed",
                     op->name, id);
  else
    an_error_prefix(err, "%s: cancelled by the caller after sandbox %s was made; destroying it",
                    op->name, id ? id : "?");
  call->keep_alive = false;   /* nothing left to own */
  if (g) yajl_gen_free(g);
  yajl_tree_free(in);
  yajl_tree_free(res);
  return r;
}

static int worker_run(const struct an_api_ctx *ctx, const struct an_api_op *op, const char *input,
                      size_t input_len) {
  struct an_api_ctx wctx = *ctx;
  struct worker_warnings warns = {0};
  wctx.warn = worker_warn;
  wctx.warn_data = &warns;
  struct an_api_call call = {.ctx = &wctx, .cancel_fd = FD_CANCEL, .stream_fd = FD_RESULT};
  an_error_t err = NULL;
  yajl_val in = NULL;
  yajl_gen g = NULL;
  int r;
  if (!input || !input_len) input = "{}", input_len = 2;
  if ((r = an_json_parse(input, input_len, "input", &in, &err)) >= 0 &&
      (r = an_api_validate(op, in, &err)) >= 0) {
    if (!(g = yajl_gen_alloc(NULL))) r = an_error_set(&err, ENOMEM, "%s: result", op->name);
    else {
      yajl_gen_config(g, yajl_gen_validate_utf8, 1);
      r = op->handler(&call, in, g, &err);
    }
  }
  const unsigned char *doc = NULL;
  size_t dlen = 0;
  if (r >= 0 && yajl_gen_get_buf(g, &doc, &dlen) != yajl_gen_status_ok)
    r = an_error_set(&err, EINVAL, "%s: result: not valid JSON (a string is not UTF-8?)", op->name);
  if (r >= 0 && (op->flags & AN_API_OP_CREATES) && cancel_pending())
    r = destroy_made(&call, op, (const char *) doc, dlen, &err);
  /* An owner of a sandbox must outlive the thread that forked it (serve's
   * connection threads end with their request): from here it ends when the
   * lifeline reads EOF, i.e. when the front end process is gone, however. */
  if (r >= 0 && call.keep_alive && ctx->lifeline_fd >= 0) prctl(PR_SET_PDEATHSIG, 0);
  if (warns.len) write_all(FD_RESULT, warns.text, warns.len);
  if (r >= 0) {
    if (call.keep_alive && ctx->lifeline_fd >= 0) write_all(FD_RESULT, "KEEP\n", 5);
    write_all(FD_RESULT, "OK\n", 3);
    write_all(FD_RESULT, doc, dlen);
  } else {
    char head[32];
    int n = snprintf(head, sizeof head, "ERR %d\n", err ? err->errnum : -r);
    write_all(FD_RESULT, head, (size_t) n);
    if (err && err->msg) write_all(FD_RESULT, err->msg, strlen(err->msg));
  }
  close(FD_RESULT);
  if (r >= 0 && call.keep_alive && ctx->lifeline_fd >= 0) {
    /* the owner of the sandbox just made: live until the front end goes */
    char b;
    for (;;) {
      ssize_t n = read(FD_LIFELINE, &b, 1);
      if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
  }
  return 0;
}

/* In the child: a clean process, then the call.  Never returns. */
static void worker_main(const struct an_api_ctx *ctx, const struct an_api_op *op, const char *input,
                        size_t input_len, pid_t parent, int result_w, int cancel_r) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  for (int s = 1; s < NSIG; s++)
    if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  int hr = fcntl(result_w, F_DUPFD, 1000), hc = fcntl(cancel_r, F_DUPFD, 1000);
  int hl = ctx->lifeline_fd >= 0 ? fcntl(ctx->lifeline_fd, F_DUPFD, 1000) : -1;
  if (devnull < 0 || hr < 0 || hc < 0 || (ctx->lifeline_fd >= 0 && hl < 0)) _exit(127);
  if (dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(hr, FD_RESULT) < 0 ||
      dup2(hc, FD_CANCEL) < 0 || (hl >= 0 && dup2(hl, FD_LIFELINE) < 0))
    _exit(127);
  /* only the worker's own fds stay: no other call's pipes, no client socket */
  if (close_range(hl >= 0 ? FD_LIFELINE + 1 : FD_CANCEL + 1, ~0U, 0) < 0) _exit(127);
  worker_run(ctx, op, input, input_len);
  _exit(0);
}

/* ---- the ASan fork hazard ----------------------------------------------------------------- */

/* GCC 12's ASan allocator has no fork handlers: a worker forked while
 * another thread of a multi-threaded front end (serve's connection threads,
 * one exiting drains its allocator cache) held one of the allocator's locks
 * inherits it held for ever, and hangs at its first malloc or free that
 * needs it.  In ASan builds the child therefore first allocates and frees
 * blocks of every size class, enough to empty and overflow its cache (each
 * class's refill and drain takes the class's lock; the frees fill the
 * quarantine, whose recycling takes its lock), then says so on a pipe; a
 * child that does not within ASAN_PROBE_WAIT_MS is killed and forked again.
 * Production builds (glibc malloc, fork-safe through its atfork handlers)
 * do none of this. */
#if defined(__SANITIZE_ADDRESS__)
#define ASAN_FORK_PROBE 1
#else
#define ASAN_FORK_PROBE 0
#endif
#define ASAN_PROBE_WAIT_MS 5000

static void asan_fork_probe(int ready_fd) {
  /* the primary allocator's classes cache at most 2 * min(128, 64 KiB / size) blocks per
   * thread; one block over 128 KiB tests the secondary allocator's lock (about 10 MiB in all) */
  void *p[320];
  for (size_t sz = 16; sz <= (256u << 10); sz = sz < 512 ? sz + 16 : sz + sz / 4) {
    size_t k = 2 * ((64u << 10) / sz) + 4;
    if (k > 320) k = 320;
    for (size_t i = 0; i < k; i++) p[i] = malloc(sz);
    for (size_t i = 0; i < k; i++) free(p[i]);
  }
  if (write(ready_fd, "R", 1) < 0) _exit(127);
  close(ready_fd);
}

/* ---- the front end's side ----------------------------------------------------------------- */

int an_api_job_start(const struct an_api_ctx *ctx, const struct an_api_op *op, const char *input,
                     size_t input_len, struct an_api_job **out, an_error_t *err) {
  if (!ctx || !op) return an_error_set(err, EINVAL, "api call: no context or operation");
  struct an_api_job *job = calloc(1, sizeof *job);
  if (!job) return an_error_set(err, ENOMEM, "%s: job", op->name);
  int rp[2], cp[2];
  if (pipe2(rp, O_CLOEXEC) < 0) {
    free(job);
    return an_error_set(err, errno, "%s: pipe", op->name);
  }
  if (pipe2(cp, O_CLOEXEC) < 0) {
    int e = errno;
    close(rp[0]), close(rp[1]), free(job);
    return an_error_set(err, e, "%s: pipe", op->name);
  }
  pid_t parent = getpid();
  pid_t pid;
  for (int attempt = 1;; attempt++) {
    int ready[2] = {-1, -1};
    if (ASAN_FORK_PROBE && pipe2(ready, O_CLOEXEC) < 0) {
      int e = errno;
      close(rp[0]), close(rp[1]), close(cp[0]), close(cp[1]), free(job);
      return an_error_set(err, e, "%s: pipe", op->name);
    }
    pid = fork();
    if (pid < 0) {
      int e = errno;
      close(rp[0]), close(rp[1]), close(cp[0]), close(cp[1]), free(job);
      if (ready[0] >= 0) close(ready[0]), close(ready[1]);
      return an_error_set(err, e, "%s: fork the worker", op->name);
    }
    if (pid == 0) {
      if (ASAN_FORK_PROBE) asan_fork_probe(ready[1]);
      worker_main(ctx, op, input, input_len, parent, rp[1], cp[0]);
    }
    if (!ASAN_FORK_PROBE) break;
    close(ready[1]);
    struct pollfd p = {.fd = ready[0], .events = POLLIN};
    char b = 0;
    bool ok = poll(&p, 1, ASAN_PROBE_WAIT_MS) == 1 && read(ready[0], &b, 1) == 1;
    close(ready[0]);
    if (ok) break;
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
    fprintf(stderr, "agentnest: %s: the worker (pid %d) hung in its allocator after fork (ASan build); "
            "forking again\n", op->name, (int) pid);
    if (attempt == 5) {
      close(rp[0]), close(rp[1]), close(cp[0]), close(cp[1]), free(job);
      return an_error_set(err, EAGAIN, "%s: the worker hung in its allocator after fork, 5 times", op->name);
    }
  }
  close(rp[1]);
  close(cp[0]);
  fcntl(rp[0], F_SETFL, O_NONBLOCK);
  fcntl(cp[1], F_SETFL, O_NONBLOCK);
  job->ctx = ctx;
  job->pid = pid;
  job->result_fd = rp[0];
  job->cancel_fd = cp[1];
  job->holds_sandbox = (op->flags & AN_API_OP_CREATES) || !strcmp(op->name, "run_code");
  job->start_ms = mono_ms();
  *out = job;
  return 0;
}

int an_api_job_fd(const struct an_api_job *job) { return job->result_fd; }

uint64_t an_api_job_elapsed_ms(const struct an_api_job *job) { return mono_ms() - job->start_ms; }

int an_api_job_pump(struct an_api_job *job, an_error_t *err) {
  while (!job->done) {
    if (job->cap - job->len < 65536) {
      size_t nc = job->cap ? job->cap * 2 : 65536 * 2;
      if (nc > RESULT_MAX) return an_error_set(err, EFBIG, "api result: over 1 GiB");
      char *nb = realloc(job->buf, nc + 1);
      if (!nb) return an_error_set(err, ENOMEM, "api result");
      job->buf = nb;
      job->cap = nc;
    }
    ssize_t n = read(job->result_fd, job->buf + job->len, job->cap - job->len);
    if (n > 0) { job->len += (size_t) n; continue; }
    if (n == 0) { job->done = true; break; }
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return 0;
    return an_error_set(err, errno, "api result: read");
  }
  return 1;
}

/* The length of the output frame at p (n bytes there), 0 when it is not
 * complete yet, or -1 when p is not a frame. */
static ssize_t frame_at(const char *p, size_t n, int *stream, size_t *dlen) {
  if (!n || p[0] != 'D') return -1;
  if (n < 11) return 0;
  if ((p[1] != '1' && p[1] != '2') || p[10] != '\n') return -1;
  size_t l = 0;
  for (int i = 2; i < 10; i++) {
    char c = p[i];
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0) return -1;
    l = l * 16 + (size_t) v;
  }
  if (n < 11 + l) return 0;
  *stream = p[1] - '0';
  *dlen = l;
  return (ssize_t) (11 + l);
}

size_t an_api_job_take_output(struct an_api_job *job,
                              void (*fn)(void *data, int stream, const char *buf, size_t len), void *data) {
  size_t k = 0;
  for (;;) {
    int st = 0;
    size_t dl = 0;
    ssize_t f = frame_at(job->buf + job->off, job->len - job->off, &st, &dl);
    if (f <= 0) return k;
    if (fn) fn(data, st, job->buf + job->off + 11, dl);
    job->off += (size_t) f;
    k++;
  }
}

void an_api_job_cancel(struct an_api_job *job, uint64_t grace_ms) {
  if (!job || job->cancelled) return;
  job->cancelled = true;
  write_all(job->cancel_fd, "x", 1);
  if (job->holds_sandbox && grace_ms < HOLD_GRACE_MS) grace_ms = HOLD_GRACE_MS;
  job->kill_at_ms = mono_ms() + grace_ms;
}

void an_api_job_tick(struct an_api_job *job) {
  if (job && job->cancelled && !job->reaped && mono_ms() >= job->kill_at_ms) kill(job->pid, SIGKILL);
}

static int reap(struct an_api_job *job, int *status) {
  while (waitpid(job->pid, status, 0) < 0) {
    if (errno != EINTR) return -errno;
  }
  job->reaped = true;
  return 0;
}

int an_api_job_finish(struct an_api_job *job, char **output, size_t *len, pid_t *keeper_pid,
                      an_error_t *err) {
  if (keeper_pid) *keeper_pid = 0;
  int r;
  while ((r = an_api_job_pump(job, err)) == 0) {
    struct pollfd p = {.fd = job->result_fd, .events = POLLIN};
    poll(&p, 1, job->cancelled ? 100 : 1000);
    an_api_job_tick(job);
  }
  if (r < 0) return r;
  if (!job->buf && !(job->buf = calloc(1, 1))) return an_error_set(err, ENOMEM, "api result");
  job->buf[job->len] = 0;
  an_api_job_take_output(job, NULL, NULL);   /* frames nobody took */
  /* warnings, KEEP, then OK or ERR */
  char *p = job->buf + job->off;
  bool keep = false;
  while (!strncmp(p, "W ", 2) || !strncmp(p, "KEEP\n", 5)) {
    char *nl = strchr(p, '\n');
    if (!nl) break;
    if (*p == 'W') {
      *nl = 0;
      if (job->ctx->warn) job->ctx->warn(job->ctx->warn_data, p + 2);
    } else keep = true;
    p = nl + 1;
  }
  int status = 0;
  if (!keep) reap(job, &status);
  if (!strncmp(p, "OK\n", 3)) {
    if (keep) {
      if (keeper_pid) *keeper_pid = job->pid;
      job->reaped = true;     /* the caller reaps the keeper (waitpid) */
    }
    size_t n = job->len - (size_t) (p + 3 - job->buf);
    char *doc = malloc(n + 1);
    if (!doc) return an_error_set(err, ENOMEM, "api result");
    memcpy(doc, p + 3, n);
    doc[n] = 0;
    *output = doc;
    if (len) *len = n;
    return 0;
  }
  if (!strncmp(p, "ERR ", 4)) {
    int e = atoi(p + 4);
    char *nl = strchr(p, '\n');
    if (job->cancelled) return an_error_set(err, ECANCELED, "cancelled: %s", nl ? nl + 1 : "");
    an_error_set(err, 0, "%s", nl ? nl + 1 : "failed");
    if (*err) (*err)->errnum = e > 0 ? e : EIO;
    return -(e > 0 ? e : EIO);
  }
  if (job->cancelled) return an_error_set(err, ECANCELED, "the call was cancelled");
  if (WIFSIGNALED(status))
    return an_error_set(err, EPROTO, "the worker was killed by signal %d (%s) before its result",
                        WTERMSIG(status), strsignal(WTERMSIG(status)));
  return an_error_set(err, EPROTO, "the worker exited with status %d without a result",
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* A job freed before its end (serve's stream_free: libmicrohttpd closed the
 * connection of a client that hung up mid-stream) is cancelled as a hang-up
 * cancels it, and its output read and dropped until the worker ends or its
 * grace passes (an_api_job_cancel: a job holding a sandbox gets 30 s).  A
 * SIGKILL at once left a one-shot run_code's sandbox "dead", owned by no one
 * and removed only by prune (redteam). */
static void drain(struct an_api_job *job) {
  an_api_job_cancel(job, 0);
  char scratch[65536];
  while (!job->done) {
    int st;
    pid_t w = waitpid(job->pid, &st, WNOHANG);
    if (w == job->pid || (w < 0 && errno != EINTR)) {
      job->reaped = true;
      return;
    }
    ssize_t n = read(job->result_fd, scratch, sizeof scratch);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    if (n == 0) break;
    struct pollfd p = {.fd = job->result_fd, .events = POLLIN};
    poll(&p, 1, 100);
    an_api_job_tick(job);
  }
  /* its result is in (dropped): what is left of the worker is its exit, or a
   * keeper of a sandbox nobody will know of (its monitor ends it with it) */
  job->done = true;
  kill(job->pid, SIGKILL);
}

void an_api_job_free(struct an_api_job *job) {
  if (!job) return;
  if (!job->reaped && !job->done) drain(job);
  if (!job->reaped) {
    int st;
    reap(job, &st);
  }
  close(job->result_fd);
  close(job->cancel_fd);
  free(job->buf);
  free(job);
}

int an_api_call_sync(const struct an_api_ctx *ctx, const struct an_api_op *op, const char *input,
                     size_t input_len, int cancel_fd, short cancel_events, char **output, size_t *len,
                     an_error_t *err) {
  struct an_api_job *job = NULL;
  int r = an_api_job_start(ctx, op, input, input_len, &job, err);
  if (r < 0) return r;
  while ((r = an_api_job_pump(job, err)) == 0) {
    struct pollfd p[2] = {{.fd = job->result_fd, .events = POLLIN}, {.fd = cancel_fd, .events = cancel_events}};
    int n = poll(p, cancel_fd >= 0 ? 2 : 1, 500);
    if (n > 0 && cancel_fd >= 0 && (p[1].revents & (cancel_events | POLLHUP | POLLERR))) an_api_job_cancel(job, 2000);
    an_api_job_tick(job);
  }
  if (r >= 0) r = an_api_job_finish(job, output, len, NULL, err);
  an_api_job_free(job);
  return r;
}
