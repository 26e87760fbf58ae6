/* tests/lib/ctx_fixture.c — see ctx_fixture.h. */
#include "ctx_fixture.h"
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CTX 64

static struct { struct an_ctx *ctx; char *key; } made[MAX_CTX];
static size_t nmade;

static const char *env_or_null(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

static const char *secret_from_env(void *data, const char *name) {
  (void) data;
  return getenv(name);
}

static void free_all(void) {
  for (size_t i = 0; i < nmade; i++) {
    an_ctx_free(made[i].ctx);
    free(made[i].key);
  }
  nmade = 0;
}

const struct an_ctx *an_test_ctx(void) {
  const char *init = env_or_null("AGENTNEST_INIT"), *prof = env_or_null("AGENTNEST_PROFILES"),
             *ids = env_or_null("AGENTNEST_IDRANGE_ROOT");
  char *key = NULL;
  cr_assert(asprintf(&key, "%s\n%s\n%s", init ? init : "", prof ? prof : "", ids ? ids : "") >= 0);
  if (nmade && !strcmp(made[nmade - 1].key, key)) {
    free(key);
    return made[nmade - 1].ctx;
  }
  cr_assert_lt(nmade, MAX_CTX, "an_test_ctx: more than %d environments", MAX_CTX);
  struct an_ctx_config c = {.init_path = init, .profiles_dir = prof, .idrange_root = ids,
                            .secret_env = secret_from_env};
  an_error_t err = NULL;
  struct an_ctx *ctx = NULL;
  cr_assert_eq(an_ctx_new(&c, &ctx, &err), 0, "an_ctx_new: %s", err ? err->msg : "");
  if (!nmade) atexit(free_all);
  made[nmade].ctx = ctx;
  made[nmade++].key = key;
  return ctx;
}
