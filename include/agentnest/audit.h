/* agentnest/audit.h — the per-store audit log: one JSON Lines record per
 * operation on a sandbox (create, exec, file put/get, snapshot, restore,
 * fork, destroy, expiry, prune, approval decisions, and whatever other
 * operations record through an_audit_record), kept in the store, outliving
 * every sandbox it names.
 *
 * FILES (store_root as for images, default /var/lib/agentnest):
 *   <root>/audit/               directory, mode 0700, never followed as a symlink
 *   <root>/audit/audit.jsonl    the current file, mode 0600
 *   <root>/audit/audit.jsonl.N  rotated files, N = 1 (newest) .. keep (oldest)
 *   <root>/audit/audit.lock     flock(2) serialising appends and rotation
 *   <root>/audit/config.json    {"max_bytes":N,"keep":K} (an_audit_configure)
 *
 * RECORD.  One JSON object per line (yajl; strings that are not UTF-8 get
 * U+FFFD for the bad bytes), written with O_APPEND in one write(2) and
 * fsync(2)ed before the call returns.  Members, in this order:
 *   "time"     RFC 3339 UTC with milliseconds, "2026-12-01T12:00:00.123Z"
 *   "op"       the operation: "create", "exec", "run", "put", "get",
 *              "snapshot", "restore", "fork", "destroy", "expire", "prune",
 *              "approval" (other branches add their own names)
 *   "sandbox"  the sandbox id, or null
 *   "caller"   {"uid":U,"pid":P}: the process that wrote the record
 *   ...        the fields of the call, in the order given
 * Example:
 *   {"time":"2026-12-01T12:00:00.123Z","op":"exec","sandbox":"3f2a9c01b7de",
 *    "caller":{"uid":0,"pid":4242},"argv":["sh","-c","ls"],"env":["DEBUG"],
 *    "result":"ok","status":0}
 *
 * SECRETS.  Values never: AN_AUDIT_ENV_NAMES writes only the names of
 * "K=V" entries, and AN_AUDIT_SECRETS(list, n) makes every string of the
 * record (argv entries, paths, messages) pass through the output redactor
 * (agentnest/output.h: a value, also base64/hex/URL-encoded, becomes
 * "[REDACTED:<name>]").  The sandbox layer passes its secrets on every
 * record it writes.
 *
 * ROTATION.  Before an append that would take audit.jsonl past max_bytes
 * (default AN_AUDIT_DEFAULT_MAX_BYTES), audit.jsonl.keep is removed, each
 * .N becomes .N+1 and audit.jsonl becomes .1 (all under the lock), so
 * records are never split across files.  A single record larger than
 * max_bytes is written alone into a fresh file.
 *
 * CONCURRENCY.  Every call opens its own descriptors and holds the flock
 * of audit.lock (exclusive for an append, shared for a read) for the
 * duration: appends from any number of threads and processes (CLIs, the
 * monitors) come out as whole lines, and a reader sees a consistent set of
 * files even while another process rotates.  Thread-safe; no global state.
 * Not async-signal-safe.
 */
#ifndef AGENTNEST_AUDIT_H
#define AGENTNEST_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "agentnest/error.h"
#include "agentnest/output.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AN_AUDIT_DIR "audit"
#define AN_AUDIT_FILE "audit.jsonl"
#define AN_AUDIT_DEFAULT_MAX_BYTES (16ull << 20)   /* 16 MiB per file */
#define AN_AUDIT_DEFAULT_KEEP 5u                    /* rotated files kept */
#define AN_AUDIT_MIN_MAX_BYTES 4096ull
#define AN_AUDIT_MAX_MAX_BYTES (1ull << 40)
#define AN_AUDIT_MAX_KEEP 100u
/* A record is at most this long: longer strings are cut to
 * AN_AUDIT_STR_CUT bytes and "truncated":true is added. */
#define AN_AUDIT_RECORD_MAX (256u << 10)
#define AN_AUDIT_STR_CUT 1024u
/* Fields one an_audit_record call takes (an_audit_recordv: any number). */
#define AN_AUDIT_MAX_FIELDS 64

enum an_audit_type {
  AN_AUDIT_T_END = 0,   /* terminates the variadic list */
  AN_AUDIT_T_STR,       /* "key": string (NULL: null) */
  AN_AUDIT_T_INT,       /* "key": integer */
  AN_AUDIT_T_BOOL,      /* "key": true|false */
  AN_AUDIT_T_STRV,      /* "key": [strings] of a NULL-terminated vector (NULL: []) */
  AN_AUDIT_T_ENV_NAMES, /* "key": [names] of a NULL-terminated "K=V" vector: values never */
  AN_AUDIT_T_SECRETS,   /* no member: secrets to redact from every string of the record */
};

/* One field of a record (or of an approval request's "arguments").  Make
 * them with the macros below; every pointer is borrowed for the call. */
struct an_audit_field {
  enum an_audit_type type;
  const char *key;
  const char *str;
  int64_t num;
  char *const *strv;
  const struct an_secret *secrets;
};

#define AN_AUDIT_STR(k, v) ((struct an_audit_field){.type = AN_AUDIT_T_STR, .key = (k), .str = (v)})
#define AN_AUDIT_INT(k, v) ((struct an_audit_field){.type = AN_AUDIT_T_INT, .key = (k), .num = (int64_t) (v)})
#define AN_AUDIT_BOOL(k, v) ((struct an_audit_field){.type = AN_AUDIT_T_BOOL, .key = (k), .num = !!(v)})
#define AN_AUDIT_STRV(k, v) ((struct an_audit_field){.type = AN_AUDIT_T_STRV, .key = (k), .strv = (v)})
#define AN_AUDIT_ENV_NAMES(k, v) \
  ((struct an_audit_field){.type = AN_AUDIT_T_ENV_NAMES, .key = (k), .strv = (v)})
#define AN_AUDIT_SECRETS(list, n) \
  ((struct an_audit_field){.type = AN_AUDIT_T_SECRETS, .secrets = (list), .num = (int64_t) (n)})
#define AN_AUDIT_END ((struct an_audit_field){.type = AN_AUDIT_T_END})

/* Append one record to the audit log of store_root (NULL: the default
 * store).  op: [a-z_]{1,32}; sandbox_id: NULL (written as null) or the id;
 * then the fields, ended by AN_AUDIT_END:
 *   an_audit_record(root, "network_change", id, &err,
 *                   AN_AUDIT_STR("mode", "allowlist"), AN_AUDIT_STRV("allow", hosts),
 *                   AN_AUDIT_STR("result", "ok"), AN_AUDIT_END);
 * The directory and files are created as needed (modes above).  Returns 0
 * once the record is on disk (fsync), or: -EINVAL a bad op, a field key
 * that is empty or one of time/op/sandbox/caller, an unknown field type;
 * -ENOMEM; -ELOOP a symlink where the directory or a file should be; the
 * errno of mkdir/open/flock/write/fsync/rename, naming the path.  Callers
 * in the sandbox layer record best effort (an operation that ran is not
 * undone because its record could not be written); the error is theirs to
 * report.  Thread-safe (see CONCURRENCY). */
int an_audit_record(const char *store_root, const char *op, const char *sandbox_id, an_error_t *err,
                    ...);

/* The record of an operation on an open sandbox, the call other
 * operations (sessions, network changes, pools, extend) make when they
 * end: store and id from the handle, the sandbox's secrets redacted from
 * every string, then the fields, then "result": "ok" (result >= 0) or
 * "error" with "error": the message of *err (err may be NULL):
 *   r = do_network_change(sb, ...);
 *   an_audit_sandbox(sb, "network_change", r, &err, AN_AUDIT_STR("mode", mode),
 *                    AN_AUDIT_END);
 * Best effort: nothing is returned (a record that cannot be written does
 * not change the operation's result).  Thread-safe as an_audit_record. */
struct an_sandbox;
void an_audit_sandbox(const struct an_sandbox *sb, const char *op, int result, const an_error_t *err,
                      ...);

/* As an_audit_record with an array of n fields (no AN_AUDIT_END needed);
 * the same errors and thread-safety. */
int an_audit_recordv(const char *store_root, const char *op, const char *sandbox_id,
                     const struct an_audit_field *fields, size_t n, an_error_t *err);

/* Write fields (as an_audit_recordv writes them, secrets redacted) as the
 * members of an open yajl map.  Returns 0, -EINVAL (a bad field), -ENOMEM.
 * Used by approval requests' "arguments".  Thread-safe. */
struct an_jgen;
int an_audit_fields_gen(struct an_jgen *j, const struct an_audit_field *fields, size_t n,
                        an_error_t *err);

/* Set the rotation of store_root's audit log: files of at most max_bytes
 * (AN_AUDIT_MIN_MAX_BYTES .. AN_AUDIT_MAX_MAX_BYTES), `keep` rotated files
 * (1 .. AN_AUDIT_MAX_KEEP).  Written atomically to config.json; applies to
 * the next append of every process.  Errors: -EINVAL out of range (named);
 * the errno of writing the file. */
int an_audit_configure(const char *store_root, uint64_t max_bytes, unsigned keep, an_error_t *err);

/* The rotation in force: config.json's values, or the defaults when it is
 * absent (*max_bytes in bytes, *keep a number of rotated files).  Errors: -EINVAL a malformed config.json (named); read errors. */
int an_audit_config(const char *store_root, uint64_t *max_bytes, unsigned *keep, an_error_t *err);

/* Which records an_audit_read delivers (all members optional: 0/NULL = any). */
struct an_audit_filter {
  uint64_t since_ms;          /* records with "time" at or after this (CLOCK_REALTIME ms) */
  const char *sandbox;        /* records whose "sandbox", "child" or "parent" is this id */
  const char *op;             /* records of this op */
};

/* Receives one record: the JSON object as stored (one line, no newline).
 * Return 0 to go on, non-zero to stop (returned by an_audit_read). */
typedef int (*an_audit_fn)(void *data, const char *json);

/* Deliver the records of store_root's audit log that pass `f` (may be
 * NULL), oldest first, across the rotated files (audit.jsonl.keep .. .1,
 * then audit.jsonl).  All files are opened under the shared lock, so a
 * concurrent rotation neither hides nor repeats records.  A line that is
 * not a JSON object (a disk filled mid-write by an older writer) is
 * skipped.  No log yet: 0 and nothing delivered.  Errors: open/read errno
 * naming the file; -ENOMEM.  Thread-safe. */
int an_audit_read(const char *store_root, const struct an_audit_filter *f, an_audit_fn fn,
                  void *data, an_error_t *err);

/* Parse the CLI's --since TIME into CLOCK_REALTIME ms: RFC 3339 UTC
 * ("2026-12-01T12:00:00Z", optional ".mmm", "Z" or "+00:00"), a date
 * ("2026-12-01", midnight UTC), or a duration in the units grammar meaning
 * that long before now_ms ("10m", "1h", "90s").  Errors: -EINVAL naming the
 * text.  Pure. */
int an_audit_parse_since(const char *text, uint64_t now_ms, uint64_t *ms, an_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
