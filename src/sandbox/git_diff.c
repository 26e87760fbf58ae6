/* sandbox/git_diff.c — an_sandbox_git_diff (agentnest/git.h): a patch of a
 * workspace repository made by git inside the sandbox, with the overrides
 * that keep the repository's own config from running programs.  The host
 * side only checks the path it passes and reads the exec's stdout; it never
 * runs git on the workspace. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/git.h"
#include "agentnest/sandbox.h"
#include "agentnest/sandbox_opts.h"
#include "util/quote.h"

/* Exit codes of the script below beyond git's own. */
enum { GIT_DIFF_NO_DIR = 3, GIT_DIFF_NOT_REPO = 4, GIT_DIFF_NO_GIT = 127 };

/* Run by `sh -c SCRIPT sh PATH` as the sandbox user.  No system or global
 * config; the -c overrides beat the repository's .git/config.  The
 * repository's index stays as it is: the patch is made from a temporary
 * index (HEAD, then `add -A`: tracked changes, deletions and new files not
 * ignored). */
static const char git_diff_script[] =
    "set -eu\n"
    "command -v git >/dev/null 2>&1 || { echo 'git: not found in the sandbox image' >&2; exit 127; }\n"
    "cd -- \"$1\" 2>/dev/null || { echo \"no such directory: /workspace/$1\" >&2; exit 3; }\n"
    "unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES \\\n"
    "  GIT_EXTERNAL_DIFF GIT_DIFF_OPTS GIT_CONFIG GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT GIT_NAMESPACE\n"
    "export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_PAGER=cat PAGER=cat \\\n"
    "  GIT_OPTIONAL_LOCKS=0 GIT_TERMINAL_PROMPT=0 LC_ALL=C\n"
    "g() {\n"
    "  git -c core.fsmonitor=false -c core.untrackedCache=false -c core.hooksPath=/dev/null \\\n"
    "    -c core.pager=cat -c diff.external= -c protocol.allow=never -c color.ui=false \\\n"
    "    -c core.quotePath=true -c diff.noprefix=false -c diff.mnemonicPrefix=false \\\n"
    "    -c diff.relative=false -c diff.renames=false -c core.autocrlf=false \\\n"
    "    -c core.safecrlf=false -c core.sshCommand=false \"$@\"\n"
    "}\n"
    "top=$(g rev-parse --show-toplevel 2>/dev/null) || { echo \"not in a git work tree: /workspace/$1\" >&2; exit 4; }\n"
    "cd -- \"$top\"\n"
    "tmp=$(mktemp -d /tmp/agentnest-git-diff.XXXXXX)\n"
    "trap 'rm -rf \"$tmp\"' EXIT\n"
    "export GIT_INDEX_FILE=\"$tmp/index\"\n"
    "if g rev-parse -q --verify HEAD >/dev/null; then g read-tree HEAD; else g read-tree --empty; fi\n"
    "g add -A\n"
    "g diff --cached --binary --full-index --no-ext-diff --no-textconv --no-color\n";

/* A relative path with no empty, "." or ".." component (a lone "." is the
 * workspace).  The exec runs inside the sandbox, so this guards the
 * meaning of the argument, not the host. */
static bool valid_repo_path(const char *p) {
  if (!*p || strcmp(p, ".") == 0) return true;
  if (p[0] == '/') return false;
  for (const char *c = p; *c;) {
    size_t n = strcspn(c, "/");
    if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.')) return false;
    c += n;
    if (*c == '/') c++;
  }
  return p[strlen(p) - 1] != '/';
}

/* The last non-empty line of git's stderr, escaped (a hostile repository
 * chooses it), for the message. */
static const char *last_line(const struct an_output *o, char *buf, size_t size) {
  size_t end = o->stderr_len;
  while (end > 0 && (o->stderr_buf[end - 1] == '\n' || o->stderr_buf[end - 1] == '\r')) end--;
  size_t start = end;
  while (start > 0 && o->stderr_buf[start - 1] != '\n') start--;
  size_t n = end - start < size - 1 ? end - start : size - 1;
  if (n) memcpy(buf, o->stderr_buf + start, n);
  buf[n] = '\0';
  return buf;
}

int an_sandbox_git_diff(struct an_sandbox *sb, const struct an_git_diff_opts *opts, char **patch,
                        size_t *len, an_error_t *err) {
  const char *path = opts && opts->path && *opts->path ? opts->path : ".";
  const char *id = an_sandbox_id(sb);
  if (!valid_repo_path(path))
    return an_error_set(err, EINVAL,
                        "git diff: path \"%s\": must be relative to /workspace, without \".\" or \"..\" components",
                        AN_QUOTED(path));
  char *const argv[] = {"sh", "-c", (char *) git_diff_script, "sh", (char *) path, NULL};
  struct an_exec_opts eo = {
      .workdir = "/workspace",
      .timeout_ms = opts ? opts->timeout_ms : 0,
      .max_output = opts ? opts->max_bytes : 0,
  };
  struct an_exec_result res = {0};
  int r = an_sandbox_exec(sb, argv, &eo, &res, err);
  if (r < 0) return an_error_prefix(err, "git diff in sandbox %s", id);
  char line[200];
  if (res.timed_out) r = an_error_set(err, ETIMEDOUT, "git diff in sandbox %s: timed out", id);
  else if (res.output.stdout_truncated || res.output.stderr_truncated)
    r = an_error_set(err, EFBIG, "git diff in sandbox %s: the patch is larger than %zu bytes (--max-output)",
                     id, eo.max_output ? eo.max_output : (size_t) an_sandbox_opts_max_output(an_sandbox_get_opts(sb)));
  else if (res.exit_code == GIT_DIFF_NO_GIT)
    r = an_error_set(err, ENOENT, "git diff in sandbox %s: its image has no git (use an image with git, "
                     "e.g. --profile git)", id);
  else if (res.exit_code == GIT_DIFF_NO_DIR || res.exit_code == GIT_DIFF_NOT_REPO)
    r = an_error_set(err, res.exit_code == GIT_DIFF_NO_DIR ? ENOENT : ENOTDIR, "git diff in sandbox %s: %s", id,
                     AN_QUOTED(last_line(&res.output, line, sizeof line)));
  else if (res.status != 0)
    r = an_error_set(err, EIO, "git diff in sandbox %s: git failed (status %d): %s", id, res.status,
                     AN_QUOTED(last_line(&res.output, line, sizeof line)));
  if (r == 0) {
    *len = res.output.stdout_len;
    *patch = res.output.stdout_buf ? res.output.stdout_buf : strdup("");
    res.output.stdout_buf = NULL;
    if (!*patch) r = an_error_set(err, ENOMEM, "git diff in sandbox %s", id);
  }
  an_exec_result_release(&res);
  return r;
}
