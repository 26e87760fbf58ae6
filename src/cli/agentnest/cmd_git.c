/* cli/agentnest/cmd_git.c — `agentnest git diff ID [--path DIR] [--to FILE]
 * [--timeout DURATION]`: the patch of a workspace repository, made by git
 * inside the sandbox (an_sandbox_git_diff, agentnest/git.h), written to
 * stdout or FILE.  The host never runs git on the workspace. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agentnest/git.h"
#include "agentnest/sandbox.h"
#include "cli.h"
#include "util/cleanup.h"
#include "util/units.h"

static const char git_usage[] =
    "Usage: agentnest git diff ID [--path DIR] [--to FILE] [--timeout DURATION]\n"
    "\n"
    "Print a patch of the git repository in the workspace of sandbox ID: its changes against\n"
    "HEAD, staged or not, with new files not ignored by .gitignore, binary files included\n"
    "(`git diff --binary` of a temporary index; the repository's own index is unchanged).\n"
    "Paths are relative to the repository's top directory: `git apply FILE` in a clone at\n"
    "the same commit recreates the change.  git runs INSIDE the sandbox, with overrides that\n"
    "keep the repository's config from running programs (core.fsmonitor=false, no hooks, no\n"
    "pager, no external diff or textconv, no transport); the host never runs git on it.\n"
    "Secrets of the sandbox are redacted in the patch, as in all output.\n"
    "\n"
    "  --path DIR           the repository, relative to /workspace (default: /workspace)\n"
    "  --to FILE            write the patch to FILE (created or replaced) instead of stdout\n"
    "  --timeout DURATION   timeout of the git run (default: the sandbox's --exec-timeout)\n"
    "  -h, --help           this help\n"
    "\n"
    "The patch is capped by the sandbox's --max-output.  Exit status 0, or 125 with the\n"
    "reason (no such sandbox, no git in its image, not a repository, patch too large).\n";

struct git_flags {
  const char *cmd, *path, *to;
  uint64_t timeout_ms;
};

static int git_opt(void *ctx, int code, char *arg) {
  struct git_flags *f = ctx;
  if (code == CLI_OPT_TO) f->to = arg;
  else if (code == CLI_OPT_WORKDIR) f->path = arg;
  else if (code == CLI_OPT_TIMEOUT) {
    an_error_t err = NULL;
    if (an_parse_duration_ms(arg, &f->timeout_ms, &err) < 0 || f->timeout_ms == 0) {
      if (!err) an_error_set(&err, EINVAL, "must be more than 0");
      an_error_prefix(&err, "--timeout %s", arg);
      return cli_fail(f->cmd, &err);
    }
  }
  return -1;
}

static int write_patch(const char *cmd, const char *to, const char *patch, size_t len) {
  cleanup_close int fd = to ? open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644) : 1;
  if (fd < 0) {
    fprintf(stderr, "agentnest %s: open %s: %s\n", cmd, to, strerror(errno));
    return AN_EXIT_RUNTIME;
  }
  for (size_t off = 0; off < len;) {
    ssize_t w = write(fd, patch + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      fprintf(stderr, "agentnest %s: write %s: %s\n", cmd, to ? to : "stdout", strerror(errno));
      if (!to) fd = -1;
      return AN_EXIT_RUNTIME;
    }
    off += (size_t) w;
  }
  if (!to) fd = -1;   /* stdout stays open */
  return 0;
}

int cmd_git(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {{"path", required_argument, NULL, CLI_OPT_WORKDIR},
                                           {"to", required_argument, NULL, CLI_OPT_TO},
                                           {"timeout", required_argument, NULL, CLI_OPT_TIMEOUT},
                                           {"help", no_argument, NULL, 'h'},
                                           {0}};
  const char *cmd = "git";
  if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    fputs(git_usage, stdout);
    return 0;
  }
  if (argc < 2) return cli_usage_error(cmd, "no git command given (agentnest git diff ID)");
  if (strcmp(argv[1], "diff") != 0)
    return cli_usage_error(cmd, "unknown git command '%s' (only 'diff')", argv[1]);
  cmd = "git diff";
  struct git_flags f = {.cmd = cmd};
  /* ID may come before or after the options */
  int r = cli_parse_opts(cmd, argc - 1, argv + 1, ":h", longopts, git_usage, git_opt, &f);
  if (r >= 0) return r;
  if (optind >= argc - 1) return cli_usage_error(cmd, "no sandbox ID given");
  if (optind + 1 < argc - 1) return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind + 2]);
  const char *id = argv[optind + 1];
  an_error_t err = NULL;
  struct an_sandbox *sb = NULL;
  if (an_sandbox_open_ctx(cli_ctx(), g->root, id, &sb, &err) < 0) return cli_fail(cmd, &err);
  struct an_git_diff_opts o = {.path = f.path, .timeout_ms = f.timeout_ms};
  cleanup_free char *patch = NULL;
  size_t len = 0;
  r = an_sandbox_git_diff(sb, &o, &patch, &len, &err);
  an_sandbox_close(sb);
  if (r < 0) return cli_fail(cmd, &err);
  return write_patch(cmd, f.to, patch, len);
}
