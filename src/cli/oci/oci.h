/* cli/oci/oci.h — shared declarations of the runc-compatible front end
 * `agentnest-oci`: the global context (runc's global flags), the command
 * table entry, logging, and small helpers.  The front end only parses
 * arguments, calls libagentnest and prints (DESIGN.md, "Layers"). */
#ifndef AN_CLI_OCI_H
#define AN_CLI_OCI_H

#include <stdbool.h>
#include <stdio.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"
#include "util/json_gen.h"

#define OCI_PROG "agentnest-oci"
#define OCI_DEFAULT_ROOT "/run/agentnest-oci"
#define OCI_SPEC_VERSION "1.2.0"

enum oci_log_format { OCI_LOG_TEXT, OCI_LOG_JSON };

/* runc's global flags. */
struct oci_ctx {
  const char *root;             /* --root: state directory */
  const char *log_path;         /* --log: NULL = stderr */
  FILE *log;                    /* opened --log file, or NULL */
  enum oci_log_format log_format;
  bool debug;                   /* --debug */
};

struct oci_command {
  const char *name;
  int (*run)(struct oci_ctx *ctx, int argc, char **argv);   /* argv[0] = command name */
  const char *usage;            /* "[command options] <container-id>" */
  const char *summary;          /* one line for the command list */
  const char *help;             /* DESCRIPTION and OPTIONS text for `CMD --help` */
};

/* The two tables (STYLE.md, after youki): OCI runtime-spec commands
 * (runtime.md "Operations") and runc's extras.  NULL-name terminated. */
extern const struct oci_command oci_standard_commands[];
extern const struct oci_command oci_extra_commands[];

/* --- logging (log.c) ------------------------------------------------------ */
/* Log a message at "debug", "info", "warning" or "error" level to the --log
 * file (or stderr when none), as runc's logrus does: text
 * `time="..." level=error msg="..."` or JSON {"level","msg","time"}.
 * Debug messages are written only with --debug. */
void oci_log(struct oci_ctx *ctx, const char *level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Report a failure like runc's fatal(): to the log, and, when the log is a
 * file, also "agentnest-oci: <msg>" to stderr.  Returns 1 (the exit status). */
int oci_fail(struct oci_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* oci_fail with an error's message; frees *err. */
int oci_fail_error(struct oci_ctx *ctx, an_error_t *err);

/* Usage error: "Incorrect Usage: <why>" then the command's help on stderr,
 * the error logged.  Returns 1. */
int oci_usage_error(struct oci_ctx *ctx, const struct oci_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Print `CMD --help` text to `out`. */
void oci_print_command_help(const struct oci_command *cmd, FILE *out);

/* Find a command by name in both tables; NULL if none. */
const struct oci_command *oci_find_command(const char *name);

/* --- helpers (util.c) ----------------------------------------------------- */
/* Check that container `id` exists under ctx->root; if not, reports
 * `container "<id>" does not exist` and returns 1; 0 if it exists. */
int oci_require_container(struct oci_ctx *ctx, const char *id);

/* For commands taking exactly one container id and only --help: parse,
 * check the id exists.  Returns 0 with *id set, -2 after printing help, -1
 * after reporting an error. */
int oci_id_only_args(struct oci_ctx *ctx, int argc, char **argv, const char **id);

/* The number of positional arguments must be in [min, max] (max < 0: no
 * limit); reports runc's message otherwise and returns 1. */
int oci_check_args(struct oci_ctx *ctx, const struct oci_command *cmd, int nargs, int min, int max);

/* Parse a signal: a number, or a name with or without "SIG" in any case
 * ("KILL", "sigkill", "9").  Returns the number or -1. */
int oci_parse_signal(const char *s);

/* Parse a non-negative decimal int; -1 if it is not one. */
int oci_parse_uint(const char *s);

/* Load `<bundle>/config.json`. */
int oci_load_bundle_spec(const char *bundle, struct an_spec **spec, an_error_t *err);

/* --- JSON output (json.c; documents are written with util/json_gen) --------- */
/* an_jgen_init, compact or (`pretty`) indented by two spaces like Go's
 * json.MarshalIndent.  Returns 0 or -ENOMEM. */
int oci_json_init(struct an_jgen *j, bool pretty);
/* Finish j and write the document and a newline to stdout, empty arrays and
 * maps as Go writes them ("[]").  Returns 0, the negative errno of
 * an_jgen_finish (-ENOMEM, -EINVAL), or -EIO when stdout cannot be flushed. */
int oci_json_print(struct an_jgen *j);
/* Re-indent a JSON document (runc prints `state` indented). */
int oci_json_reprint(const char *json, FILE *out, an_error_t *err);

/* --- commands ---------------------------------------------------------------- */
int oci_cmd_create(struct oci_ctx *ctx, int argc, char **argv);
int oci_cmd_start(struct oci_ctx *ctx, int argc, char **argv);
int oci_cmd_state(struct oci_ctx *ctx, int argc, char **argv);
int oci_cmd_kill(struct oci_ctx *ctx, int argc, char **argv);
int oci_cmd_delete(struct oci_ctx *ctx, int argc, char **argv);
int oci_cmd_run(struct oci_ctx *ctx, int argc, char **argv);
int oci_cmd_exec(struct oci_ctx *ctx, int argc, char **argv);
int oci_cmd_list(struct oci_ctx *ctx, int argc, char **argv);
int oci_cmd_ps(struct oci_ctx *ctx, int argc, char **argv);
int oci_cmd_pause(struct oci_ctx *ctx, int argc, char **argv);
int oci_cmd_resume(struct oci_ctx *ctx, int argc, char **argv);
int oci_cmd_spec(struct oci_ctx *ctx, int argc, char **argv);
int oci_cmd_features(struct oci_ctx *ctx, int argc, char **argv);
int oci_cmd_update(struct oci_ctx *ctx, int argc, char **argv);

#endif
