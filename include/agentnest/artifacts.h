/* agentnest/artifacts.h — list (and optionally copy out) the files a job
 * left in its workspace, selected by globs, with size and sha256 computed on
 * the host (case BL-26).
 *
 * Globs are matched per path component with fnmatch(3) (flags 0: `*`, `?`
 * and `[...]` never match '/', and do match a leading '.'); a component that
 * is exactly `**` matches zero or more whole components.  Examples:
 * "out" + "/" + "**" (everything under out), "**" + "/" + "*.txt" (every
 * .txt at any depth), "build" + "/" + "*.whl" (written split here only
 * because a C comment cannot hold those characters in a row).
 *
 * The walk starts at the workspace fd and descends only through directories
 * opened with openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS (util/safe_path),
 * and only into directories some glob can still match below, so:
 *  - symlinks are never followed: a matching symlink is reported with kind
 *    AN_ARTIFACT_SYMLINK and its target string, never hashed or copied
 *    (or skipped with a warning if skip_symlinks);
 *  - the walk terminates on symlink loops (`loop -> .`) and never opens a
 *    file outside the workspace;
 *  - FIFOs, sockets and devices are skipped with a warning without being
 *    opened; sizes and digests come from reading the file through an fd the
 *    host opened, so the sandbox cannot forge them.
 *
 * Thread-safety: no global state; every function may be called from
 * several threads at once (an_artifacts_collect each with its own copy
 * destination).
 */
#ifndef AGENTNEST_ARTIFACTS_H
#define AGENTNEST_ARTIFACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "agentnest/error.h"
#include "agentnest/files.h"

#ifdef __cplusplus
extern "C" {
#endif

enum an_artifact_kind { AN_ARTIFACT_FILE = 0, AN_ARTIFACT_SYMLINK = 1 };

struct an_artifact {
  char *path;               /* relative to the workspace, '/'-separated */
  enum an_artifact_kind kind;
  uint64_t size;            /* file: bytes read and hashed; symlink: 0 */
  char sha256[65];          /* file: lowercase hex sha256 of those bytes; symlink: "" */
  char *link_target;        /* symlink: its target string (not resolved); file: NULL */
  mode_t mode;              /* permission bits (& 0777) */
  bool copied;              /* file copied to opts->to_dir */
};

struct an_artifact_list {
  struct an_artifact *items; /* in walk order (names sorted byte-wise per directory) */
  size_t n;
};

/* Options; a zero struct (or NULL) lists only, 64 MiB per-file cap, symlinks
 * reported, warnings dropped. */
struct an_artifact_opts {
  const char *to_dir;       /* host directory to copy matched files into (created if
                               missing, parent must exist), keeping relative paths;
                               each file written atomically; NULL = list only */
  uint64_t max_bytes;       /* per-file cap; 0 = AN_FILE_DEFAULT_MAX_BYTES.  Larger
                               files are skipped with a warning */
  bool skip_symlinks;       /* skip matching symlinks with a warning instead of listing */
  an_warn_fn warn;
  void *warn_data;
  uint64_t max_total_bytes; /* cap on the sum of the sizes of the files hashed (and
                               copied), logical (holes count); 0 =
                               AN_TREE_DEFAULT_MAX_BYTES; over it: -EFBIG */
  uint64_t max_entries;     /* cap on the entries walked (also bounds the list and
                               the memory it takes); 0 = AN_TREE_DEFAULT_MAX_ENTRIES;
                               over it: -E2BIG */
};

/* Check one glob: non-empty, relative, no `..` component.  Returns 0,
 * -EINVAL (empty) or -EXDEV (absolute or `..`: "pattern escapes workspace"). */
int an_glob_check(const char *pattern, an_error_t *err);

/* Whether the relative path `path` matches `pattern` (rules above).  Both
 * are split on '/'; empty and "." components are ignored. */
bool an_glob_match(const char *pattern, const char *path);

/* Collect the regular files and symlinks under the workspace matching any
 * of `globs` (nglobs == 0 means "**": everything).  Fills *out (free with
 * an_artifact_list_free; left empty on error).  Returns 0, or -EINVAL/-EXDEV
 * for a bad glob (named), -ELOOP for nesting deeper than 256, or the errno
 * of a failing directory read or copy (named). */
int an_artifacts_collect(int ws_dirfd, const char *const *globs, size_t nglobs,
                         const struct an_artifact_opts *opts, struct an_artifact_list *out,
                         an_error_t *err);

/* Free every item and the array; zero *l.  NULL allowed. */
void an_artifact_list_free(struct an_artifact_list *l);

#ifdef __cplusplus
}
#endif
#endif
