/* sandbox/batch_internal.h — the parts of `batch` (agentnest/batch.h) that
 * its files share: a parsed job (batch_job.c), the job process
 * (batch_exec.c), the id set (batch_idset.c), the results file and JUnit
 * (batch_results.c).  The scheduler is batch.c. */
#ifndef AN_SANDBOX_BATCH_INTERNAL_H
#define AN_SANDBOX_BATCH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>
#include "agentnest/batch.h"
#include "agentnest/sandbox.h"

#define AN_BATCH_ID_MAX 128
#define AN_BATCH_LINE_MAX ((size_t) 16 << 20)   /* as AN_JSON_MAX_BYTES */

/* One job of the JOBS file. */
struct an_batch_job {
  char id[AN_BATCH_ID_MAX + 1];
  uint64_t line;             /* 1-based line in JOBS */
  unsigned attempt;
  char **argv;               /* NULL-terminated */
  char *file;                /* "file": host path to put and run; NULL none */
  char **puts, **gets;       /* NULL-terminated; NULL none */
  uint64_t timeout_ms;       /* 0: the options' exec_timeout */
  struct an_sandbox_opts *opts;
};

/* Parse line `lineno` (buf[0..len), no newline) into *job with options
 * built from `defaults` (NULL: built-in, image "python").  On error *job
 * still has the id when one could be read (id[0] otherwise 0); returns
 * -EINVAL with "member \"m\": cause" (or the JSON error). */
int an_batch_job_parse(const char *buf, size_t len, uint64_t lineno,
                       const struct an_sandbox_opts *defaults, struct an_batch_job *job,
                       an_error_t *err);
void an_batch_job_clear(struct an_batch_job *job);

/* How the job process runs (batch_exec.c). */
struct an_batch_exec_cfg {
  const char *store_root;
  const char *output_dir;    /* NULL none */
  size_t record_output_max;
  const char *pool;          /* NULL none: an_batch_config.pool */
};

/* In the forked job process: run the job, write its record (one line with
 * '\n') to out_fd.  Returns 0, or -errno when the record could not be
 * written. */
int an_batch_exec_job(const struct an_batch_exec_cfg *x, const struct an_batch_job *job,
                      int out_fd);

/* A record for a job that did not run (an "error" result with `reason`):
 * one heap line with '\n' in *line (length *len).  started/ended: now. */
int an_batch_error_record(const char *id, uint64_t lineno, unsigned attempt, const char *reason,
                          char **line, size_t *len);

/* Classify a result. */
enum an_batch_result an_batch_classify(const struct an_exec_result *res);
/* A reason for a result not passed (heap), NULL for passed. */
char *an_batch_reason(const struct an_exec_result *res, const struct an_sandbox_opts *opts);

/* RFC 3339 UTC with milliseconds of CLOCK_REALTIME now ("2026-12-01T09:00:00.123Z"). */
void an_batch_now_rfc3339(char buf[32]);

/* ---- id set: 16-byte keys (sha256 of the id) with a 32-bit value (batch_idset.c) -- */
struct an_batch_idset {
  unsigned char (*keys)[16];
  uint32_t *vals;
  bool *used;
  size_t cap, n;
};
/* Find id: returns true and *val when present. */
bool an_batch_idset_get(const struct an_batch_idset *s, const char *id, uint32_t *val);
/* Insert or replace.  -ENOMEM. */
int an_batch_idset_put(struct an_batch_idset *s, const char *id, uint32_t val);
void an_batch_idset_free(struct an_batch_idset *s);

/* ---- sandboxes of killed job processes (batch_reap.c) ----------------------------------- */

/* Tear down the sandboxes of store `root` owned by job process `pid` (it
 * died without destroying them).  Call while pid is an unreaped zombie, so
 * it cannot have been reused.  Best effort. */
void an_batch_reap_owned(const char *root, pid_t pid);
/* Resume: tear down the dead sandboxes of store `root` owned by a job
 * process the journal names (waiting up to 2 s for ones still dying). */
void an_batch_reap_previous(const char *root, const char *journal);

/* ---- lines (batch_results.c) ----------------------------------------------------------- */

/* Read one line of at most `max` bytes (without '\n') into *buf (grown).
 * Returns 1 a line (*len; *too_long when longer, the rest skipped; *eol
 * false when the file ended without '\n'), 0 end of file, -errno. */
int an_batch_read_line(FILE *f, char **buf, size_t *cap, size_t *len, size_t max, bool *too_long,
                       bool *eol);

/* ---- results file (batch_results.c) ---------------------------------------------------- */

/* What a record says, for counts, summary and JUnit. */
struct an_batch_rec {
  const char *id;
  enum an_batch_result result;
  uint64_t duration_ms;
  const char *reason;
};
/* Parse a record line (tree owned by the caller: yajl_tree_free). */
int an_batch_rec_parse(const char *buf, size_t len, yajl_val *tree, struct an_batch_rec *rec,
                       an_error_t *err);

/* Resume: read the results file at fd (opened O_RDWR), truncate a final
 * line cut short by a crash, and put every recorded id in `done` (value 0).
 * -EINVAL for a record line that is not one (named by `path` and line). */
int an_batch_results_load(int fd, const char *path, struct an_batch_idset *done,
                          an_error_t *err);
/* Resume: read the journal, and for ids not in `done` put the highest
 * attempt started into `attempts`.  A missing journal is no error. */
int an_batch_journal_load(const char *path, const struct an_batch_idset *done,
                          struct an_batch_idset *attempts, an_error_t *err);

/* Stream the results at fd: counts by result, slowest jobs, total ms. */
int an_batch_results_summarize(int fd, const char *path, struct an_batch_summary *sum,
                               an_error_t *err);
/* Write JUnit XML of the records at fd to junit_path (temp file + rename):
 * a test case per record, classname `classname`, in one testsuite. */
int an_batch_junit_write(int fd, const char *results_name, const char *classname,
                         const char *junit_path, const char *suite_name, an_error_t *err);

#endif
