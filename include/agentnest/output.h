/* agentnest/output.h — capture of an exec's stdout and stderr with byte caps,
 * secret redaction and safe JSON encoding (DESIGN.md "Behaviour users rely
 * on"; case BL-45).
 *
 * - Both pipes are read concurrently (poll(2)), so a child flooding one
 *   stream never deadlocks against a full pipe on the other.
 * - At most the caps are kept (DESIGN: 10 MiB for stdout+stderr together;
 *   per-stream caps optional).  Beyond a cap the pipe is still drained and
 *   the bytes dropped, so the writer is never blocked; the stream's
 *   `truncated` flag is set.  Memory use is bounded by the caps plus a fixed
 *   64 KiB read buffer and the redaction window.
 * - A cut at a cap never splits a UTF-8 sequence: the kept bytes back off to
 *   the last character boundary.
 * - Secrets: every occurrence of a secret value in the kept output is
 *   replaced by "[REDACTED:<NAME>]", in any of these forms: raw; each byte
 *   raw or escaped, mixed freely (URL %XX in either case, '+' for a space,
 *   JSON \uXXXX incl. UTF-16 surrogate pairs, \xXX, JSON's \" \\ \/ \n \t
 *   \r \b \f); hex of the value in either case; base64 and base64url of
 *   the value at any alignment inside a longer encoded text, with or without
 *   padding, with line breaks (CR, LF) anywhere between the characters (the
 *   characters that depend on the value alone are replaced; up to 5 bits
 *   at each end of the value can remain in the neighbouring characters).
 *   Secrets shorter than 3 bytes are looked for raw/escaped only.  A value
 *   is found also when it arrives split across reads, interleaved with the
 *   other stream's output, or split between stdout and stderr in the order
 *   they were read, as long as its pieces lie within the form's length plus
 *   4096 bytes of the combined output; that much is held back between reads.
 *   A value whose first part (4+ bytes) in one stream is continued by the
 *   other stream's next bytes is found however much the first stream wrote
 *   in between (up to 64 KiB, held back meanwhile), and a value of 9+ bytes
 *   also without its first 1..3 bytes: the CLI may read a busy stream's
 *   later output before the other stream's part.  Not covered: the second
 *   part read before the first (stderr's first part, stdout's rest, both
 *   pending at one poll round), more than 64 KiB in between, three or more
 *   pieces across the streams.
 *   When secrets overlap, the longest value wins.  Not covered (cannot be in
 *   general): any other transformation (compression, encryption, other
 *   encodings, reversal, arithmetic, a value spread over many writes far
 *   apart, timing or exit-status channels).
 * Nothing here prints, execs or allocates per byte.
 *
 * Thread-safety: no global state.  A redactor or a capture is used by one
 * thread at a time, distinct ones in parallel; an_output_capture,
 * an_json_escape_output, an_utf8_sanitize and an_output_json_fields are
 * reentrant (the on_data callback runs on the calling thread).  Standards:
 * UTF-8 as RFC 3629, JSON strings as RFC 8259 (through yajl).
 */
#ifndef AGENTNEST_OUTPUT_H
#define AGENTNEST_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_gen.h>
#include "agentnest/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Default cap of kept output, stdout+stderr together (DESIGN: output 10 MiB). */
#define AN_OUTPUT_DEFAULT_MAX_BYTES ((size_t) 10 << 20)

/* A secret: `value` must never appear in captured output; it is shown as
 * "[REDACTED:<name>]".  Both strings are borrowed (must outlive the user). */
struct an_secret {
  const char *name;
  const char *value;
};

enum an_stream { AN_STREAM_STDOUT = 1, AN_STREAM_STDERR = 2 };

/* ---- redaction (sandbox/redact.c) ---------------------------------------- */

typedef struct an_redactor an_redactor_t;

/* Receives redacted bytes in order.  Return 0 to continue, negative to stop
 * (the value is passed back to the caller of feed/flush). */
typedef int (*an_output_sink_fn)(void *data, const char *buf, size_t len);

/* Make a redactor for `n` secrets (n may be 0: bytes pass through).  Values
 * and names are copied.  Returns 0 and *out (free with an_redactor_free), or
 * -EINVAL for an empty value or a name that is empty or longer than 64 bytes,
 * -ENOMEM. */
int an_redactor_new(const struct an_secret *secrets, size_t n, an_redactor_t **out, an_error_t *err);

/* Scan `len` bytes of one stream, calling `sink` with redacted output.
 * Bytes that may be the start of a secret continued by the next feed are
 * held back (at most the longest form's length + 4096 bytes, + 64 KiB
 * after a prefix of 4+ bytes; see an_redactor_feed_stream).  Returns 0 or
 * the sink's negative value. */
int an_redactor_feed(an_redactor_t *r, const char *buf, size_t len, an_output_sink_fn sink, void *data);

/* End of stream: emit the held-back bytes (they cannot complete a secret
 * any more).  Returns 0 or the sink's negative value. */
int an_redactor_flush(an_redactor_t *r, an_output_sink_fn sink, void *data);

/* Receives redacted bytes of one stream, in order.  Return 0 to continue,
 * negative to stop (passed back to the caller). */
typedef int (*an_output_stream_sink_fn)(void *data, enum an_stream stream, const char *buf, size_t len);

/* As an_redactor_feed for a redactor shared by both streams: `len` bytes of
 * `stream` as read, in read order across the two streams; a secret split
 * between the streams is found too (see the top of this file), also when
 * one stream's later output was read before the other stream's part.
 * Bytes that may still become part of a match are held back (at most the
 * longest form's length + 4096 bytes; after a prefix of 4 or more bytes of
 * a form, until the other stream's next bytes, at most 64 KiB more).  Returns 0 or the sink's negative value. */
int an_redactor_feed_stream(an_redactor_t *r, enum an_stream stream, const char *buf, size_t len,
                            an_output_stream_sink_fn sink, void *data);

/* End of both streams: emit everything held back.  Returns 0 or the
 * sink's negative value. */
int an_redactor_flush_streams(an_redactor_t *r, an_output_stream_sink_fn sink, void *data);

/* Release (NULL allowed).  Secret copies are wiped first. */
void an_redactor_free(an_redactor_t *r);

/* ---- capture (sandbox/output.c) ------------------------------------------ */

/* Receives kept (redacted, within caps) output as it arrives, e.g. for
 * streaming to a client.  `buf` is valid only during the call. */
typedef void (*an_output_data_fn)(void *data, enum an_stream stream, const char *buf, size_t len);

/* Capture options; a zero struct means 10 MiB total, no per-stream caps, no
 * secrets, no callback. */
struct an_output_opts {
  size_t max_total;   /* bytes kept of stdout+stderr together; 0 = AN_OUTPUT_DEFAULT_MAX_BYTES */
  size_t max_stdout;  /* bytes kept of stdout; 0 = no separate cap */
  size_t max_stderr;  /* bytes kept of stderr; 0 = no separate cap */
  const struct an_secret *secrets;
  size_t nsecrets;
  an_output_data_fn on_data;
  void *on_data_arg;
};

/* Result.  Buffers are malloc'd, owned by the caller (an_output_release),
 * NUL-terminated after *_len bytes, never NULL after a successful capture. */
struct an_output {
  char *stdout_buf;
  size_t stdout_len;
  bool stdout_truncated;   /* output was dropped (cap reached) */
  uint64_t stdout_read;    /* bytes read from the pipe in total (kept + dropped) */
  char *stderr_buf;
  size_t stderr_len;
  bool stderr_truncated;
  uint64_t stderr_read;
};

typedef struct an_output_capture an_output_capture_t;

/* Incremental interface (for event loops that own the fds).  new: -EINVAL
 * for bad secrets, -ENOMEM.  feed: process bytes read from one stream; never
 * fails except -EINVAL for a bad stream.  finish: flush redaction windows and
 * move the buffers into *out (then free the capture with _free). */
int an_output_capture_new(const struct an_output_opts *opts, an_output_capture_t **out, an_error_t *err);
int an_output_capture_feed(an_output_capture_t *c, enum an_stream stream, const char *buf, size_t len,
                           an_error_t *err);
int an_output_capture_finish(an_output_capture_t *c, struct an_output *out, an_error_t *err);
void an_output_capture_free(an_output_capture_t *c);

/* Read `stdout_fd` and `stderr_fd` (pipes; either may be -1) concurrently
 * until both reach EOF, keeping output per `opts` (see the file comment).
 * `stop_fd` (-1 for none), e.g. a pidfd or a timerfd: once it polls
 * readable, whatever is already buffered in the pipes is drained (at most
 * 1 MiB more per stream, so a writer that keeps writing cannot hold the
 * call) and the call returns; a daemonised grandchild holding a pipe open
 * cannot keep the caller waiting.  The fds are not closed.  Returns 0 and fills *out, or
 * -EINVAL (bad options), -ENOMEM, or the errno of poll(2)/read(2) (*out is
 * then left empty). */
int an_output_capture(int stdout_fd, int stderr_fd, int stop_fd, const struct an_output_opts *opts,
                      struct an_output *out, an_error_t *err);

/* Free the buffers of *o and zero it. */
void an_output_release(struct an_output *o);

/* ---- JSON (sandbox/output.c) --------------------------------------------- */

/* Emit `len` bytes of captured output as one JSON string into `g`.  JSON
 * (RFC 8259 section 8.1) must be UTF-8: valid UTF-8 sequences (RFC 3629: no
 * overlongs, no surrogates, <= U+10FFFF) are kept, and each byte that is not
 * part of one is replaced by U+FFFD REPLACEMENT CHARACTER (as Python's
 * errors="replace" does per byte).  Control characters and NUL are escaped
 * by yajl (\n, \u0000, ...).  Works with yajl_gen_validate_utf8 on or off.
 * Returns the yajl_gen_status (yajl_gen_status_ok on success;
 * yajl_gen_in_error_state also when memory for the copy ran out). */
yajl_gen_status an_json_escape_output(yajl_gen g, const char *buf, size_t len);

/* The same sanitising alone: a malloc'd NUL-terminated valid-UTF-8 copy of
 * `buf` (invalid bytes -> U+FFFD), length in *out_len.  NULL on ENOMEM. */
char *an_utf8_sanitize(const char *buf, size_t len, size_t *out_len);

/* Emit the capture result as JSON map entries (inside an open map):
 * "stdout", "stderr" (strings as an_json_escape_output), "stdout_truncated",
 * "stderr_truncated" (booleans).  Returns the first non-ok yajl status. */
yajl_gen_status an_output_json_fields(yajl_gen g, const struct an_output *o);

#ifdef __cplusplus
}
#endif
#endif
