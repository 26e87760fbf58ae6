/* agentnest/git.h — Git work in a sandbox, seen from the host: a patch of a
 * workspace repository, made by git INSIDE the sandbox (`agentnest git
 * diff`).  The host never runs git on a workspace: a repository there is
 * sandbox-controlled data, and its config (core.fsmonitor, core.sshCommand,
 * core.pager, diff.external, filters), hooks and attributes name programs
 * that git would run.  What comes back is text the host can check and
 * apply (`git apply`, which refuses paths outside its tree and beyond
 * symlinks), not a repository. */
#ifndef AGENTNEST_GIT_H
#define AGENTNEST_GIT_H

#include <stddef.h>
#include <stdint.h>
#include "agentnest/error.h"

struct an_sandbox;

struct an_git_diff_opts {
  const char *path;       /* the repository (or a directory in it), relative to
                             /workspace: no leading '/', no "." or ".." component;
                             NULL or "" = /workspace itself */
  uint64_t timeout_ms;    /* 0: the sandbox's exec timeout (at most its lifetime) */
  size_t max_bytes;       /* largest patch; 0: the sandbox's max_output */
};

/* The changes of the repository at /workspace/<path> against its HEAD (the
 * empty tree when it has no commit yet), staged or not, new files (not
 * ignored by .gitignore) included, as one `git diff --binary --full-index`
 * patch (git-diff(1)'s format) relative to the repository's top directory,
 * so that `git apply` (or `git apply --index`) in a clone at the same HEAD
 * recreates them.
 * The repository's own index is not changed (a temporary index in the
 * sandbox's /tmp is used).
 *
 * Runs one exec in the sandbox (uid 65532, its limits, no terminal) of git
 * with overrides that keep the repository's config from running programs:
 * core.fsmonitor=false, core.hooksPath=/dev/null, core.pager=cat,
 * diff.external unset, --no-ext-diff, --no-textconv, protocol.allow=never
 * (no lazy fetch of a partial clone), no system or global config, no
 * colour, no diff prefix options.  Clean filters named by the repository's
 * .gitattributes still run, inside the sandbox only.  The patch is
 * captured like any exec output: the sandbox's secrets are redacted in it.
 *
 * *patch (heap, NUL-terminated; caller frees) and *len receive the patch;
 * empty when nothing changed.
 * Errors: -EINVAL bad path; -ENOENT the image has no git (exit 127: use an
 * image with git, the git profile's debian); -ENOTDIR path is not in a git
 * work tree; -EFBIG the patch is larger than max_bytes; -ETIMEDOUT the exec
 * timed out; -EIO git failed otherwise (the message quotes its last stderr
 * line, control bytes escaped); exec errors (agentnest/sandbox.h:
 * an_sandbox_exec).
 * Thread-safety: as an_sandbox_exec (one process, not concurrently on one
 * sandbox object). */
int an_sandbox_git_diff(struct an_sandbox *sb, const struct an_git_diff_opts *opts, char **patch,
                        size_t *len, an_error_t *err);

#endif
