/* sandbox/batch.c — an_batch_run, the scheduler of `agentnest batch`
 * (agentnest/batch.h): validate the JOBS file in one streamed pass, then
 * stream it again and keep up to -j jobs (and max_memory of their memory
 * limits) running, each in a forked process (batch_exec.c) that reports its
 * record over a pipe; append each record with one write(2) and fdatasync
 * it (after starting the next jobs, before waiting);
 * stop on a signal (signalfd of the caller) or fail-fast.  A job process
 * that ends without a record (killed) has the sandboxes it owned torn down
 * (batch_reap.c) before its pid is reaped (so the pid cannot have been
 * reused).  What does NOT live here: parsing a job (batch_job.c), running
 * one (batch_exec.c), reading results and JUnit (batch_results.c). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sandbox/batch_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/fdcopy.h"
#include "util/json_gen.h"
#include "util/json_tree.h"
#include "util/units.h"

#define RECORD_MAX ((size_t) 64 << 20)   /* a record from a job process, at most */

struct slot {
  bool used;
  pid_t pid;
  int rfd;
  char *buf;
  size_t len, cap;
  bool overflow;
  uint64_t mem;
  struct an_batch_job job;
};

struct batch {
  const struct an_batch_config *cfg;
  struct an_batch_summary *sum;
  const char *root;
  FILE *jobs;
  int res_fd, journal_fd;
  const char *res_name;
  struct an_batch_idset seen, done, attempts;
  struct slot *slots;
  unsigned nslots, running;
  uint64_t mem_used, max_mem;
  uint64_t t0, next_tick;
  bool stopping, killing;
  bool sync_pending;         /* a record was written, not yet fdatasync'ed */
  /* the stream of pass 2 */
  char *line;
  size_t cap;
  uint64_t lineno, ordinal;
  bool eof;
  bool have_pending;
  struct an_batch_job pending;
  uint64_t pending_mem;
};

static void emit(struct batch *b, struct an_batch_event *ev) {
  b->sum->counts.elapsed_ms = an_mono_ms() - b->t0;
  b->sum->counts.running = b->running;
  ev->counts = &b->sum->counts;
  if (b->cfg->on_event) b->cfg->on_event(b->cfg->event_arg, ev);
}

static bool blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return false;
  return true;
}

static bool in_shard(const struct an_batch_config *c, uint64_t ordinal) {
  return !c->shard_n || (ordinal - 1) % c->shard_n == c->shard_k - 1;
}

/* ---- files ------------------------------------------------------------------------------- */

static int tmpfile_fd(const struct an_batch_config *c, an_error_t *err) {
  const char *dir = c->tmp_dir && c->tmp_dir[0] == '/' ? c->tmp_dir : "/tmp";
  int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  return fd < 0 ? an_error_set(err, errno, "temporary file in %s", dir) : fd;
}

static int open_jobs(struct batch *b, an_error_t *err) {
  const char *p = b->cfg->jobs_path;
  int fd;
  if (!strcmp(p, "-")) {
    /* a pipe is read once: spool it so that it can be streamed twice */
    if ((fd = tmpfile_fd(b->cfg, err)) < 0) return fd;
    int r = an_copy_fd_capped(0, fd, UINT64_MAX, "JOBS (standard input)", NULL, NULL, err);
    if (r >= 0 && lseek(fd, 0, SEEK_SET) < 0) r = an_error_set(err, errno, "JOBS (standard input): seek");
    if (r < 0) {
      close(fd);
      return r;
    }
  } else if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0) {
    return an_error_set(err, errno, "JOBS %s", p);
  }
  if (!(b->jobs = fdopen(fd, "r"))) {
    close(fd);
    return an_error_set(err, errno, "JOBS %s", p);
  }
  return 0;
}

static int open_results(struct batch *b, an_error_t *err) {
  const struct an_batch_config *c = b->cfg;
  if (!c->results_path) {
    b->res_name = "(records)";
    return (b->res_fd = tmpfile_fd(c, err)) < 0 ? b->res_fd : 0;
  }
  b->res_name = c->results_path;
  b->res_fd = open(c->results_path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | (c->resume ? 0 : O_TRUNC), 0644);
  if (b->res_fd < 0) return an_error_set(err, errno, "results %s", c->results_path);
  cleanup_free char *jp = NULL;
  if (asprintf(&jp, "%s.journal", c->results_path) < 0) return an_error_set(err, ENOMEM, "journal");
  int r;
  if (c->resume) {
    if ((r = an_batch_results_load(b->res_fd, c->results_path, &b->done, err)) < 0) return r;
    if ((r = an_batch_journal_load(jp, &b->done, &b->attempts, err)) < 0) return r;
    an_batch_reap_previous(b->root, jp);
  }
  b->journal_fd = open(jp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (c->resume ? 0 : O_TRUNC), 0644);
  if (b->journal_fd < 0) return an_error_set(err, errno, "journal %s", jp);
  return 0;
}

/* ---- pass 1: validate --------------------------------------------------------------------- */

static int validate(struct batch *b, an_error_t *err) {
  const struct an_batch_config *c = b->cfg;
  cleanup_free char *first = NULL;
  uint64_t bad = 0, lineno = 0, ordinal = 0;
  size_t len;
  bool too_long, eol;
  int r;
  while ((r = an_batch_read_line(b->jobs, &b->line, &b->cap, &len, AN_BATCH_LINE_MAX, &too_long, &eol)) > 0) {
    lineno++;
    if (!too_long && blank(b->line, len)) continue;
    ordinal++;
    struct an_batch_job job;
    an_error_t e = NULL;
    int p = too_long ? (memset(&job, 0, sizeof job), an_json_error(&e, "", "line longer than 16 MiB"))
                     : an_batch_job_parse(b->line, len, lineno, c->defaults, &job, &e);
    if (p == -ENOMEM) {
      an_batch_job_clear(&job);
      *err = e;
      return p;
    }
    uint32_t prev = 0;
    bool dup = job.id[0] && an_batch_idset_get(&b->seen, job.id, &prev);
    if (p >= 0 && dup) {
      an_json_error(&e, "", "member \"id\": \"%s\" repeats the id of line %u", job.id, prev);
      p = -EINVAL;
    } else if (job.id[0] && !dup && an_batch_idset_put(&b->seen, job.id, (uint32_t) lineno) < 0) {
      an_batch_job_clear(&job);
      an_error_free(&e);
      return an_error_set(err, ENOMEM, "JOBS");
    }
    if (in_shard(c, ordinal)) {
      b->sum->counts.total++;
      const char *rid = job.id;
      char lid[32];
      if (p < 0 && (!job.id[0] || dup)) {   /* the record's id, as next_job gives it */
        snprintf(lid, sizeof lid, "line-%llu", (unsigned long long) lineno);
        rid = lid;
      }
      if (an_batch_idset_get(&b->done, rid, NULL)) b->sum->counts.resumed++;
    }
    if (p < 0) {
      bad++;
      struct an_batch_event ev = {.kind = AN_BATCH_EV_INVALID, .line = lineno, .reason = e->msg,
                                  .id = job.id[0] ? job.id : NULL};
      emit(b, &ev);
      if (!first && asprintf(&first, "line %llu: %s", (unsigned long long) lineno, e->msg) < 0) first = NULL;
    }
    an_error_free(&e);
    an_batch_job_clear(&job);
  }
  if (r < 0) return an_error_set(err, -r, "JOBS %s: read", c->jobs_path);
  b->sum->counts.done = b->sum->counts.resumed;
  if (bad && !c->lenient)
    return an_json_error(err, "", "JOBS %s %s%s", c->jobs_path, first ? first : "malformed",
                        bad > 1 ? " (and more malformed lines: see above)" : "");
  return 0;
}

/* ---- records ------------------------------------------------------------------------------ */

static int append_record(struct batch *b, const char *line, size_t len, an_error_t *err) {
  int r = an_write_all(b->res_fd, line, len, b->res_name, err);
  if (r < 0) return r;
  /* made durable by sync_results(), after the next jobs are started and
   * before the batch waits for anything: a crash in between loses at most
   * this record (its job then runs again), never doubles it */
  b->sync_pending = b->cfg->results_path != NULL;
  if (b->cfg->echo_fd >= 0) {
    an_error_t e = NULL;
    an_write_all(b->cfg->echo_fd, line, len, "records", &e);   /* a closed stdout is no reason to stop */
    an_error_free(&e);
  }
  return 0;
}

static int sync_results(struct batch *b, an_error_t *err) {
  if (!b->sync_pending) return 0;
  b->sync_pending = false;
  if (fdatasync(b->res_fd) < 0) return an_error_set(err, errno, "results %s: fdatasync", b->res_name);
  return 0;
}

/* Count a record appended, tell the caller, apply fail-fast. */
static void recorded(struct batch *b, const char *id, uint64_t line, unsigned attempt,
                     enum an_batch_result res, const char *reason, uint64_t ms) {
  b->sum->counts.done++;
  b->sum->counts.by_result[res]++;
  struct an_batch_event ev = {.kind = AN_BATCH_EV_FINISHED, .id = id, .line = line,
                              .attempt = attempt, .result = res, .reason = reason,
                              .duration_ms = ms};
  emit(b, &ev);
  if (res != AN_BATCH_PASSED && b->cfg->fail_fast && !b->stopping) {
    b->stopping = true;
    b->sum->fail_fast_stop = true;
    struct an_batch_event st = {.kind = AN_BATCH_EV_STOPPING};
    emit(b, &st);
  }
}

static int error_record(struct batch *b, const char *id, uint64_t line, unsigned attempt,
                        const char *reason, an_error_t *err) {
  char *rec = NULL;
  size_t len = 0;
  if (an_batch_error_record(id, line, attempt, reason, &rec, &len) < 0)
    return an_error_set(err, ENOMEM, "record of job %s", id);
  int r = append_record(b, rec, len, err);
  free(rec);
  if (r >= 0) recorded(b, id, line, attempt, AN_BATCH_ERROR, reason, 0);
  return r;
}

/* ---- pass 2: the next job to start -------------------------------------------------------- */

/* Fill b->pending with the next job of the shard still to run.  Lines that
 * become records at once (lenient errors, a memory limit above max_memory)
 * are recorded here.  Returns 1 pending, 0 end of file, -errno. */
static int next_job(struct batch *b, an_error_t *err) {
  const struct an_batch_config *c = b->cfg;
  size_t len;
  bool too_long, eol;
  int r;
  while ((r = an_batch_read_line(b->jobs, &b->line, &b->cap, &len, AN_BATCH_LINE_MAX, &too_long, &eol)) > 0) {
    b->lineno++;
    if (!too_long && blank(b->line, len)) continue;
    b->ordinal++;
    if (!in_shard(c, b->ordinal)) continue;
    struct an_batch_job job;
    an_error_t e = NULL;
    int p = too_long ? (memset(&job, 0, sizeof job), an_json_error(&e, "", "line longer than 16 MiB"))
                     : an_batch_job_parse(b->line, len, b->lineno, c->defaults, &job, &e);
    if (p == -ENOMEM) {
      an_batch_job_clear(&job);
      *err = e;
      return p;
    }
    uint32_t first = 0;
    bool dup = job.id[0] && an_batch_idset_get(&b->seen, job.id, &first) && first != b->lineno;
    if (p >= 0 && dup) {
      an_json_error(&e, "", "member \"id\": \"%s\" repeats the id of line %u", job.id, first);
      p = -EINVAL;
    }
    char rid[AN_BATCH_ID_MAX + 1];
    if (p < 0 && (!job.id[0] || dup)) snprintf(rid, sizeof rid, "line-%llu", (unsigned long long) b->lineno);
    else snprintf(rid, sizeof rid, "%s", job.id);
    if (an_batch_idset_get(&b->done, rid, NULL)) {   /* recorded by an earlier run */
      an_error_free(&e);
      an_batch_job_clear(&job);
      continue;
    }
    uint32_t prev = 0;
    an_batch_idset_get(&b->attempts, rid, &prev);
    job.attempt = prev + 1;
    if (p < 0) {
      cleanup_free char *reason = NULL;
      if (asprintf(&reason, "line %llu: %s", (unsigned long long) b->lineno, e->msg) < 0) reason = NULL;
      an_error_free(&e);
      an_batch_job_clear(&job);
      if ((r = error_record(b, rid, b->lineno, prev + 1, reason ? reason : "malformed line", err)) < 0) return r;
      continue;
    }
    uint64_t mem = an_sandbox_opts_memory(job.opts);
    if (mem > b->max_mem) {
      char a[32], m[32];
      cleanup_free char *reason = NULL;
      if (asprintf(&reason, "memory limit %s exceeds --max-memory %s", an_format_size(mem, a, sizeof a),
                   an_format_size(b->max_mem, m, sizeof m)) < 0)
        reason = NULL;
      r = error_record(b, job.id, job.line, job.attempt, reason ? reason : "memory limit", err);
      an_batch_job_clear(&job);
      if (r < 0) return r;
      continue;
    }
    b->pending = job;
    b->pending_mem = mem;
    b->have_pending = true;
    return 1;
  }
  if (r < 0) return an_error_set(err, -r, "JOBS %s: read", c->jobs_path);
  b->eof = true;
  return 0;
}

/* ---- job processes ------------------------------------------------------------------------ */

/* One journal line {"id","line","attempt","pid"}: where attempts are
 * counted.  Not synced: it survives the batch's death; a power loss may
 * only lower an attempt number. */
static int journal_start(int fd, const struct an_batch_job *job, pid_t pid) {
  cleanup_jgen struct an_jgen j;
  char *doc = NULL;
  size_t len = 0;
  if (an_jgen_init(&j, false) == 0) {
    an_jgen_map_open(&j);
    an_jgen_kv_str(&j, "id", job->id);
    an_jgen_kv_u64(&j, "line", job->line);
    an_jgen_kv_u64(&j, "attempt", job->attempt);
    an_jgen_kv_i64(&j, "pid", pid);
    an_jgen_map_close(&j);
  }
  int r = an_jgen_finish(&j, &doc, &len);
  if (r < 0) return r;
  doc[len] = '\n';   /* in place of an_jgen_finish's NUL: one write(2) of the line */
  an_error_t e = NULL;
  r = an_write_all(fd, doc, len + 1, "journal", &e);
  an_error_free(&e);
  free(doc);
  return r;
}

static _Noreturn void child_main(struct batch *b, pid_t parent, int wfd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);   /* the batch died before the line above */
  signal(SIGINT, SIG_IGN);            /* Ctrl-C reaches the process group: the batch decides */
  signal(SIGHUP, SIG_IGN);
  signal(SIGTERM, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  for (unsigned i = 0; i < b->nslots; i++)
    if (b->slots[i].used) close(b->slots[i].rfd);
  close(b->res_fd);
  if (b->cfg->signal_fd >= 0) close(b->cfg->signal_fd);
  close(fileno(b->jobs));
  /* The start is journaled by this process before it makes anything, so
   * every sandbox a job process may leave has its pid in the journal (the
   * batch could die between fork and a write of its own). */
  if (b->journal_fd >= 0) {
    if (journal_start(b->journal_fd, &b->pending, getpid()) < 0) _exit(1);
    close(b->journal_fd);
  }
  struct an_batch_exec_cfg x = {.store_root = b->root, .output_dir = b->cfg->output_dir,
                                .record_output_max = b->cfg->record_output_max,
                                .pool = b->cfg->pool};
  int r = an_batch_exec_job(&x, &b->pending, wfd);
  _exit(r < 0 ? 1 : 0);
}

static int start_job(struct batch *b, an_error_t *err) {
  struct slot *s = NULL;
  for (unsigned i = 0; i < b->nslots && !s; i++)
    if (!b->slots[i].used) s = &b->slots[i];
  if (!s) return an_error_set(err, EAGAIN, "batch: no free slot");
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return an_error_set(err, errno, "job %s: pipe", b->pending.id);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(p[0]);
    close(p[1]);
    return an_error_set(err, e, "job %s: fork", b->pending.id);
  }
  if (pid == 0) {
    close(p[0]);
    child_main(b, parent, p[1]);
  }
  close(p[1]);
  *s = (struct slot) {.used = true, .pid = pid, .rfd = p[0], .mem = b->pending_mem, .job = b->pending};
  memset(&b->pending, 0, sizeof b->pending);
  b->have_pending = false;
  b->running++;
  b->mem_used += s->mem;
  struct an_batch_event ev = {.kind = AN_BATCH_EV_STARTED, .id = s->job.id, .line = s->job.line,
                              .attempt = s->job.attempt};
  emit(b, &ev);
  return 0;
}

static int finish_job(struct batch *b, struct slot *s, an_error_t *err) {
  close(s->rfd);
  siginfo_t si = {0};
  while (waitid(P_PID, (id_t) s->pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  bool clean = si.si_code == CLD_EXITED && si.si_status == 0;
  yajl_val tree = NULL;
  struct an_batch_rec rec;
  an_error_t pe = NULL;
  bool have = !s->overflow && s->len && s->buf[s->len - 1] == '\n' &&
              an_batch_rec_parse(s->buf, s->len - 1, &tree, &rec, &pe) == 0;
  an_error_free(&pe);
  if (!clean) an_batch_reap_owned(b->root, s->pid);
  int st;
  while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR) {
  }
  b->mem_used -= s->mem;   /* it no longer runs (the FINISHED event counts so) */
  b->running--;
  int r = 0;
  if (have) {
    if ((r = append_record(b, s->buf, s->len, err)) >= 0)
      recorded(b, s->job.id, s->job.line, s->job.attempt, rec.result, rec.reason, rec.duration_ms);
  } else if (!b->killing) {
    char reason[160];
    if (si.si_code == CLD_EXITED)
      snprintf(reason, sizeof reason, "the job process exited with status %d without a record%s",
               si.si_status, s->overflow ? " (record larger than 64 MiB)" : "");
    else snprintf(reason, sizeof reason, "the job process was killed by signal %d", si.si_status);
    r = error_record(b, s->job.id, s->job.line, s->job.attempt, reason, err);
  }
  /* else: interrupted; no record, so --resume runs it again */
  yajl_tree_free(tree);
  free(s->buf);
  an_batch_job_clear(&s->job);
  memset(s, 0, sizeof *s);
  return r;
}

static int read_child(struct batch *b, struct slot *s, an_error_t *err) {
  char tmp[65536];
  ssize_t n = read(s->rfd, tmp, sizeof tmp);
  if (n < 0) return errno == EINTR || errno == EAGAIN ? 0 : finish_job(b, s, err);
  if (n == 0) return finish_job(b, s, err);
  if (s->overflow || s->len + (size_t) n > RECORD_MAX) {
    s->overflow = true;
    return 0;
  }
  if (s->len + (size_t) n + 1 > s->cap) {
    size_t nc = (s->len + (size_t) n + 1) * 2;
    char *nb = realloc(s->buf, nc);
    if (!nb) {
      s->overflow = true;
      return 0;
    }
    s->buf = nb;
    s->cap = nc;
  }
  memcpy(s->buf + s->len, tmp, (size_t) n);
  s->len += (size_t) n;
  return 0;
}

static void kill_all(struct batch *b) {
  b->killing = true;
  for (unsigned i = 0; i < b->nslots; i++)
    if (b->slots[i].used) kill(b->slots[i].pid, SIGKILL);
}

static void on_signal(struct batch *b) {
  struct signalfd_siginfo si;
  ssize_t n = read(b->cfg->signal_fd, &si, sizeof si);
  if (n != (ssize_t) sizeof si) return;
  bool second = b->stopping;
  if (!b->sum->signal) b->sum->signal = (int) si.ssi_signo;
  b->stopping = true;
  if (!second) {
    struct an_batch_event ev = {.kind = AN_BATCH_EV_STOPPING, .signal = (int) si.ssi_signo};
    emit(b, &ev);
  }
  if (!b->cfg->drain || second) kill_all(b);
}

static int run_loop(struct batch *b, an_error_t *err) {
  const struct an_batch_config *c = b->cfg;
  uint64_t period = c->progress_ms ? c->progress_ms : 1000;
  b->next_tick = an_mono_ms() + period;
  struct pollfd *pfd = calloc(b->nslots + 1, sizeof *pfd);
  struct slot **who = calloc(b->nslots + 1, sizeof *who);
  int r = 0;
  if (!pfd || !who) r = an_error_set(err, ENOMEM, "batch");
  while (r >= 0) {
    while (!b->stopping && b->running < b->nslots) {
      if (!b->have_pending && (b->eof || (r = next_job(b, err)) <= 0)) break;
      if (b->running && b->mem_used + b->pending_mem > b->max_mem) break;   /* admission */
      if ((r = start_job(b, err)) < 0) break;
    }
    if (r < 0) break;
    r = 0;
    if ((r = sync_results(b, err)) < 0) break;
    if (!b->running && (b->stopping || (b->eof && !b->have_pending))) break;
    nfds_t n = 0;
    if (c->signal_fd >= 0) {
      pfd[n] = (struct pollfd) {.fd = c->signal_fd, .events = POLLIN};
      who[n++] = NULL;
    }
    for (unsigned i = 0; i < b->nslots; i++)
      if (b->slots[i].used) {
        pfd[n] = (struct pollfd) {.fd = b->slots[i].rfd, .events = POLLIN};
        who[n++] = &b->slots[i];
      }
    uint64_t now = an_mono_ms();
    int timeout = now >= b->next_tick ? 0 : (int) (b->next_tick - now);
    int k = poll(pfd, n, timeout);
    if (k < 0 && errno != EINTR) {
      r = an_error_set(err, errno, "batch: poll");
      break;
    }
    for (nfds_t i = 0; k > 0 && i < n && r >= 0; i++) {
      if (!pfd[i].revents) continue;
      if (!who[i]) on_signal(b);
      else if (who[i]->used) r = read_child(b, who[i], err);
    }
    if ((now = an_mono_ms()) >= b->next_tick) {
      b->next_tick = now + period;
      struct an_batch_event ev = {.kind = AN_BATCH_EV_TICK};
      emit(b, &ev);
    }
  }
  if (r < 0 && b->running) {
    /* the batch itself failed: end the jobs, leave nothing behind */
    kill_all(b);
    for (unsigned i = 0; i < b->nslots; i++)
      if (b->slots[i].used) {
        an_error_t e = NULL;
        while (read_child(b, &b->slots[i], &e) == 0 && b->slots[i].used) {
        }
        an_error_free(&e);
      }
  }
  an_error_t e = NULL;
  int sr = sync_results(b, r < 0 ? &e : err);
  an_error_free(&e);
  free(pfd);
  free(who);
  return r < 0 ? r : sr;
}

/* ---- the run ------------------------------------------------------------------------------ */

static int check_cfg(const struct an_batch_config *c, an_error_t *err) {
  if (!c || !c->jobs_path) return an_error_set(err, EINVAL, "batch: no JOBS file");
  if (c->shard_n && (!c->shard_k || c->shard_k > c->shard_n))
    return an_error_set(err, EINVAL, "batch: shard %u/%u: K must be 1..N", c->shard_k, c->shard_n);
  if (!c->shard_n && c->shard_k) return an_error_set(err, EINVAL, "batch: shard %u/0: N must be >= 1", c->shard_k);
  if (c->resume && !c->results_path) return an_error_set(err, EINVAL, "batch: resume needs a results file");
  if (c->jobs > 4096) return an_error_set(err, EINVAL, "batch: %u jobs at once: at most 4096", c->jobs);
  if (c->record_output_max > ((size_t) 4 << 20))
    return an_error_set(err, EINVAL, "batch: record output %zu bytes: at most 4 MiB", c->record_output_max);
  return 0;
}

int an_batch_run(const struct an_batch_config *cfg, struct an_batch_summary *sum, an_error_t *err) {
  if (!sum) return an_error_set(err, EINVAL, "batch: no summary");
  memset(sum, 0, sizeof *sum);
  int r = check_cfg(cfg, err);
  if (r < 0) return r;
  struct batch b = {.cfg = cfg, .sum = sum, .root = an_sb_root_or_default(cfg->store_root),
                    .res_fd = -1, .journal_fd = -1, .t0 = an_mono_ms()};
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  b.nslots = cfg->jobs ? cfg->jobs : cpus > 0 ? (unsigned) cpus : 1;
  b.max_mem = cfg->max_memory;
  if (!b.max_mem) {
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    b.max_mem = pages > 0 && psz > 0 ? (uint64_t) pages * (uint64_t) psz : UINT64_MAX;
  }
  if (!(b.slots = calloc(b.nslots, sizeof *b.slots))) return an_error_set(err, ENOMEM, "batch");
  if ((r = open_jobs(&b, err)) < 0) goto out;
  /* a malformed JOBS file leaves an earlier results file (and its journal)
   * as it was: they are truncated only once the file is valid; --resume
   * loads them first, since validation counts the jobs already done */
  if (cfg->resume && (r = open_results(&b, err)) < 0) goto out;
  if ((r = validate(&b, err)) < 0) goto out;
  if (!cfg->resume && (r = open_results(&b, err)) < 0) goto out;
  if (cfg->output_dir && mkdir(cfg->output_dir, 0755) < 0 && errno != EEXIST) {
    r = an_error_set(err, errno, "output directory %s", cfg->output_dir);
    goto out;
  }
  rewind(b.jobs);
  if ((r = run_loop(&b, err)) < 0) goto out;
  /* the summary and the report count every record of the file (with
   * resume, earlier runs' too) */
  uint64_t total = sum->counts.total;
  if ((r = an_batch_results_summarize(b.res_fd, b.res_name, sum, err)) < 0) goto out;
  sum->not_run = total > sum->counts.done ? total - sum->counts.done : 0;
  if (cfg->junit_path) {
    char suite[64] = "agentnest batch";
    if (cfg->shard_n) snprintf(suite, sizeof suite, "agentnest batch shard %u/%u", cfg->shard_k, cfg->shard_n);
    const char *base = strrchr(cfg->jobs_path, '/');
    base = !strcmp(cfg->jobs_path, "-") ? "stdin" : base ? base + 1 : cfg->jobs_path;
    r = an_batch_junit_write(b.res_fd, b.res_name, base, cfg->junit_path, suite, err);
  }
out:
  sum->counts.running = 0;
  sum->wall_ms = an_mono_ms() - b.t0;
  if (b.have_pending) an_batch_job_clear(&b.pending);
  free(b.slots);
  free(b.line);
  if (b.jobs) fclose(b.jobs);
  if (b.res_fd >= 0) close(b.res_fd);
  if (b.journal_fd >= 0) close(b.journal_fd);
  an_batch_idset_free(&b.seen);
  an_batch_idset_free(&b.done);
  an_batch_idset_free(&b.attempts);
  return r < 0 ? r : 0;
}
