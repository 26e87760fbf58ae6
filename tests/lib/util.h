/* tests/lib/util.h — the small host-side file and shell helpers every test
 * fixture needs: make directories, write, read and copy a file, run a shell
 * command, remove a test's sandbox store.  Helpers that fail the test on error say so ("asserts"); they
 * call criterion, so they run only inside a test or its .init/.fini.
 * Removing a tree lives in rm_tree.h. */
#ifndef AN_TEST_UTIL_H
#define AN_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* mkdir -p with mode 0755; existing directories are fine (asserts on any
 * other error). */
void an_test_mkdirs(const char *path);

/* Make `path` hold the `len` bytes of `buf` (created or truncated; O_NOFOLLOW:
 * never written through a symlink at `path`), mode exactly `mode` (umask
 * does not apply).  Asserts. */
void an_test_write_file(const char *path, const void *buf, size_t len, mode_t mode);

/* Copy the regular file `from` to a NEW file `to` (O_EXCL|O_NOFOLLOW: never
 * over an existing file or through a planted link), mode exactly `mode`.
 * Asserts. */
void an_test_copy_file(const char *from, const char *to, mode_t mode);

/* The whole content of `path` (heap, NUL-terminated; *len, may be NULL,
 * gets its length), or NULL with errno set if it cannot be read. */
char *an_test_read_file(const char *path, size_t *len);

/* Run `sh -c` on the printf-formatted command; returns its exit status
 * (128+N when killed by signal N).  Quote paths yourself ('%s'). */
int an_test_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Remove a test run's private sandbox store `root` (absolute), if present:
 * wait for its reapers (an_test_wait_reaped), prune every sandbox in it
 * (an_sandbox_prune, all), remove the tree and
 * its lock file "<root>.lock".  Best effort, no assertion: meant for a
 * ReportHook(POST_ALL), after the tests. */
void an_test_store_remove(const char *root);

/* Remove what test processes that are gone left in /tmp: every directory
 * /tmp/<prefix><pid>-* whose <pid> no longer runs (a test binary killed by
 * a timeout or a signal runs no .fini).  `each` (NULL: none) is called on
 * such a directory first, to release what it holds outside /tmp (e.g.
 * containers whose state it keeps).  Directories of live processes are never
 * touched.  Best effort, no assertion. */
void an_test_sweep_stale(const char *prefix, void (*each)(const char *dir));

/* Wait (polling, up to 60 s; the time is not asserted) until the detached
 * reapers of store `root` are done: no entry left in ROOT/sandbox-reaping
 * and no reaper process (comm "agentnest-reap") whose command line names
 * `root`.  Returns whether they are (the caller asserts). */
bool an_test_wait_reaped(const char *root);

/* Fork n children of the calling thread that pause until killed (a
 * server's idle workers), each with a parent-death SIGKILL so that a test
 * that fails leaves none behind; returns their pids (heap, n of them).
 * an_test_idle_end kills and reaps them and frees the array.  Asserts. */
pid_t *an_test_idle_children(size_t n);
void an_test_idle_end(pid_t *pids, size_t n);

#endif
