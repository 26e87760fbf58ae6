/* tests/lib/batch_fixture.h — what the `agentnest batch` tests share
 * (tests/integration/batch_test.c, batch_crash_test.c): a store per test
 * (/tmp/an-batch-<runner>-<test pid>, busybox imported from the `make
 * images` cache, skipped without it) and its scratch dir, running the
 * built agentnest (bf_an(), bf_start_batch()), reading results files, and the
 * host check that nothing of the store is left.  The helpers assert
 * (criterion), so they run only inside a test or its .init/.fini. */
#ifndef AN_TEST_BATCH_FIXTURE_H
#define AN_TEST_BATCH_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <yajl/yajl_tree.h>

extern char bf_an_bin[4096];
extern char bf_root[256];   /* this test's store */
extern char bf_work[300];   /* this test's scratch dir (cwd of the commands) */
extern char *bf_out, *bf_err;   /* stdout and stderr of the last bf_an() */

/* .init / .fini of a batch suite: the store with busybox, the scratch dir;
 * removed (pruned) after the test. */
void bf_setup(void);
void bf_teardown(void);
/* Import image NAME from the cache into the store (skips the test without it). */
void bf_import_image(const char *name);

/* Run `agentnest --root STORE <args>` through sh in the scratch dir; its
 * output lands in bf_out/bf_err.  Returns the exit status. */
int bf_an(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same with `cat jobs.jsonl |` (a pipe) on its stdin; sets bf_err. */
int bf_an_pipe(const char *args);
/* Start `agentnest --root STORE batch ARGS...` in the scratch dir, stdout
 * and stderr to .bout/.berr there; bf_wait_status: its exit status (128+N
 * when killed by signal N). */
pid_t bf_start_batch(const char *const *args);
int bf_wait_status(pid_t pid);

/* Files of the scratch dir: write one, read one (heap; "" if missing). */
void bf_write_text(const char *name, const char *text);
char *bf_read_work(const char *name);

/* Members of a parsed record: a string (NULL if not one), an integer
 * (dflt if not one), true. */
const char *bf_jstr(yajl_val v, const char *k);
long long bf_jint(yajl_val v, const char *k, long long dflt);
bool bf_jtrue(yajl_val v, const char *k);
/* Parse a results text: every line must be a JSON object ending in '\n'
 * (asserts); remembers each record's sandbox id for the host check. */
size_t bf_parse_records(const char *text, yajl_val *recs, size_t max);
void bf_free_records(yajl_val *recs, size_t n);
/* The record of job `id` (asserts it is there at most once), or NULL. */
yajl_val bf_find_record(yajl_val *recs, size_t n, const char *id);
void bf_sha256_hex(const char *s, char out[65]);

/* Remember the sandboxes the store holds now (before a prune removes them). */
void bf_remember_store_sandboxes(void);
/* Nothing of this test's store is left on the host once the reapers of its
 * destroyed sandboxes are done (waited for, bounded): no sandbox state, no
 * cgroup of any sandbox it held in any hierarchy, no process started with
 * its --root, no mount under it. */
void bf_assert_nothing_left(void);

#endif
