/* tests/integration/sandbox_secrets_test.c — secret values on the real
 * kernel: redacted from an exec's output even when split across reads, and
 * in no state file of the store.
 *
 * Uses the busybox (and, where needed, python) image from the image cache
 * (`make images`) in one store per run (sandbox_common.h); skips with a
 * message when the cache is absent.  Run as root from the worktree root. */
#include "sandbox_common.h"

TestSuite(sandbox, .init = setup, .timeout = 120);

Test(sandbox, secrets_are_redacted_even_split_across_reads) {
  struct an_sandbox_opts *o = opts_for("busybox");
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_add_secret(o, "API_TOKEN", "tok-5ecret-value", &err) == 0);
  struct an_sandbox *sb = make_sb(o);
  struct an_exec_result res =
      run(sb, "echo \"$API_TOKEN\"; printf tok-5ec; sleep 0.3; printf 'ret-value\\n'; echo \"$API_TOKEN\" >&2", 0);
  cr_expect(!strstr(res.output.stdout_buf, "tok-5ecret-value"), "leak: %s", res.output.stdout_buf);
  cr_expect(!strstr(res.output.stderr_buf, "tok-5ecret-value"), "leak: %s", res.output.stderr_buf);
  cr_expect_str_eq(res.output.stdout_buf, "[REDACTED:API_TOKEN]\n[REDACTED:API_TOKEN]\n");
  an_exec_result_release(&res);
  /* also through a handle opened later (secrets come from the state) */
  struct an_sandbox *sb2 = NULL;
  cr_assert(an_sandbox_open_ctx(an_test_ctx(), g_root, an_sandbox_id(sb), &sb2, &err) == 0, "%s", err ? err->msg : "");
  res = run(sb2, "echo \"$API_TOKEN\"", 0);
  cr_expect_str_eq(res.output.stdout_buf, "[REDACTED:API_TOKEN]\n");
  an_exec_result_release(&res);
  /* a call's own secrets are redacted together with the sandbox's */
  static const struct an_secret call_secret = {"CALL_TOKEN", "call-s3cret"};
  struct an_exec_opts eo = {.secrets = &call_secret, .nsecrets = 1};
  char *argv[] = {"sh", "-c", "echo \"$API_TOKEN call-s3cret\"", NULL};
  cr_assert(an_sandbox_exec(sb2, argv, &eo, &res, &err) == 0, "%s", err ? err->msg : "");
  cr_expect_str_eq(res.output.stdout_buf, "[REDACTED:API_TOKEN] [REDACTED:CALL_TOKEN]\n");
  an_exec_result_release(&res);
  an_sandbox_close(sb2);
  destroy(sb);
  an_sandbox_opts_free(o);
}

/* Regular files under the store holding `needle` (not following symlinks). */
static const char *g_needle;
static int g_needle_hits;
static char g_needle_where[PATH_MAX];
static int find_needle(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void) ftw;
  if (type != FTW_F || !S_ISREG(st->st_mode) || st->st_size > (16 << 20)) return 0;
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  char *buf = malloc((size_t) st->st_size + 1);
  size_t n = fread(buf, 1, (size_t) st->st_size, f);
  fclose(f);
  buf[n] = '\0';
  if (memmem(buf, n, g_needle, strlen(g_needle))) {
    g_needle_hits++;
    snprintf(g_needle_where, sizeof g_needle_where, "%s", path);
  }
  free(buf);
  return 0;
}

/* Issue 10 item 8: sandbox.json and containers/ID/config.json held secret
 * values in clear.  Now no file of the store holds one; a later exec (a
 * handle opened afresh, as the CLI does) still gives the command its value,
 * read from the 0600 file on /run that goes with the sandbox. */
Test(sandbox, secret_values_are_in_no_state_file) {
  struct an_sandbox_opts *o = opts_for("busybox");
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_add_secret(o, "API_TOKEN", "tok-5ecret-v4lue-in-no-file", &err) == 0);
  struct an_sandbox *sb = make_sb(o);
  g_needle = "tok-5ecret-v4lue-in-no-file";
  g_needle_hits = 0;
  cr_assert_eq(nftw(g_root, find_needle, 16, FTW_PHYS), 0);
  cr_expect_eq(g_needle_hits, 0, "the secret value is in %d state file(s), e.g. %s", g_needle_hits, g_needle_where);
  char sf[PATH_MAX];
  snprintf(sf, sizeof sf, "/run/agentnest/secrets/%s.json", an_sandbox_id(sb));
  struct stat st;
  cr_assert_eq(stat(sf, &st), 0, "no secrets file %s", sf);
  cr_expect_eq(st.st_mode & 0777, 0600);
  struct an_sandbox *sb2 = NULL;
  cr_assert(an_sandbox_open_ctx(an_test_ctx(), g_root, an_sandbox_id(sb), &sb2, &err) == 0, "%s", err ? err->msg : "");
  struct an_exec_result res = run(sb2, "[ \"$API_TOKEN\" = tok-5ecret-v4lue-in-no-file ] && echo same; echo $API_TOKEN", 0);
  cr_expect_str_eq(res.output.stdout_buf, "same\n[REDACTED:API_TOKEN]\n");
  an_exec_result_release(&res);
  an_sandbox_close(sb2);
  /* values gone (a reboot empties /run): open still works (destroy, cp),
   * exec refuses rather than run without its secrets or unredacted */
  cr_assert_eq(unlink(sf), 0);
  cr_assert(an_sandbox_open_ctx(an_test_ctx(), g_root, an_sandbox_id(sb), &sb2, &err) == 0, "%s", err ? err->msg : "");
  char *argv[] = {"true", NULL};
  int r = an_sandbox_exec(sb2, argv, NULL, &res, &err);
  cr_expect_eq(r, -ENOENT, "exec without the secret values: %d", r);
  cr_expect(err && strstr(err->msg, "is gone"), "%s", err ? err->msg : "");
  an_error_free(&err);
  an_sandbox_close(sb2);
  destroy(sb);
  cr_expect_neq(stat(sf, &st), 0, "%s left after destroy", sf);
  an_sandbox_opts_free(o);
}
