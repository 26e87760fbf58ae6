/* cli/agentnest/cmd_artifacts.c — `agentnest artifacts ID [GLOB...] [--to
 * DIR]`: the regular files of a workspace matching globs (`**` spans
 * directories), with size and sha256 computed on the host; copied to DIR
 * with --to.  Symlinks are listed, never followed. */
#include <stdio.h>
#include <string.h>
#include "agentnest/sandbox.h"
#include "cli.h"
#include "util/quote.h"

static const char artifacts_usage[] =
    "Usage: agentnest artifacts ID [GLOB...] [--to DIR] [--json]\n"
    "\n"
    "List the files in the workspace of sandbox ID that match any GLOB (default `**`: all).\n"
    "`*`, `?`, `[...]` match within one path component; a component `**` matches any number\n"
    "of components.  Size and sha256 are computed on the host from the file itself.  Symlinks\n"
    "are listed with their target and never followed.  Table: SHA256 SIZE PATH.\n"
    "  --to DIR     also copy the matching files into host DIR, keeping their relative paths\n"
    "  --json       a JSON array of {\"path\",\"type\",\"size\",\"sha256\",\"target\",\"copied\"}\n"
    "  -h, --help   this help\n";

static void warn_stderr(void *data, const char *msg) {
  fprintf(stderr, "agentnest %s: warning: %s\n", (const char *) data, msg);
}

struct artifacts_flags {
  const char *to;
  bool json;
};

static int artifacts_opt(void *ctx, int code, char *arg) {
  struct artifacts_flags *f = ctx;
  if (code == CLI_OPT_TO) f->to = arg;
  else f->json = true;
  return -1;
}

int cmd_artifacts(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {{"to", required_argument, NULL, CLI_OPT_TO},
                                           {"json", no_argument, NULL, CLI_OPT_JSON},
                                           {"help", no_argument, NULL, 'h'},
                                           {0}};
  const char *cmd = argv[0];
  struct artifacts_flags f = {.json = g->json};
  int r = cli_parse_opts(cmd, argc, argv, ":h", longopts, artifacts_usage, artifacts_opt, &f);
  if (r >= 0) return r;
  const char *to = f.to;
  bool json = f.json;
  if (optind >= argc) return cli_usage_error(cmd, "no sandbox ID given");
  const char *id = argv[optind];
  const char *const *globs = (const char *const *) argv + optind + 1;
  size_t nglobs = (size_t) (argc - optind - 1);
  an_error_t err = NULL;
  for (size_t i = 0; i < nglobs; i++)
    if (an_glob_check(globs[i], &err) < 0) return cli_fail(cmd, &err);
  struct an_sandbox *sb = NULL;
  if (an_sandbox_open_ctx(cli_ctx(), g->root, id, &sb, &err) < 0) return cli_fail(cmd, &err);
  struct an_artifact_opts ao = {.to_dir = to, .warn = warn_stderr, .warn_data = (void *) cmd};
  struct an_artifact_list l = {0};
  r = an_sandbox_artifacts(sb, globs, nglobs, &ao, &l, &err);
  an_sandbox_close(sb);
  if (r < 0) return cli_fail(cmd, &err);
  int status = 0;
  if (json) {
    cleanup_jgen struct an_jgen j;
    if (an_jgen_init(&j, true) == 0) {
      an_jgen_array_open(&j);
      for (size_t i = 0; i < l.n; i++) cli_json_artifact(&j, &l.items[i], true);
      an_jgen_array_close(&j);
    }
    status = cli_print_json(cmd, &j, "artifact list");   /* also reports a failed an_jgen_init */
  } else {
    for (size_t i = 0; i < l.n; i++) {
      const struct an_artifact *a = &l.items[i];
      if (a->kind == AN_ARTIFACT_SYMLINK)
        printf("%-64s %10s %s -> %s\n", "-", "symlink", AN_QUOTED(a->path), AN_QUOTED(a->link_target));
      else
        printf("%s %10llu %s\n", a->sha256, (unsigned long long) a->size, AN_QUOTED(a->path));
    }
  }
  an_artifact_list_free(&l);
  return status;
}
