/* cli/agentnest/stream.h — the `--stream` JSON Lines writer of the commands
 * that run something (run, shell, python, exec; sessions may reuse it) and
 * the JSON error document of `--json`/`--stream` (see agentnest(1) "JSON
 * OUTPUT").  Every line is one JSON text (RFC 8259, written with yajl)
 * followed by "\n", written to fd 1 with write(2) as one unit, in order:
 *
 *   {"type":"stdout"|"stderr","data":"<text>"}
 *        a chunk of output as it arrives (redacted, within the output cap),
 *        when it is valid UTF-8 (RFC 3629); chunks are cut at UTF-8
 *        sequence boundaries (a sequence split between two reads is held
 *        back until it is complete), so text stays text;
 *   {"type":"stdout"|"stderr","data":"<base64>","encoding":"base64"}
 *        a chunk that is not valid UTF-8: its bytes in base64 (RFC 4648
 *        section 4, with padding);
 *   {"type":"result", <the members of the --json document>}
 *        exactly one, last, when the command ran (whatever its status);
 *   {"type":"error","status":125,"error":{"code":"<CODE>","message":"<text>"}}
 *        instead of the result when the runtime failed (exit status 125):
 *        CODE is "usage" for a bad command line, else the errno name of
 *        the cause ("ENOENT", "EINVAL", "ETIME", ...); the message is the
 *        one printed on stderr too.  `--json` prints the same document.
 *
 * The error mode is process-wide state of the CLI (one command per
 * process; a signal-free path): cli_fail and cli_usage_error consult it.
 * Not thread-safe. */
#ifndef AN_CLI_STREAM_H
#define AN_CLI_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include "agentnest/output.h"
#include "agentnest/sandbox.h"

/* Output chunks of one command as JSON Lines.  Zero-initialise, or use
 * CLI_STREAM_INIT; no allocation is kept between calls. */
struct cli_stream {
  unsigned char held[2][4];   /* an incomplete UTF-8 sequence at the end of the last chunk */
  size_t nheld[2];            /* of stdout [0], stderr [1] */
};

/* an_output_data_fn: `data` is a struct cli_stream.  Writes one line per
 * chunk (see above); a write error (closed stdout) drops the line, the
 * capture goes on. */
void cli_stream_data(void *data, enum an_stream stream, const char *buf, size_t len);

/* Write what is still held back (an incomplete sequence at the very end,
 * as a base64 chunk), then the result line {"type":"result","id":ID,...}
 * with the members of cli_print_result_json.  Returns 0, or 125 after
 * printing why on stderr. */
int cli_stream_result(const char *cmd, struct cli_stream *s, const char *id,
                      const struct an_exec_result *res, const struct an_artifact_list *arts);

/* Write what is still held back (an incomplete UTF-8 sequence at the very
 * end, as a base64 chunk) before a result line of one's own. */
void cli_stream_flush(struct cli_stream *s);

/* Write the finished JSON document of j (an_jgen, not pretty) and "\n" to
 * fd 1 as one write.  Returns 0 or -errno (the JSON, ENOMEM). */
struct an_jgen;
int cli_stream_line(struct an_jgen *j);

/* Error documents: when on, cli_fail and cli_usage_error also print the
 * error document above on stdout (at most one per process: later errors
 * go to stderr only). */
void cli_error_json_set(bool on);

/* Print the error document for `code` / `message` on stdout if the error
 * mode is on and none was printed yet; else nothing.  Called by cli_fail
 * (code: the errno name of the error) and cli_usage_error ("usage"). */
void cli_error_json_print(const char *code, const char *message);

/* Python output unbuffered in every mode (so that --stream and the live
 * output show it as it is written): add "PYTHONUNBUFFERED=1" to the exec's
 * extra environment *env (cli_env_add) unless PYTHONUNBUFFERED is set in
 * *env (the caller's --env) or in `sandbox_env` (the sandbox's own: profile
 * or create --env; may be NULL).  Returns 0 or 125 (out of memory). */
int cli_env_python_unbuffered(const char *cmd, char ***env, size_t *n, char *const *sandbox_env);

/* Plain output (neither --json nor --stream), where no *_truncated member
 * shows it: when --max-output cut res's output, say so on stderr, naming
 * the option and the bytes kept and produced per stream.  Prints nothing
 * when nothing was dropped. */
void cli_note_truncated(const char *cmd, const struct an_exec_result *res);

#endif
