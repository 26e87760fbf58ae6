/* cli/agentnest/cli.h — what the sandbox subcommands share: error and usage
 * printing, the sandbox option flags (--image, --memory, ...) of
 * run/shell/python/create, output streaming, the JSON result document, and
 * the signal plumbing of one-shot runs.  Logic stays in libagentnest. */
#ifndef AN_CLI_CLI_H
#define AN_CLI_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include "agentnest/ctx.h"
#include "agentnest/error.h"
#include "agentnest/sandbox.h"
#include "commands.h"
#include "util/json_gen.h"

/* ---- messages ---------------------------------------------------------------------------- */

/* "agentnest CMD: <err message>" on stderr ("agentnest <err message>" when
 * it starts with CMD and a space or colon: the command said once); frees
 * *err; returns 125.
 * Under --json/--stream also the JSON error document on stdout (stream.h). */
int cli_fail(const char *cmd, an_error_t *err);
/* The library context of this run (main.c: from $AGENTNEST_INIT,
 * $AGENTNEST_PROFILES, $AGENTNEST_IDRANGE_ROOT; --secret NAME reads the
 * environment).  Never NULL once main has started a command. */
const struct an_ctx *cli_ctx(void);

/* "agentnest CMD: <printf message>" and "Try 'agentnest CMD --help'." on
 * stderr; returns 125.  Under --json/--stream also the JSON error document
 * (code "usage") on stdout (stream.h). */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Read fd to its end into *out (heap, NUL-terminated, caller frees; *len its
 * length in bytes, at most 16 MiB).  Returns 0, -EFBIG beyond, -ENOMEM, or
 * the read's negative errno. */
int cli_read_all(int fd, char **out, size_t *len);

/* The getopt_long error for argv[optind-1]/optopt, as cli_usage_error. */
int cli_getopt_error(const char *cmd, int c, int argc, char **argv);

/* A command's handler of one option of its own: `code` is the getopt_long
 * code, `arg` its value (NULL for a flag).  Returns -1 to go on, or the
 * exit status to stop the command with (after printing why). */
typedef int (*cli_opt_fn)(void *ctx, int code, char *arg);

/* Parse a subcommand's options with getopt_long(3) (getopt's own messages
 * off; `shortopts` starts with ':', and with '+' to stop at the first
 * operand).  -h/--help prints `usage` to stdout; every other option of
 * `longopts` goes to on_opt(ctx, ...) (NULL: the command has none), but
 * CLI_OPT_JSON_ALREADY, which is skipped (CLI_JSON_ALREADY_OPT); an
 * unknown option or a missing value is a usage error (125).  Returns -1
 * when the options are done (optind is the first operand), else the exit
 * status to return. */
/* The longopts entry and --help line of `--json` for a command that prints JSON anyway, so
 * that a script may pass --json to every command. */
#define CLI_JSON_ALREADY_OPT {"json", no_argument, NULL, CLI_OPT_JSON_ALREADY}
#define CLI_JSON_ALREADY_HELP "  --json         accepted, for scripts: the output is JSON already\n"
int cli_parse_opts(const char *cmd, int argc, char **argv, const char *shortopts,
                   const struct option *longopts, const char *usage, cli_opt_fn on_opt,
                   void *ctx);

/* cli_opt_fn of a command whose options are all flags meaning one thing:
 * sets *(bool *) ctx. */
int cli_opt_flag(void *ctx, int code, char *arg);

/* ---- sandbox options (run, shell, python, create) ---------------------------------------- */

/* getopt_long codes of the sandbox flags (beyond any character). */
enum {
  CLI_OPT_IMAGE = 1000, CLI_OPT_PROFILE, CLI_OPT_MEMORY, CLI_OPT_CPUS, CLI_OPT_PIDS,
  CLI_OPT_TMP_SIZE, CLI_OPT_TIMEOUT, CLI_OPT_EXEC_TIMEOUT, CLI_OPT_MAX_OUTPUT, CLI_OPT_MAX_READ,
  CLI_OPT_ENV, CLI_OPT_SECRET, CLI_OPT_WORKDIR, CLI_OPT_NETWORK, CLI_OPT_SECCOMP_PROFILE,
  CLI_OPT_NAME, CLI_OPT_LANDLOCK, CLI_OPT_SECCOMP_UNSAFE, CLI_OPT_TMP_NOEXEC,
  CLI_OPT_DISK, CLI_OPT_INODES,
  CLI_OPT_GPU, CLI_OPT_CDI_SPEC_DIR, CLI_OPT_CDI_ALLOW_HOOKS,   /* CDI devices */
  CLI_OPT_SHM_SIZE,
  CLI_OPT_APPROVE_WITH, CLI_OPT_APPROVAL_TIMEOUT,                 /* approval hooks */
  CLI_OPT_ALLOW, CLI_OPT_DNS_UPSTREAM,                          /* egress */
  CLI_OPT__LAST_SANDBOX,
  /* command-specific flags */
  CLI_OPT_PUT = 1100, CLI_OPT_GET, CLI_OPT_JSON, CLI_OPT_TO, CLI_OPT_SHA256, CLI_OPT_FOLLOW,
  CLI_OPT_ALL,
  CLI_OPT_JSON_ALREADY,   /* --json of a command whose output is JSON anyway: accepted, ignored */
  CLI_OPT_STREAM = 1200, CLI_OPT_STDIN, CLI_OPT_INTERACTIVE, CLI_OPT_TTY,   /* stream.h, exec -i/-t */
};

/* getopt_long entries of the sandbox flags, to splice into a command's table. */
#define CLI_SANDBOX_LONGOPTS                                           \
  {"image", required_argument, NULL, CLI_OPT_IMAGE},                   \
  {"profile", required_argument, NULL, CLI_OPT_PROFILE},               \
  {"memory", required_argument, NULL, CLI_OPT_MEMORY},                 \
  {"cpus", required_argument, NULL, CLI_OPT_CPUS},                     \
  {"pids", required_argument, NULL, CLI_OPT_PIDS},                     \
  {"tmp-size", required_argument, NULL, CLI_OPT_TMP_SIZE},             \
  {"tmp-noexec", no_argument, NULL, CLI_OPT_TMP_NOEXEC},               \
  {"timeout", required_argument, NULL, CLI_OPT_TIMEOUT},               \
  {"exec-timeout", required_argument, NULL, CLI_OPT_EXEC_TIMEOUT},     \
  {"max-output", required_argument, NULL, CLI_OPT_MAX_OUTPUT},         \
  {"max-read", required_argument, NULL, CLI_OPT_MAX_READ},             \
  {"env", required_argument, NULL, CLI_OPT_ENV},                       \
  {"secret", required_argument, NULL, CLI_OPT_SECRET},                 \
  {"workdir", required_argument, NULL, CLI_OPT_WORKDIR},               \
  {"network", required_argument, NULL, CLI_OPT_NETWORK},               \
  {"seccomp-profile", required_argument, NULL, CLI_OPT_SECCOMP_PROFILE}, \
  {"name", required_argument, NULL, CLI_OPT_NAME},                     \
  {"landlock", required_argument, NULL, CLI_OPT_LANDLOCK},             \
  {"seccomp-unsafe", no_argument, NULL, CLI_OPT_SECCOMP_UNSAFE},       \
  {"disk", required_argument, NULL, CLI_OPT_DISK},                     \
  {"inodes", required_argument, NULL, CLI_OPT_INODES},                 \
  {"gpu", required_argument, NULL, CLI_OPT_GPU},                       \
  {"cdi-spec-dir", required_argument, NULL, CLI_OPT_CDI_SPEC_DIR},     \
  {"cdi-allow-hooks", no_argument, NULL, CLI_OPT_CDI_ALLOW_HOOKS},     \
  {"shm-size", required_argument, NULL, CLI_OPT_SHM_SIZE},             \
  {"approve-with", required_argument, NULL, CLI_OPT_APPROVE_WITH},     \
  {"approval-timeout", required_argument, NULL, CLI_OPT_APPROVAL_TIMEOUT}, \
  {"allow", required_argument, NULL, CLI_OPT_ALLOW},                   \
  {"dns-upstream", required_argument, NULL, CLI_OPT_DNS_UPSTREAM}

/* Help text of the sandbox flags. */
extern const char cli_sandbox_opts_help[];

#define CLI_MAX_FLAGS 256

/* Sandbox flags as given, applied after the profile (flags override). */
struct cli_sandbox_flags {
  const char *profile;
  struct { int code; const char *value; } item[CLI_MAX_FLAGS];
  size_t n;
};

/* Record flag `code` (a CLI_OPT_* sandbox code) with its argument.
 * Returns false when `code` is not a sandbox flag. */
bool cli_sandbox_flag(struct cli_sandbox_flags *f, int code, const char *arg);

/* Build the options: defaults, then the profile, then each flag in order.
 * Without --profile and --image the image is "python" (the default image).
 * On a bad value prints "agentnest CMD: --memory 0: ..." and returns 125;
 * else 0 and *out (an_sandbox_opts_free). */
int cli_sandbox_opts(const char *cmd, const struct cli_sandbox_flags *f,
                     struct an_sandbox_opts **out);

/* ---- exec output and results ------------------------------------------------------------- */

/* an_output_data_fn that writes stdout bytes to fd 1 and stderr bytes to fd 2. */
void cli_stream_output(void *data, enum an_stream stream, const char *buf, size_t len);

/* Print the --json result document of an exec to stdout:
 *   {"id","exit_code","signal","timed_out","oom_killed","duration_ms","stdout","stderr",
 *    "stdout_truncated","stderr_truncated","artifacts":[{"path","size","sha256"}]}
 * arts may be NULL (empty list).  Returns 0, or AN_EXIT_RUNTIME after
 * printing why (as cli_print_json). */
int cli_print_result_json(const char *cmd, const char *id, const struct an_exec_result *res,
                          const struct an_artifact_list *arts);

/* Member `k` of an open map: a path named by the user or found in a
 * workspace, as a JSON string with bytes that are not UTF-8 replaced by
 * U+FFFD (an_json_escape_output); NULL writes null. */
void cli_json_kv_path(struct an_jgen *j, const char *k, const char *path);

/* One artifact as a JSON object: {"path","type","size","sha256",["target",]"copied"}
 * (paths as cli_json_kv_path; "target" only with `with_target`, as
 * `artifacts --json` prints it; the exec result's list has none). */
void cli_json_artifact(struct an_jgen *j, const struct an_artifact *a, bool with_target);

/* Finish `j` (an_jgen_finish: the generator is freed either way) and print
 * the document to stdout, with a newline at the end if it has none; flushes
 * stdout.  Returns 0, or AN_EXIT_RUNTIME after printing
 * "agentnest CMD: WHAT: JSON: ENOMEM" (or EINVAL) on stderr. */
int cli_print_json(const char *cmd, struct an_jgen *j, const char *what);

/* Parse a "K=V" --env argument for an exec into a growing NULL-terminated
 * array (borrowed strings).  Returns 125 with a message when malformed. */
int cli_env_add(const char *cmd, char ***env, size_t *n, const char *kv);

/* ---- sandbox id / workspace paths -------------------------------------------------------- */

/* Split "ID:PATH" (PATH relative to /workspace; a leading "/workspace/" is
 * accepted and stripped).  Returns false if `s` has no "ID:" prefix. */
bool cli_split_sandbox_path(const char *s, char **id, const char **path);

#endif
