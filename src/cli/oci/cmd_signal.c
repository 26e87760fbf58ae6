/* cli/oci/cmd_signal.c — `kill` (runtime.md "Kill"), `pause` and `resume`:
 * the commands that signal or freeze a container's processes. */
#include <getopt.h>
#include <signal.h>
#include "agentnest/container.h"
#include "cli/oci/oci.h"
#include "util/cleanup.h"

int oci_cmd_kill(struct oci_ctx *ctx, int argc, char **argv) {
  const struct oci_command *cmd = oci_find_command(argv[0]);
  static const struct option long_opts[] = {
    {"all", no_argument, NULL, 'a'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  bool all = false;
  int c;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+ah", long_opts, NULL)) != -1) {
    if (c == 'a') all = true;
    else if (c == 'h') { oci_print_command_help(cmd, stdout); return 0; }
    else return oci_usage_error(ctx, cmd, "flag provided but not defined: %s", argv[optind - 1]);
  }
  if (oci_check_args(ctx, cmd, argc - optind, 1, 2)) return 1;
  const char *id = argv[optind];
  int sig = SIGTERM;
  if (optind + 1 < argc && (sig = oci_parse_signal(argv[optind + 1])) < 0)
    return oci_fail(ctx, "unknown signal \"%s\"", argv[optind + 1]);
  if (oci_require_container(ctx, id)) return 1;
  cleanup_error an_error_t err = NULL;
  if (an_container_kill(ctx->root, id, sig, all, &err) < 0) return oci_fail_error(ctx, &err);
  return 0;
}

int oci_cmd_pause(struct oci_ctx *ctx, int argc, char **argv) {
  const char *id;
  int r = oci_id_only_args(ctx, argc, argv, &id);
  if (r) return r == -2 ? 0 : 1;
  cleanup_error an_error_t err = NULL;
  if (an_container_pause(ctx->root, id, &err) < 0) return oci_fail_error(ctx, &err);
  return 0;
}

int oci_cmd_resume(struct oci_ctx *ctx, int argc, char **argv) {
  const char *id;
  int r = oci_id_only_args(ctx, argc, argv, &id);
  if (r) return r == -2 ? 0 : 1;
  cleanup_error an_error_t err = NULL;
  if (an_container_resume(ctx->root, id, &err) < 0) return oci_fail_error(ctx, &err);
  return 0;
}
