/* agentnest/api.h — the operations table the agent front ends are made from
 * (`agentnest mcp`, `agentnest serve`, its OpenAPI document), the explicit
 * context they pass, and the worker processes every call runs in.
 *
 * ONE TABLE.  Each operation (an_api_op) is a name, a description, a JSON
 * Schema (draft 2020-12, the dialect of MCP 2025-11-25 and OpenAPI 3.1) of
 * its input object and of its output object, an HTTP route, and a handler
 * that takes the parsed input and writes the output with yajl, calling
 * libagentnest directly.  The MCP tool list, the HTTP routes and the OpenAPI
 * document are generated from this table, so the three cannot drift; a new
 * operation (sessions, network policy, approvals, audit) is one entry in
 * src/api/ops_table.c and one handler.
 *
 * CONCURRENCY: WORKER PROCESSES (the choice, and why).  The library starts
 * sandbox processes with a raw clone3(2) and expects a single-threaded
 * caller (agentnest/sandbox.h PROCESSES AND THREADS); its exec path reaps its
 * children and watches "the caller" through a pidfd; the options still read
 * two environment variables (AGENTNEST_INIT, AGENTNEST_PROFILES).  Proving
 * all of that safe under threads would mean auditing every clone, fd and
 * signal path of the engine.  Instead every call of an operation runs in a
 * worker process forked for it (an_api_job_start):
 *   - the worker is single-threaded (fork copies only the calling thread), so
 *     the engine's rules hold even when the front end is threaded (serve);
 *     glibc's fork resets the malloc and stdio locks in the child, and the
 *     API layer holds no other lock across fork;
 *   - process-wide state a call needs (the context's init path and profiles
 *     dir, which the library reads from the environment; signal dispositions;
 *     stdio as /dev/null, so a stray write can never reach an MCP client's
 *     stdout; only its own pipes open: close_range) is set in the worker and
 *     dies with it: no other call sees it;
 *   - cancellation is a byte on the worker's cancel pipe (an exec's
 *     cancel_fd: its whole cgroup is killed) and, after a grace period,
 *     SIGKILL of the worker; an exec also ends with the worker (its watcher,
 *     sandbox.h EXEC), and the worker ends with the front end
 *     (PR_SET_PDEATHSIG);
 *   - one call that crashes cannot take the server down.
 * The cost is one fork per call (`make bench`, group frontends).
 * tests/integration/api_test.c checks that calls from two threads on two
 * sandboxes run at once and stay apart, and that a cancelled call ends and
 * kills its command.
 *
 * SANDBOXES TIED TO THE FRONT END.  With ctx->lifeline_fd >= 0, create
 * makes the sandbox "owned" (an_sandbox_create_owned semantics: its
 * monitor tears it down when its owner process dies) and the worker that
 * made it stays alive as that owner ("keeper": it blocks reading
 * lifeline_fd, which only the front end holds open for writing: EOF when
 * the front end process is gone, whichever of its threads forked it).  So when the front end ends
 * in any way — stdin EOF, SIGTERM, SIGKILL — every sandbox it created is
 * destroyed by its own monitor, and `agentnest prune` removes whatever a
 * monitor could not ("creator dead").  `agentnest mcp` and `agentnest
 * serve` use this.  (fork's copy is an ordinary sandbox:
 * the front end destroys it when it ends normally; after a SIGKILL its
 * lifetime, capped by max_lifetime_ms, ends it.)
 *
 * Thread-safety: the table and the schema strings are constant; every
 * function here may be called from any thread on distinct jobs.  A job is
 * used by one thread at a time. */
#ifndef AGENTNEST_API_H
#define AGENTNEST_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>
#include "agentnest/error.h"
#include "agentnest/files.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The explicit context of every call (crun's libcrun_context_t is the model).
 * Strings are borrowed: they must outlive the jobs started with it. */
struct an_api_ctx {
  const char *store_root;     /* image store and sandbox state (NULL: the library default) */
  const struct an_ctx *lib;   /* the library context (agentnest/ctx.h): agentnest-init, the
                                 profiles directory, the id-range root; NULL: the defaults.
                                 Give one without secret_env: a client must not read the
                                 server's environment through a profile's "secret": "NAME" */
  const char *profile;        /* when set: every create uses this profile and the input may
                                 not name another profile or an image (--profile) */
  uint64_t max_lifetime_ms;   /* 0: none; else a create's lifetime is capped at this */
  uint64_t max_read_bytes;    /* 0: the sandbox's max_read; else read_file/write_file cap */
  const char *snapshots_dir;  /* where snapshot writes tars (NULL: <store>/api-snapshots) */
  int lifeline_fd;            /* -1: none; else see SANDBOXES TIED TO THE FRONT END */
  /* Whether the caller may act on sandbox `id` (called in the worker after
   * the sandbox is resolved, and by ls for each entry); NULL: any. */
  bool (*may_use)(void *data, const char *id);
  void *may_use_data;
  /* Whether the caller may read the audit records of sandbox `id` (the
   * audit operation): the ids it created, destroyed ones included.  Called
   * in the worker.  NULL: may_use decides. */
  bool (*may_audit)(void *data, const char *id);
  void *may_audit_data;
  an_warn_fn warn;            /* warnings of a call (skipped entries, cleanup problems); the
                                 worker sends them with the result; NULL: dropped */
  void *warn_data;
  /* NULL: snapshots are shared by every caller of snapshots_dir; else 1 to 64 of
   * [0-9a-f] naming the caller: snapshot writes and restore reads only
   * <snapshots_dir>/<snapshot_owner>/, so a digest of another caller's snapshot
   * (a token of `agentnest serve`) restores nothing (ENOENT) */
  const char *snapshot_owner;
};

/* An operation's flags. */
enum {
  AN_API_OP_CREATES = 1u << 0,   /* the output's "id" is a new sandbox the caller owns */
  AN_API_OP_DESTROYS = 1u << 1,  /* the input's "sandbox" is gone after success */
  AN_API_OP_LONG = 1u << 2,      /* may run long: front ends send progress */
  AN_API_OP_READ_ONLY = 1u << 3, /* changes nothing (MCP readOnlyHint) */
  AN_API_OP_STREAMS = 1u << 4,   /* input "stream": true sends output chunks as they come
                                    (an_api_job_take_output) before the result */
};

struct an_ctx;
struct an_api_call;             /* what a handler sees of its call (src/api/api_internal.h) */

/* One operation.  The schemas are JSON documents (NUL-terminated strings).
 * The HTTP route: method and a path under /v1 whose "{sandbox}" segment,
 * when present, is the input's "sandbox" member; the request body (a JSON
 * object) gives the other members. */
struct an_api_op {
  const char *name;             /* [a-z_]+, the MCP tool name */
  const char *title;            /* a short human title */
  const char *description;
  const char *input_schema;     /* JSON Schema of the input object */
  const char *output_schema;    /* JSON Schema of the output object */
  const char *http_method;      /* "GET", "POST", "DELETE" */
  const char *http_path;        /* "/sandboxes/{sandbox}/exec" */
  unsigned flags;               /* AN_API_OP_* */
  /* Handler, run in the worker: input validated against input_schema;
   * writes one JSON object to out.  Returns 0 or a negative errno with *err. */
  int (*handler)(struct an_api_call *call, yajl_val input, yajl_gen out, an_error_t *err);
};

/* The table: *n entries, in a fixed order.  Constant storage. */
const struct an_api_op *an_api_ops(size_t *n);
/* The operation named `name` (an entry of the constant table), or NULL. */
const struct an_api_op *an_api_op_find(const char *name);

/* Whether a call of `op` with `input` (its arguments object; NULL: none)
 * holds a sandbox while it runs: an operation that creates one
 * (AN_API_OP_CREATES: create, fork) and run_code without "sandbox" (a
 * one-shot, whose sandbox lives for the call).  Front ends count such calls
 * against their caps on sandboxes (`agentnest mcp --max-sandboxes`, serve's
 * per-token max-sandboxes=N) from the moment they admit the call (the slot
 * reserved in the same step as the check) to its end.  Pure; any thread. */
bool an_api_call_holds_sandbox(const struct an_api_op *op, yajl_val input);

/* Check `input` against an operation's input schema (the subset our schemas
 * use: type object/string/integer/boolean/array, properties, required,
 * additionalProperties false, enum, items, minimum/maximum, minLength,
 * maxLength).  Returns 0, or -EINVAL naming the member ("input \"argv\":
 * expected an array").  Thread-safe. */
int an_api_validate(const struct an_api_op *op, yajl_val input, an_error_t *err);

/* Write the parsed JSON value v to g (re-emitting a schema, a result).
 * Returns the first non-ok status. */
yajl_gen_status an_api_gen_value(yajl_gen g, yajl_val v);

/* ---- jobs: one call in its worker process -------------------------------------------------- */

struct an_api_job;

/* Fork the worker for op with the input JSON (input_len bytes; an object;
 * NULL/0: {}).  The worker parses and validates the input, runs the
 * handler and sends the result back.  *out: the job (an_api_job_free).
 * Errors: -EINVAL op NULL; -ENOMEM; pipe/fork errno, named.  Input errors
 * are the job's result, not this call's. */
int an_api_job_start(const struct an_api_ctx *ctx, const struct an_api_op *op, const char *input,
                     size_t input_len, struct an_api_job **out, an_error_t *err);

/* The fd to poll for POLLIN while the job runs (owned by the job; never fails). */
int an_api_job_fd(const struct an_api_job *job);

/* Read what the worker has sent (never blocks).  Returns 1 when the result
 * is complete (call an_api_job_finish), 0 when more is to come, or a
 * negative errno (read failed, result over 1 GiB). */
int an_api_job_pump(struct an_api_job *job, an_error_t *err);

/* Deliver the output chunks (stream 1 stdout, 2 stderr; redacted, within
 * the output caps) that the worker of a streaming call (AN_API_OP_STREAMS
 * with "stream": true) has sent so far, in order, each once; call after
 * an_api_job_pump.  fn's buf is valid only during the call.  Returns the
 * number of chunks delivered.  Chunks never delivered are skipped by
 * an_api_job_finish. */
size_t an_api_job_take_output(struct an_api_job *job,
                              void (*fn)(void *data, int stream, const char *buf, size_t len), void *data);

/* Ask the job to stop: a byte on its cancel pipe (an exec's whole cgroup is
 * killed at once), and SIGKILL of the worker when it has not ended grace_ms
 * later (checked by an_api_job_tick and an_api_job_finish).  A call that
 * makes or holds a sandbox (AN_API_OP_CREATES, run_code) gets at least 30 s
 * (ms: 30000), since a worker killed mid-create leaves a half-made sandbox;
 * a create or fork that completes after the cancel destroys the sandbox it
 * made and fails with ECANCELED ("... it is destroyed").  Idempotent. */
void an_api_job_cancel(struct an_api_job *job, uint64_t grace_ms);
/* Apply a pending SIGKILL whose grace has passed; call when poll times out. */
void an_api_job_tick(struct an_api_job *job);
/* Milliseconds since the job started (CLOCK_MONOTONIC). */
uint64_t an_api_job_elapsed_ms(const struct an_api_job *job);

/* Wait for the worker (reads the rest of its result) and take the result:
 * on success returns 0 and *output (heap, NUL-terminated JSON object,
 * caller frees; *len its length in bytes).  On failure of the operation returns its
 * negative errno with *err (the handler's message); -ECANCELED when the job
 * was cancelled or killed; -EPROTO the worker died without a result (its
 * signal named).  *keeper_pid (may be NULL) receives the pid of the worker
 * left running as the owner of a created sandbox (lifeline; 0: none): the
 * caller reaps it (waitpid) when it ends. */
int an_api_job_finish(struct an_api_job *job, char **output, size_t *len, pid_t *keeper_pid,
                      an_error_t *err);

/* Free everything, reaping the worker.  A job still running is cancelled
 * (an_api_job_cancel with grace 0: a job holding a sandbox still gets its
 * 30 s to tear it down) and its output dropped until it ends, SIGKILLed when
 * the grace passes; a worker left after its result (a keeper nobody will
 * know of) is SIGKILLed.  May block up to that grace.  NULL allowed. */
void an_api_job_free(struct an_api_job *job);

/* Start, wait and finish: an_api_job_finish's results.  The call is
 * cancelled when cancel_fd (>= 0) reports one of cancel_events in poll(2)
 * (POLLIN for a pipe; POLLRDHUP for a client socket: its peer closed) or
 * POLLHUP/POLLERR.  input_len and *len are lengths in bytes.  Errors: those
 * of an_api_job_start, then those of an_api_job_finish (-ECANCELED when
 * cancelled).  For threaded front ends
 * (each thread its own call). */
int an_api_call_sync(const struct an_api_ctx *ctx, const struct an_api_op *op, const char *input,
                     size_t input_len, int cancel_fd, short cancel_events, char **output, size_t *len,
                     an_error_t *err);

/* ---- documents generated from the table ----------------------------------------------------- */

/* The OpenAPI 3.1 document of the HTTP API (`agentnest serve`): every
 * operation's route, its request body (input schema less the path
 * parameter), its 200 response (output schema) and the error responses
 * (an_api_error_schema), bearer authentication.  *json heap, caller frees; *len its length in bytes.
 * Errors: -EINVAL a schema of the table is not JSON (a build defect);
 * -ENOMEM. */
int an_api_openapi(char **json, size_t *len, an_error_t *err);

/* The JSON Schema of an error body: {"error":{"code","errno","message"}}. */
extern const char an_api_error_schema[];

#ifdef __cplusplus
}
#endif
#endif
