/* cli/agentnest/cmd_snapshot.c — `agentnest snapshot ID FILE.tar` (a pax tar
 * of the workspace at one point in time; prints size and sha256) and
 * `agentnest restore ID FILE.tar [--sha256 HEX]` (verify, refuse hostile
 * entries, replace the workspace atomically). */
#include <stdio.h>
#include <string.h>
#include "agentnest/sandbox.h"
#include "cli.h"

static const char snapshot_usage[] =
    "Usage: agentnest snapshot ID FILE.tar\n"
    "\n"
    "Write the workspace of sandbox ID to FILE.tar (pax format; the sandbox is frozen while\n"
    "it is read, so the tar is one point in time; the file appears atomically, mode 0600).\n"
    "Prints \"<size> sha256:<hex> FILE.tar\"; with --json {\"path\",\"size\",\"sha256\",\"entries\"}.\n"
    "  --json       JSON output\n"
    "  -h, --help   this help\n";

static const char restore_usage[] =
    "Usage: agentnest restore ID FILE.tar [--sha256 HEX]\n"
    "\n"
    "Replace the workspace of sandbox ID with the content of FILE.tar.  Entries that are\n"
    "absolute, contain `..`, pass through symlinks, or are devices, FIFOs or hard links out\n"
    "of the tree are refused (the error names the entry); the workspace changes atomically\n"
    "and is unchanged on any error.\n"
    "  --sha256 HEX   refuse the tar unless its sha256 is HEX (64 hex digits; a\n"
    "                 \"sha256:\" prefix is accepted)\n"
    "  -h, --help     this help\n";

/* What the snapshot left out (names already quoted by the library). */
static void warn_stderr(void *data, const char *msg) {
  fprintf(stderr, "agentnest %s: warning: %s\n", (const char *) data, msg);
}

int cmd_snapshot(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, CLI_OPT_JSON}, {"help", no_argument, NULL, 'h'}, {0}};
  const char *cmd = argv[0];
  bool json = g->json;
  int r = cli_parse_opts(cmd, argc, argv, ":h", longopts, snapshot_usage, cli_opt_flag, &json);
  if (r >= 0) return r;
  if (argc - optind != 2) return cli_usage_error(cmd, "expected ID FILE.tar");
  if (!strcmp(argv[optind + 1], "-"))
    return cli_usage_error(cmd, "'-' (the tar on stdout) is not supported: name a file (a file named - is ./-)");
  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  if (an_sandbox_open_ctx(cli_ctx(), g->root, argv[optind], &sb, &err) < 0) return cli_fail(cmd, &err);
  struct an_snapshot_info info = {0};
  r = an_sandbox_snapshot_warn(sb, argv[optind + 1], &info, warn_stderr, (void *) cmd, &err);
  an_sandbox_close(sb);
  if (r < 0) return cli_fail(cmd, &err);
  if (!json) {
    printf("%llu sha256:%s %s\n", (unsigned long long) info.size, info.sha256, argv[optind + 1]);
    return 0;
  }
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, false) < 0) return cli_print_json(cmd, &j, "snapshot report");   /* ENOMEM */
  an_jgen_map_open(&j);
  cli_json_kv_path(&j, "path", argv[optind + 1]);
  an_jgen_kv_u64(&j, "size", info.size);
  an_jgen_kv_str(&j, "sha256", info.sha256);
  an_jgen_kv_u64(&j, "entries", info.entries);
  an_jgen_map_close(&j);
  return cli_print_json(cmd, &j, "snapshot report");
}

struct restore_flags {
  const char *cmd;
  const char *sha;
};

static int restore_opt(void *ctx, int code, char *arg) {
  struct restore_flags *f = ctx;
  f->sha = !strncmp(arg, "sha256:", 7) ? arg + 7 : arg;
  size_t n = strspn(f->sha, "0123456789abcdefABCDEF");
  if (n != 64 || f->sha[n]) return cli_usage_error(f->cmd, "--sha256 %s: expected 64 hex digits", arg);
  return -1;
}

int cmd_restore(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      {"sha256", required_argument, NULL, CLI_OPT_SHA256}, {"help", no_argument, NULL, 'h'}, {0}};
  const char *cmd = argv[0];
  struct restore_flags f = {.cmd = cmd};
  int r = cli_parse_opts(cmd, argc, argv, ":h", longopts, restore_usage, restore_opt, &f);
  if (r >= 0) return r;
  const char *sha = f.sha;
  if (argc - optind != 2) return cli_usage_error(cmd, "expected ID FILE.tar");
  if (!strcmp(argv[optind + 1], "-"))
    return cli_usage_error(cmd, "'-' (the tar on stdin) is not supported: name a file (a file named - is ./-)");
  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  if (an_sandbox_open_ctx(cli_ctx(), g->root, argv[optind], &sb, &err) < 0) return cli_fail(cmd, &err);
  r = an_sandbox_restore(sb, argv[optind + 1], sha, &err);
  an_sandbox_close(sb);
  if (r < 0) return cli_fail(cmd, &err);   /* the message names the sandbox and the file */
  return 0;
}
