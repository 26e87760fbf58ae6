/* tests/integration/audit_common.h — what the audit log and approval hook
 * tests share (audit_test.c, approval_test.c): a store per test
 * (/tmp/an-audit-<pid>, the audit log is per store) with the busybox image
 * imported from the `make images` cache (need_image() skips without it),
 * reading the log's records (agentnest/audit.h), running the built CLI
 * against the store (cli(): output in g_out/g_err), and hook scripts
 * written into the store.  Included by one test file per binary; the
 * helpers assert (criterion), so they run only inside a test or its
 * .init/.fini.  Run as root from the worktree root. */
#ifndef AN_TESTS_AUDIT_COMMON_H
#define AN_TESTS_AUDIT_COMMON_H
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "agentnest.h"
#include "agentnest/approval.h"
#include "agentnest/audit.h"
#include "agentnest/sandbox.h"
#include "rm_tree.h"
#include "util.h"
#include "ctx_fixture.h"

#define CACHE "/var/cache/agentnest/images"
#define SECRET "Zq9-audit-secret-4711"

static char g_root[128];
static char g_bin[PATH_MAX];
static char g_log[PATH_MAX + 32];

static inline void setup(void) {
  const char *bdir = getenv("AN_TEST_BUILD"), *sdir = getenv("AN_TEST_SRC");
  char p[PATH_MAX], q[PATH_MAX + 32];
  snprintf(q, sizeof q, "%s/agentnest-init", bdir && *bdir ? bdir : "build");
  if (realpath(q, p)) setenv("AGENTNEST_INIT", p, 1);
  snprintf(q, sizeof q, "%s/agentnest", bdir && *bdir ? bdir : "build");
  if (!realpath(q, g_bin)) g_bin[0] = 0;
  snprintf(q, sizeof q, "%s/profiles", sdir && *sdir ? sdir : ".");
  if (realpath(q, p)) setenv("AGENTNEST_PROFILES", p, 1);
  snprintf(g_root, sizeof g_root, "/tmp/an-audit-%d", (int) getpid());
  an_test_rm_tree(g_root);
  cr_assert(mkdir(g_root, 0711) == 0, "mkdir %s: %s", g_root, strerror(errno));
  snprintf(g_log, sizeof g_log, "%s/audit/audit.jsonl", g_root);
}

static inline void teardown(void) {
  an_test_store_remove(g_root);
}


static inline void need_image(void) {
  if (access(CACHE "/busybox/layout", F_OK) != 0) cr_skip_test("image cache absent: run `make images`");
  if (!g_bin[0]) cr_skip_test("agentnest not built");
  an_error_t err = NULL;
  cr_assert(an_image_import(g_root, CACHE "/busybox/layout", "busybox", NULL, NULL, &err) == 0,
            "import busybox: %s", err ? err->msg : "");
}

/* ---- reading the log ---------------------------------------------------------------------- */

struct recs {
  yajl_val v[4096];
  size_t n;
};

static inline int collect(void *data, const char *json) {
  struct recs *r = data;
  char e[256] = "";
  yajl_val v = yajl_tree_parse(json, e, sizeof e);
  cr_assert_not_null(v, "record not JSON (%s): %s", e, json);
  cr_assert(r->n < 4096);
  r->v[r->n++] = v;
  return 0;
}

static inline void read_all(struct recs *r, const struct an_audit_filter *f) {
  r->n = 0;
  an_error_t err = NULL;
  cr_assert(an_audit_read(g_root, f, collect, r, &err) == 0, "read: %s", err ? err->msg : "");
}

static inline void recs_free(struct recs *r) {
  for (size_t i = 0; i < r->n; i++) yajl_tree_free(r->v[i]);
  r->n = 0;
}

static inline yajl_val member(yajl_val v, const char *k) {
  const char *path[] = {k, NULL};
  return yajl_tree_get(v, path, yajl_t_any);
}

static inline const char *mstr(yajl_val v, const char *k) {
  yajl_val m = member(v, k);
  return m && YAJL_IS_STRING(m) ? m->u.string : NULL;
}

/* The first record of `op` (and of `operation`, for approvals, when not
 * NULL) at or after index *from; NULL if none. */
static inline yajl_val find_op(struct recs *r, const char *op, const char *operation) {
  for (size_t i = 0; i < r->n; i++) {
    const char *o = mstr(r->v[i], "op");
    if (!o || strcmp(o, op)) continue;
    if (operation && (!mstr(r->v[i], "operation") || strcmp(mstr(r->v[i], "operation"), operation))) continue;
    return r->v[i];
  }
  return NULL;
}

static inline bool strv_has(yajl_val arr, const char *s) {
  if (!arr || !YAJL_IS_ARRAY(arr)) return false;
  for (size_t i = 0; i < arr->u.array.len; i++)
    if (YAJL_IS_STRING(arr->u.array.values[i]) && strstr(arr->u.array.values[i]->u.string, s)) return true;
  return false;
}

static inline bool file_contains(const char *path, const char *needle) {
  size_t len = 0;
  char *t = an_test_read_file(path, &len);
  if (!t) return false;
  bool found = memmem(t, len, needle, strlen(needle)) != NULL;
  free(t);
  return found;
}

/* ---- the CLI -------------------------------------------------------------------------------- */

static char g_out[65536], g_err[65536];

static inline int cli(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int cli(const char *fmt, ...) {
  char *args = NULL, *cmd = NULL;
  va_list ap;
  va_start(ap, fmt);
  cr_assert(vasprintf(&args, fmt, ap) >= 0);
  va_end(ap);
  cr_assert(asprintf(&cmd, "'%s' --root '%s' %s >'%s/out' 2>'%s/err'", g_bin, g_root, args, g_root,
                     g_root) >= 0);
  int st = system(cmd);
  free(args);
  free(cmd);
  char p[PATH_MAX + 8];
  snprintf(p, sizeof p, "%s/out", g_root);
  char *t = an_test_read_file(p, NULL);
  snprintf(g_out, sizeof g_out, "%s", t ? t : "");
  free(t);
  snprintf(p, sizeof p, "%s/err", g_root);
  t = an_test_read_file(p, NULL);
  snprintf(g_err, sizeof g_err, "%s", t ? t : "");
  free(t);
  cr_assert(WIFEXITED(st));
  return WEXITSTATUS(st);
}

/* Write the hook script `name` in the store; returns its path (static). */
static inline const char *hook(const char *name, const char *body) {
  static char path[4][256];
  static int k;
  char *p = path[k++ % 4];
  snprintf(p, 256, "%s/%.64s", g_root, name);
  char *text = NULL;
  cr_assert(asprintf(&text, "#!/bin/sh\n%s\n", body) >= 0);
  an_test_write_file(p, text, strlen(text), 0755);
  free(text);
  return p;
}

static inline void chomp(char *s) {
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == ' ')) s[--n] = 0;
}


static inline struct an_sandbox_opts *opts_busybox(void) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err) == 0);
  cr_assert(an_sandbox_opts_set_image(o, "busybox", &err) == 0);
  return o;
}

#endif
