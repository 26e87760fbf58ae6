/* tests/lib/store_fixture.h — what every test of the library API needs
 * before its first sandbox: the environment the library reads
 * (AGENTNEST_INIT from $AN_TEST_BUILD, AGENTNEST_PROFILES from $AN_TEST_SRC,
 * AGENTNEST_IDRANGE_ROOT = the test's store so that its id ranges are its
 * own), a private store directory, and images imported into it from the
 * `make images` cache (/var/cache/agentnest/images).  Call from a suite's
 * .init; helpers skip the test when the build or the cache is missing and
 * assert on other failures.  Not thread-safe (one test per process). */
#ifndef AN_TEST_STORE_FIXTURE_H
#define AN_TEST_STORE_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#define AN_TEST_IMAGE_CACHE "/var/cache/agentnest/images"

/* Export AGENTNEST_INIT and AGENTNEST_PROFILES; when `cli` is not NULL, the
 * realpath of the built `agentnest` goes there (cli_len bytes).  Skips the
 * test when the image cache's busybox or the build is missing. */
void an_test_lib_env(char *cli, size_t cli_len);

/* mkdir `root` (0711, existing is fine) and make it the id-range root. */
void an_test_store_make(const char *root);

/* Import image `name` from the cache into `root` unless it is already
 * there, under the lock file "<root>.lock" (tests of one run share a store).
 * Returns false (nothing asserted) when the cache has no such image and
 * `optional`; otherwise asserts that the import worked. */
bool an_test_store_image(const char *root, const char *name, bool optional);

/* Sleep `ms` milliseconds. */
void an_test_msleep(int ms);

#endif
