/* agentnest/batch.h — many untrusted jobs from a JSON Lines file, run in
 * parallel sandboxes, with a durable results file (JSON Lines), JUnit XML,
 * resume after a crash and deterministic sharding.  agentnest-batch(1).
 *
 * JOBS.  One JSON object per line (RFC 8259 text; JSON Lines); blank lines
 * are ignored.  Members (any other member is an error, so typos fail):
 *   "id"      required, unique in the file, 1-128 of [A-Za-z0-9._-], not
 *             "." or ".." (it names a test case and a directory)
 *   exactly one of
 *     "cmd"    argv, an array of strings (no shell)
 *     "shell"  a script, run as `sh -c SCRIPT`
 *     "python" Python code, run as `python3 -c CODE`
 *     "file"   a host file (relative to the current directory) copied into
 *              /workspace and run as `python3 BASENAME` (.py) or `sh BASENAME`
 *   "image", "profile"                    as --image / --profile
 *   "memory", "cpus", "pids", "tmp_size", "max_output", "max_read", "workdir",
 *   "network", "seccomp_profile"          as the create option of that name
 *                                         (string, or number: its decimal text)
 *   "timeout"  the job's command timeout (duration; the sandbox lifetime is
 *             raised to hold it)
 *   "env"     object of string values {"K":"V"}
 *   "secrets" array of names: values from the caller's environment (never
 *             written anywhere; redacted from the output)
 *   "put"     array of "LOCAL[:DEST]" (as run --put)
 *   "get"     array of globs (artifacts.h): listed with size and sha256, and
 *             copied to OUTPUT_DIR/ID/artifacts/ when an output dir is set
 * The job's options are the batch defaults (cfg->defaults), then the job's
 * profile, then its members.
 *
 * RESULTS.  One record per job, one line each, appended with a single
 * write(2) and made durable (fdatasync) as each job ends:
 *   {"id","line","attempt","sandbox","result","reason","started","ended",
 *    then the members of an_exec_result_json_fields (sandbox.h), "error",
 *    and with cfg->pool "pooled": whether the job's sandbox came from it}
 *   result: "passed" | "failed" (non-zero exit or signal) | "timed_out" |
 *   "oom_killed" | "error" (the job could not run: bad line with lenient,
 *   image missing, --put failed, memory limit above max_memory...).
 *   started/ended: RFC 3339 UTC with milliseconds.  Output kept in a record:
 *   at most record_output_max bytes per stream (*_truncated then true).
 * A journal "<results>.journal" holds one line per job start (id, line,
 * attempt, pid); resume reads it to number attempts.
 *
 * PROCESSES.  Each running job is a process forked from the caller (the
 * library is for single-threaded processes: sandbox.h "PROCESSES AND
 * THREADS"), which creates the job's sandbox (owned by that process: no
 * monitor), runs it, copies artifacts out, destroys it and sends its record
 * over a pipe; the caller appends it.  A job process dies with the caller
 * (PR_SET_PDEATHSIG): after a SIGKILL of the caller its sandboxes are "dead,
 * creator gone" and an_sandbox_prune removes them.  A job process that dies
 * without a record has its sandboxes torn down by the caller at once.
 *
 * MEMORY.  The JOBS file is streamed twice (validation, then the run; a
 * pipe is first spooled to an unlinked temporary file): only the jobs in
 * flight are held, plus 20 bytes per job for the uniqueness of ids (and, with
 * resume, for the finished ones).  The results file is streamed too.
 */
#ifndef AGENTNEST_BATCH_H
#define AGENTNEST_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "agentnest/error.h"
#include "agentnest/sandbox_opts.h"

#ifdef __cplusplus
extern "C" {
#endif

enum an_batch_result {
  AN_BATCH_PASSED = 0, AN_BATCH_FAILED, AN_BATCH_TIMED_OUT, AN_BATCH_OOM, AN_BATCH_ERROR,
  AN_BATCH__NRESULTS
};

/* "passed", "failed", "timed_out", "oom_killed", "error" (static strings). */
const char *an_batch_result_name(enum an_batch_result r);

struct an_batch_counts {
  uint64_t total;          /* jobs of this shard in the file */
  uint64_t done;           /* jobs with a record (this run's and, with resume, earlier ones) */
  uint64_t resumed;        /* of done: recorded before this run (skipped) */
  uint64_t running;
  uint64_t by_result[AN_BATCH__NRESULTS];
  uint64_t elapsed_ms;     /* since the run began (monotonic) */
};

enum an_batch_event_kind {
  AN_BATCH_EV_INVALID,     /* a malformed line (line, reason); strict mode then fails */
  AN_BATCH_EV_STARTED,     /* id, line, attempt */
  AN_BATCH_EV_FINISHED,    /* id, line, attempt, result, reason, duration_ms */
  AN_BATCH_EV_TICK,        /* every progress_ms while jobs run */
  AN_BATCH_EV_STOPPING,    /* a signal arrived (signal) or fail-fast: no job starts any more */
};

struct an_batch_event {
  enum an_batch_event_kind kind;
  const char *id;          /* NULL for TICK/STOPPING; borrowed for the call */
  uint64_t line;
  unsigned attempt;
  enum an_batch_result result;
  const char *reason;      /* NULL: none */
  uint64_t duration_ms;
  int signal;
  const struct an_batch_counts *counts;
};

typedef void (*an_batch_event_fn)(void *arg, const struct an_batch_event *ev);

struct an_batch_config {
  const char *store_root;          /* NULL: AN_IMAGE_DEFAULT_STORE */
  const char *jobs_path;           /* the JOBS file; "-": standard input */
  const struct an_sandbox_opts *defaults; /* the batch's create options; NULL: built-in
                                     defaults with image "python" */
  unsigned jobs;                   /* jobs at once; 0: online CPUs */
  const char *results_path;        /* NULL: records go to echo_fd only (no resume) */
  int echo_fd;                     /* -1, or an fd that also gets every record (stdout) */
  const char *junit_path;          /* NULL: none; written (atomically) at the end */
  const char *output_dir;          /* NULL: none; else DIR/ID/{stdout,stderr,artifacts/} */
  bool resume;                     /* keep results_path's records, run the jobs it lacks */
  bool lenient;                    /* malformed lines become "error" records */
  bool fail_fast;                  /* stop starting jobs after the first one not passed */
  bool drain;                      /* on a signal let running jobs finish (2nd signal: end) */
  unsigned shard_k, shard_n;       /* run job ordinals o with o % n == k - 1; 0/0: all */
  uint64_t max_memory;             /* bytes the running jobs' memory limits may add up
                                      to; 0: the host's physical memory */
  size_t record_output_max;        /* bytes per stream kept in a record; 0: 64 KiB; at most 4 MiB */
  const char *tmp_dir;             /* absolute; NULL: /tmp.  Unlinked (O_TMPFILE) spool of a
                                      JOBS pipe, and the records when results_path is NULL */
  int signal_fd;                   /* -1, or a signalfd(2) of the caller (read here) */
  uint64_t progress_ms;            /* TICK period; 0: 1000 */
  an_batch_event_fn on_event;      /* NULL: none; called from the calling process only */
  void *event_arg;
  const char *pool;                /* NULL: none; else warm pool NAME (agentnest/pool.h): a job
                                      whose options are the pool's (no options of its own
                                      beyond them, no secrets) takes a ready sandbox of it,
                                      owned by its job process, and falls back to a fresh one
                                      when the pool is empty; its record has "pooled" */
};

#define AN_BATCH_SLOWEST 5

struct an_batch_summary {
  struct an_batch_counts counts;   /* final */
  struct { char *id; uint64_t ms; } slowest[AN_BATCH_SLOWEST]; /* by duration_ms, desc */
  size_t nslowest;
  uint64_t job_ms_total;           /* sum of the recorded jobs' duration_ms */
  uint64_t wall_ms;                /* this run, start to end */
  int signal;                      /* the signal that stopped the run; 0: none */
  bool fail_fast_stop;             /* stopped by fail_fast */
  uint64_t not_run;                /* jobs of the shard without a record at the end */
};

/* Run the batch described by cfg: validate the whole file first (a
 * malformed line refuses it unless lenient), then run the jobs of the
 * shard that have no record yet (all of them without resume: the results
 * file and journal are truncated), at most cfg->jobs and max_memory at
 * once, appending a record per job; write the JUnit file; fill *sum
 * (an_batch_summary_release).
 * Returns 0 when the run went through (also when jobs failed, or a signal or
 * fail_fast stopped it: see *sum), or
 *   -EINVAL  bad cfg (named: shard K not in 1..N, resume without a results
 *            file, jobs > 4096, record_output_max > 4 MiB); malformed JOBS
 *            (strict mode: "JOBS line N: member \"m\": cause", after an
 *            INVALID event per bad line; nothing ran); a results file that
 *            does not hold records ("results FILE line N: ..."; a final line
 *            cut short by a crash is truncated away, not an error);
 *   the errno of opening/reading JOBS, writing or syncing the results, the
 *   journal or the JUnit file (named).
 * Not thread-safe (forks; call from a single-threaded process).  The
 * caller's signal dispositions are untouched; SIGCHLD must not be SIG_IGN. */
int an_batch_run(const struct an_batch_config *cfg, struct an_batch_summary *sum,
                 an_error_t *err);

/* Free the summary's strings and zero it (NULL allowed). */
void an_batch_summary_release(struct an_batch_summary *sum);

#ifdef __cplusplus
}
#endif
#endif
