/* tests/lib/session_fixture.c — see session_fixture.h. */
#include "session_fixture.h"
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "store_fixture.h"
#include "util.h"
#include "ctx_fixture.h"

char g_root[PATH_MAX];
char g_cli[PATH_MAX];

void sf_setup(const char *tag, bool need_python) {
  an_test_lib_env(g_cli, sizeof g_cli);
  snprintf(g_root, sizeof g_root, "/tmp/an-%s-%d", tag, (int) getppid());
  an_test_store_make(g_root);
  an_test_store_image(g_root, "busybox", false);
  if (need_python && !an_test_store_image(g_root, "python", true)) cr_skip_test("no python image in the cache");
}

void sf_remove_store(const char *tag) {
  char root[PATH_MAX];
  snprintf(root, sizeof root, "/tmp/an-%s-%d", tag, (int) getpid());
  an_test_store_remove(root);
}

struct an_sandbox *sf_make_sb(const char *image, const char *secret) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err) == 0);
  cr_assert(an_sandbox_opts_set_image(o, image, &err) == 0);
  if (secret) cr_assert(an_sandbox_opts_add_secret(o, "API_TOKEN", secret, &err) == 0);
  struct an_sandbox *sb = NULL;
  cr_assert(an_sandbox_create(g_root, o, &sb, &err) == 0, "create: %s", err ? err->msg : "");
  an_sandbox_opts_free(o);
  return sb;
}

void sf_destroy(struct an_sandbox *sb) {
  an_error_t err = NULL;
  cr_expect(an_sandbox_destroy(sb, 0, &err) == 0, "destroy: %s", err ? err->msg : "");
  an_error_free(&err);
  an_sandbox_close(sb);
}

void sf_start(struct an_sandbox *sb, enum an_session_kind kind, const char *name) {
  an_error_t err = NULL;
  int r = an_session_start(sb, kind, name, 0, NULL, &err);
  cr_assert(r == 0, "session start %s: %s", name, err ? err->msg : "");
}

struct an_session_result sf_call(struct an_sandbox *sb, const char *name, const char *code, uint64_t timeout_ms) {
  struct an_session_run_opts ro = {.timeout_ms = timeout_ms, .grace_ms = 1000};
  struct an_session_result res;
  an_error_t err = NULL;
  int r = an_session_run(sb, name, code, strlen(code), &ro, &res, &err);
  cr_assert(r == 0, "session run %s: %s", code, err ? err->msg : "");
  return res;
}
