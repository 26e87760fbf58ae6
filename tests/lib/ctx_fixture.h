/* tests/lib/ctx_fixture.h — the library context (agentnest/ctx.h) a test
 * uses: made from the test process's AGENTNEST_INIT, AGENTNEST_PROFILES and
 * AGENTNEST_IDRANGE_ROOT as they are at the call (store_fixture.c and the
 * suites set them), as the front ends make theirs.  The library itself reads
 * no environment variable; the tests keep their variables by passing this
 * context.  Not thread-safe (one test per process). */
#ifndef AN_TEST_CTX_FIXTURE_H
#define AN_TEST_CTX_FIXTURE_H

#include "agentnest/ctx.h"

/* The context for the environment now: the same object while the three
 * variables do not change, a new one when they did (the older ones stay
 * valid until the process exits: options made earlier still use them).
 * A secret given as NAME reads the test's environment (as the CLI does).
 * Asserts on failure. */
const struct an_ctx *an_test_ctx(void);

#endif
