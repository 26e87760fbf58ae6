/* tests/integration/serve_isolation_test.c — what one bearer token of
 * `agentnest serve` can reach of another's, checked with curl over a unix
 * socket of the test's store: a snapshot is addressed by its sha256, and
 * that digest must not let another token restore (and so read) the
 * workspace it holds (api.h snapshot_owner); max-sandboxes holds for
 * concurrent creates.  The busybox image from the
 * `make images` cache; skipped without it or without curl.  Run as root
 * from the worktree root. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "batch_fixture.h"
#include "util.h"

#define TOK_A "alice-token-0123456789abcdef"
#define TOK_B "bob-token-0123456789abcdef01"
#define TOK_C "carol-token-0123456789abcdef"

static pid_t g_serve;
static char g_sock[400];

static void setup(void) { bf_setup(); }   /* imports busybox */

static void teardown(void) {
  if (g_serve > 0) {
    kill(g_serve, SIGTERM);
    waitpid(g_serve, NULL, 0);
    g_serve = 0;
  }
  bf_teardown();
}

TestSuite(serve_isolation, .init = setup, .fini = teardown, .timeout = 240);

static void start_serve(void) {
  char tokens[400];
  snprintf(tokens, sizeof tokens, "%s/tokens", bf_work);
  const char *text = TOK_A " alice\n" TOK_B " bob\n" TOK_C " carol max-sandboxes=1\n";
  an_test_write_file(tokens, text, strlen(text), 0600);
  snprintf(g_sock, sizeof g_sock, "%s/serve.sock", bf_work);
  g_serve = fork();
  cr_assert_geq(g_serve, 0);
  if (g_serve == 0) {
    char listen[420];
    snprintf(listen, sizeof listen, "unix:%s", g_sock);
    execl(bf_an_bin, bf_an_bin, "--root", bf_root, "serve", "--quiet", "--tokens", tokens, "--listen", listen,
          (char *) NULL);
    _exit(127);
  }
  struct stat st;
  for (int i = 0; i < 200 && stat(g_sock, &st) != 0; i++) usleep(50000);
  cr_assert_eq(stat(g_sock, &st), 0, "serve did not make %s", g_sock);
}

/* curl METHOD PATH with TOKEN and a body (NULL: none): the HTTP status; the
 * response body in *out (heap). */
static int call(const char *token, const char *method, const char *path, const char *body, char **out) {
  char bodyf[400], outf[400];
  snprintf(bodyf, sizeof bodyf, "%s/.body", bf_work);
  snprintf(outf, sizeof outf, "%s/.resp", bf_work);
  if (body) an_test_write_file(bodyf, body, strlen(body), 0600);
  char cmd[2000];
  snprintf(cmd, sizeof cmd,
           "curl -s -o '%s' -w '%%{http_code}' --unix-socket '%s' -X %s -H 'Authorization: Bearer %s' "
           "-H 'Content-Type: application/json' %s%s%s 'http://localhost/v1%s'",
           outf, g_sock, method, token, body ? "--data-binary @'" : "", body ? bodyf : "", body ? "'" : "", path);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  int code = 0;
  if (fscanf(p, "%d", &code) != 1) code = -1;
  pclose(p);
  *out = an_test_read_file(outf, NULL);
  if (!*out) *out = strdup("");
  return code;
}

static char *member(const char *json, const char *key) {
  yajl_val v = yajl_tree_parse(json, NULL, 0);
  const char *path[] = {key, NULL};
  yajl_val m = v ? yajl_tree_get(v, path, yajl_t_string) : NULL;
  const char *str = m ? YAJL_GET_STRING(m) : NULL;
  char *s = str ? strdup(str) : NULL;
  yajl_tree_free(v);
  cr_assert_not_null(s, "no \"%s\" in %s", key, json);
  return s;
}

/* redteam: token B restored token A's snapshot into its own sandbox by the digest and read
 * A's files back; now each token has its own snapshot directory. */
Test(serve_isolation, a_snapshot_digest_restores_nothing_for_another_token) {
  if (access("/var/cache/agentnest/images/busybox/layout", F_OK) != 0) cr_skip_test("image cache absent");
  if (an_test_sh("command -v curl >/dev/null") != 0) cr_skip_test("curl is needed");
  start_serve();
  char *out = NULL;
  cr_assert_eq(call(TOK_A, "POST", "/sandboxes", "{\"image\":\"busybox\"}", &out), 200, "%s", out);
  char *a = member(out, "id");
  free(out);
  char path[200];
  snprintf(path, sizeof path, "/sandboxes/%s/files/write", a);
  cr_assert_eq(call(TOK_A, "POST", path, "{\"path\":\"secret.txt\",\"content\":\"alice-secret-42\"}", &out), 200,
               "%s", out);
  free(out);
  snprintf(path, sizeof path, "/sandboxes/%s/snapshot", a);
  cr_assert_eq(call(TOK_A, "POST", path, "{}", &out), 200, "%s", out);
  char *sha = member(out, "snapshot");
  free(out);

  cr_assert_eq(call(TOK_B, "POST", "/sandboxes", "{\"image\":\"busybox\"}", &out), 200, "%s", out);
  char *b = member(out, "id");
  free(out);
  char body[200];
  snprintf(body, sizeof body, "{\"snapshot\":\"%s\"}", sha);
  snprintf(path, sizeof path, "/sandboxes/%s/restore", b);
  int code = call(TOK_B, "POST", path, body, &out);
  cr_expect_eq(code, 404, "token B restored token A's snapshot: %d %s", code, out);
  free(out);
  snprintf(path, sizeof path, "/sandboxes/%s/files/read", b);
  code = call(TOK_B, "POST", path, "{\"path\":\"secret.txt\"}", &out);
  cr_expect(code != 200 && !strstr(out, "alice-secret-42"), "token B read token A's file: %s", out);
  free(out);

  /* the owner still restores its own snapshot */
  snprintf(path, sizeof path, "/sandboxes/%s/files/write", a);
  cr_assert_eq(call(TOK_A, "POST", path, "{\"path\":\"secret.txt\",\"content\":\"changed\"}", &out), 200, "%s", out);
  free(out);
  snprintf(path, sizeof path, "/sandboxes/%s/restore", a);
  cr_expect_eq(call(TOK_A, "POST", path, body, &out), 200, "%s", out);
  free(out);
  snprintf(path, sizeof path, "/sandboxes/%s/files/read", a);
  cr_assert_eq(call(TOK_A, "POST", path, "{\"path\":\"secret.txt\"}", &out), 200, "%s", out);
  cr_expect(strstr(out, "alice-secret-42"), "own restore: %s", out);
  free(out);

  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "/sandboxes/%s", i ? b : a);
    cr_expect_eq(call(i ? TOK_B : TOK_A, "DELETE", path, NULL, &out), 200, "%s", out);
    free(out);
  }
  free(a);
  free(b);
  free(sha);
}

/* redteam: the max-sandboxes check counted the token's sandboxes and then created, so six
 * creates at once all passed the check of a max-sandboxes=1 token. */
Test(serve_isolation, max_sandboxes_holds_for_concurrent_creates) {
  if (access("/var/cache/agentnest/images/busybox/layout", F_OK) != 0) cr_skip_test("image cache absent");
  if (an_test_sh("command -v curl >/dev/null") != 0) cr_skip_test("curl is needed");
  start_serve();
  char cmd[2000];
  snprintf(cmd, sizeof cmd,
           "cd '%s' && for i in 1 2 3 4 5 6; do curl -s -o c$i.out -w '%%{http_code}\\n' --unix-socket '%s' "
           "-X POST -H 'Authorization: Bearer " TOK_C "' --data-binary '{\"image\":\"busybox\"}' "
           "http://localhost/v1/sandboxes >c$i.code & done; wait; cat c?.code",
           bf_work, g_sock);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  int ok = 0, refused = 0, code;
  while (fscanf(p, "%d", &code) == 1) ok += code == 200, refused += code == 403;
  pclose(p);
  cr_expect_eq(ok, 1, "%d creates of a max-sandboxes=1 token succeeded (%d refused)", ok, refused);
  cr_expect_eq(refused, 5);
  char *out = NULL;
  cr_assert_eq(call(TOK_C, "GET", "/sandboxes", NULL, &out), 200, "%s", out);
  yajl_val v = yajl_tree_parse(out, NULL, 0);
  const char *path[] = {"sandboxes", NULL};
  yajl_val a = v ? yajl_tree_get(v, path, yajl_t_array) : NULL;
  cr_expect(a && a->u.array.len == 1, "the token holds: %s", out);
  for (size_t i = 0; a && i < a->u.array.len; i++) {
    const char *ip[] = {"id", NULL};
    yajl_val id = yajl_tree_get(a->u.array.values[i], ip, yajl_t_string);
    char del[100], *o2 = NULL;
    snprintf(del, sizeof del, "/sandboxes/%s", id ? YAJL_GET_STRING(id) : "x");
    call(TOK_C, "DELETE", del, NULL, &o2);
    free(o2);
  }
  yajl_tree_free(v);
  free(out);
}

/* redteam: a sandbox that ended by its lifetime stayed in the token's owned list, so a
 * max-sandboxes=N token lost a slot for good with each expiry (403 until serve restarts). */
Test(serve_isolation, an_expired_sandbox_frees_its_max_sandboxes_slot) {
  if (access("/var/cache/agentnest/images/busybox/layout", F_OK) != 0) cr_skip_test("image cache absent");
  if (an_test_sh("command -v curl >/dev/null") != 0) cr_skip_test("curl is needed");
  start_serve();
  char *out = NULL;
  cr_assert_eq(call(TOK_C, "POST", "/sandboxes", "{\"image\":\"busybox\",\"timeout\":\"2s\"}", &out), 200, "%s",
               out);
  char *id = member(out, "id");
  free(out);
  char path[100];
  snprintf(path, sizeof path, "/sandboxes/%s", id);
  int code = 200;
  for (int i = 0; i < 300 && code == 200; i++) {   /* until its monitor has ended it */
    usleep(100000);
    code = call(TOK_C, "GET", path, NULL, &out);
    free(out);
  }
  cr_assert_neq(code, 200, "the sandbox did not expire");
  code = call(TOK_C, "POST", "/sandboxes", "{\"image\":\"busybox\"}", &out);
  cr_expect_eq(code, 200, "the expired sandbox still counts against max-sandboxes=1: %d %s", code, out);
  if (code == 200) {
    char *id2 = member(out, "id");
    char *o2 = NULL;
    snprintf(path, sizeof path, "/sandboxes/%s", id2);
    call(TOK_C, "DELETE", path, NULL, &o2);
    free(o2);
    free(id2);
  }
  free(out);
  free(id);
}
