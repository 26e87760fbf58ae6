/* tests/lib/cli_fixture.h — the black-box driver of the built `agentnest`
 * binary that CLI tests share: one state root per test run
 * (/tmp/an-<tag>-<runner pid>; criterion forks each test from the runner),
 * a scratch directory per test (/tmp/an-<tag>-<runner>-<test pid>), images
 * imported once per run from the `make images` cache ($AN_IMAGE_CACHE, else
 * /var/cache/agentnest/images; the test is skipped when the image is
 * missing), and `an_cli_run()` which runs one command line and keeps its
 * stdout/stderr.  Not thread-safe (one test per process, as criterion runs
 * them).  Every helper that can fail asserts. */
#ifndef AN_TEST_CLI_FIXTURE_H
#define AN_TEST_CLI_FIXTURE_H

#include <limits.h>
#include <sys/types.h>
#include <yajl/yajl_tree.h>

struct an_cli_fixture {
  char bin[PATH_MAX];      /* realpath of $AN_TEST_BUILD/agentnest */
  char root[256];          /* the run's state root (--root) */
  char work[256];          /* this test's scratch dir (cwd of every command) */
  char out_path[300], err_path[300];
  char *out, *err;         /* stdout/stderr of the last an_cli_run (heap, NUL-terminated) */
};
extern struct an_cli_fixture an_cli;

/* .init of a CLI suite: find the binary, export AGENTNEST_PROFILES (the
 * source tree's profiles/), make the run's root and this test's work dir
 * (mode `work_mode`). */
void an_cli_setup(const char *tag, mode_t work_mode);
/* .fini: free the captured output and remove the work dir. */
void an_cli_teardown(void);
/* From a ReportHook(POST_ALL): prune and remove the run's root (the runner's
 * pid names it).  Best effort, no assertion. */
void an_cli_remove_root(const char *tag);
/* Import image `name` from the cache into the root once per run (a stamp
 * file records it); skips the test when the cache lacks it. */
void an_cli_import(const char *name);
/* The cache directory holding image `name`'s OCI layout, into buf. */
const char *an_cli_image_layout(const char *name, char *buf, size_t len);

/* Run `cd WORK && agentnest --root ROOT <printf args>` through sh; stdout
 * and stderr land in an_cli.out / an_cli.err.  Returns the exit status. */
int an_cli_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same in another store (NULL: an_cli.root), with `child_hook` (may be
 * NULL) called in the forked child before sh is executed — to drop to
 * another user, add a seccomp filter, ...; a non-zero return ends the child
 * with status 99.  The output files are made 0666 first so that a child
 * that became another user can write them. */
int an_cli_run_with(int (*child_hook)(void), const char *store, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/* Parse JSON text (asserts it is JSON; free with yajl_tree_free). */
yajl_val an_cli_json(const char *text);
/* Member `key` of object v of type t, or NULL. */
yajl_val an_cli_jget(yajl_val v, const char *key, yajl_type t);
/* The string of a JSON value, "" when it is not a string. */
const char *an_cli_jstr(yajl_val v);
/* Strip trailing newlines in place. */
void an_cli_chomp(char *s);

/* Short names for the driver, for the CLI tests written before it
 * (cli_test.c, cli_io_test.c): define AN_CLI_SHORT_NAMES before including
 * this header to get them. */
#ifdef AN_CLI_SHORT_NAMES
#define an an_cli_run
#define out_text (an_cli.out)
#define err_text (an_cli.err)
#define root (an_cli.root)
#define work (an_cli.work)
#define an_bin (an_cli.bin)
#define parse_json an_cli_json
#define jget an_cli_jget
#define jstr an_cli_jstr
#define chomp an_cli_chomp
#define import_image an_cli_import
#define err_path (an_cli.err_path)
#endif

#endif
