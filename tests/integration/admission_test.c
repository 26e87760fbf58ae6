/* tests/integration/admission_test.c — the caps on sandboxes of the agent
 * front ends, found broken by a red team, and what a token learns of
 * another's sandboxes:
 *   - /mcp (Streamable HTTP on `agentnest serve`): concurrent create calls
 *     of a max-sandboxes=1 token, each its own POST, all passed the check;
 *   - the one-shot POST /v1/run and MCP run_code without "sandbox" (over
 *     /mcp and over stdio) held a sandbox uncounted;
 *   - a token asking for another token's sandbox got 403 where an unknown
 *     id got 404 (REST and /mcp alike): now the same status and text.
 * `agentnest serve` on a unix socket of the test's store, driven with curl;
 * `agentnest mcp` over stdio by tests/mcp/mcp_stdio_calls.py (python3).
 * The busybox and python images from the `make images` cache; skipped
 * without them, curl or python3.  Run as root from the worktree root. */
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
#include "serve_fixture.h"
#include "util.h"

#define TOK_A SV_TOK_A
#define TOK_B SV_TOK_B
#define TOK_C SV_TOK_C

static pid_t g_serve;
static char g_sock[400];

static void setup(void) {
  bf_setup();   /* imports busybox */
  if (access("/var/cache/agentnest/images/python/layout", F_OK) == 0) bf_import_image("python");
}

static void teardown(void) {
  sv_stop(&g_serve);
  bf_teardown();
}

TestSuite(admission, .init = setup, .fini = teardown, .timeout = 300);

static void need(bool python_image) {
  if (access("/var/cache/agentnest/images/busybox/layout", F_OK) != 0) cr_skip_test("image cache absent");
  if (python_image && access("/var/cache/agentnest/images/python/layout", F_OK) != 0)
    cr_skip_test("python image absent");
  if (an_test_sh("command -v curl >/dev/null && command -v python3 >/dev/null") != 0)
    cr_skip_test("curl and python3 are needed");
}

static void start_serve(void) { g_serve = sv_start(g_sock); }

static int call(const char *token, const char *method, const char *path, const char *body, char **out) {
  return sv_call(g_sock, token, method, path, body, out);
}

#define member sv_member

/* A tools/call over /mcp: the result object's isError, and its first text in *text (heap). */
static bool mcp_call(const char *token, const char *tool, const char *args, char **text) {
  char body[1024], *out = NULL;
  snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
           "\"arguments\":%s}}", tool, args);
  int code = call(token, "POST", "/mcp", body, &out);
  cr_assert_eq(code, 200, "POST /mcp %s: %d %s", tool, code, out);
  yajl_val v = yajl_tree_parse(out, NULL, 0);
  cr_assert_not_null(v, "not JSON: %s", out);
  const char *ep[] = {"result", "isError", NULL}, *tp[] = {"result", "content", NULL};
  yajl_val e = yajl_tree_get(v, ep, yajl_t_any), c = yajl_tree_get(v, tp, yajl_t_array);
  cr_assert(e && c && c->u.array.len, "no tool result: %s", out);
  const char *kp[] = {"text", NULL};
  yajl_val t = yajl_tree_get(c->u.array.values[0], kp, yajl_t_string);
  const char *ts = t ? YAJL_GET_STRING(t) : NULL;
  *text = strdup(ts ? ts : "");
  bool is_error = YAJL_IS_TRUE(e);
  yajl_tree_free(v);
  free(out);
  return is_error;
}

/* Every sandbox of `token`, destroyed; how many there were. */
static size_t destroy_all(const char *token) {
  char *out = NULL;
  cr_assert_eq(call(token, "GET", "/v1/sandboxes", NULL, &out), 200, "%s", out);
  yajl_val v = yajl_tree_parse(out, NULL, 0);
  const char *path[] = {"sandboxes", NULL};
  yajl_val a = v ? yajl_tree_get(v, path, yajl_t_array) : NULL;
  size_t n = a ? a->u.array.len : 0;
  for (size_t i = 0; i < n; i++) {
    const char *ip[] = {"id", NULL};
    yajl_val id = yajl_tree_get(a->u.array.values[i], ip, yajl_t_string);
    char del[100], *o2 = NULL;
    snprintf(del, sizeof del, "/v1/sandboxes/%s", id ? YAJL_GET_STRING(id) : "x");
    call(token, "DELETE", del, NULL, &o2);
    free(o2);
  }
  yajl_tree_free(v);
  free(out);
  return n;
}

/* redteam: six create tool calls at once over /mcp, each its own POST, by a
 * max-sandboxes=1 token: every POST counted only what the token held when it
 * began, so all six made a sandbox. */
Test(admission, mcp_over_http_concurrent_creates_respect_max_sandboxes) {
  need(false);
  start_serve();
  char cmd[2400];
  snprintf(cmd, sizeof cmd,
           "cd '%s' && for i in 1 2 3 4 5 6; do curl -s -o m$i.out --unix-socket '%s' -X POST "
           "-H 'Authorization: Bearer " TOK_C "' -H 'Content-Type: application/json' "
           "-H 'Accept: application/json, text/event-stream' --data-binary "
           "'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"create\","
           "\"arguments\":{\"image\":\"busybox\"}}}' http://localhost/mcp & done; wait; "
           "grep -l '\"isError\":false' m?.out | wc -l; grep -l 'at most 1 sandboxes' m?.out | wc -l",
           bf_work, g_sock);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  int ok = -1, refused = -1;
  cr_assert_eq(fscanf(p, "%d %d", &ok, &refused), 2);
  pclose(p);
  size_t held = destroy_all(TOK_C);
  cr_expect_eq(ok, 1, "%d of 6 concurrent /mcp creates of a max-sandboxes=1 token succeeded", ok);
  cr_expect_eq(refused, 5, "%d refused", refused);
  cr_expect_eq(held, 1, "the token held %zu sandboxes", held);
}

/* redteam: the one-shot POST /v1/run (and run_code without "sandbox" over
 * /mcp) ran a sandbox of its own outside the token's max-sandboxes. */
Test(admission, a_one_shot_run_counts_against_max_sandboxes) {
  need(true);
  start_serve();
  char *out = NULL;
  cr_assert_eq(call(TOK_C, "POST", "/v1/sandboxes", "{\"image\":\"busybox\"}", &out), 200, "%s", out);
  free(out);
  const char *run = "{\"language\":\"shell\",\"code\":\"echo one-shot\"}";
  int code = call(TOK_C, "POST", "/v1/run", run, &out);
  cr_expect_eq(code, 403, "a one-shot run of a token at its max-sandboxes=1: %d %s", code, out);
  cr_expect(!strstr(out, "one-shot\\n"), "it ran: %s", out);
  free(out);
  char *text = NULL;
  bool is_error = mcp_call(TOK_C, "run_code", run, &text);
  cr_expect(is_error && strstr(text, "at most 1"), "/mcp run_code one-shot at the cap: %s", text);
  free(text);
  /* run_code in the token's own sandbox holds nothing more */
  cr_assert_eq(call(TOK_C, "GET", "/v1/sandboxes", NULL, &out), 200, "%s", out);
  yajl_val v = yajl_tree_parse(out, NULL, 0);
  const char *ip[] = {"sandboxes", NULL};
  yajl_val a = v ? yajl_tree_get(v, ip, yajl_t_array) : NULL;
  cr_assert(a && a->u.array.len == 1, "%s", out);
  const char *idp[] = {"id", NULL};
  char args[200];
  snprintf(args, sizeof args, "{\"sandbox\":\"%s\",\"language\":\"shell\",\"code\":\"echo in-mine\"}",
           YAJL_GET_STRING(yajl_tree_get(a->u.array.values[0], idp, yajl_t_string)));
  yajl_tree_free(v);
  free(out);
  is_error = mcp_call(TOK_C, "run_code", args, &text);
  cr_expect(!is_error, "run_code in the token's own sandbox: %s", text);
  free(text);
  /* with the slot free again the one-shot runs, and gives the slot back */
  cr_expect_eq(destroy_all(TOK_C), 1);
  code = call(TOK_C, "POST", "/v1/run", run, &out);
  cr_expect_eq(code, 200, "a one-shot run with a free slot: %d %s", code, out);
  cr_expect(strstr(out, "one-shot"), "%s", out);
  free(out);
  code = call(TOK_C, "POST", "/v1/sandboxes", "{\"image\":\"busybox\"}", &out);
  cr_expect_eq(code, 200, "the one-shot's slot was not given back: %d %s", code, out);
  free(out);
  destroy_all(TOK_C);
}

/* Replace every occurrence of `id` in s by "ID" (in place: "ID" is shorter). */
static void mask(char *s, const char *id) {
  size_t n = strlen(id);
  for (char *p; (p = strstr(s, id));) {
    memcpy(p, "ID", 2);
    memmove(p + 2, p + n, strlen(p + n) + 1);
  }
}

/* redteam: GET /v1/sandboxes/<another token's id> answered 403 "not created
 * by this client" where an unknown id answered 404: a token could tell which
 * ids exist.  Now both read as unknown, in status and in text, over REST and
 * over /mcp. */
Test(admission, another_tokens_sandbox_reads_as_an_unknown_one) {
  need(false);
  start_serve();
  char *out = NULL;
  cr_assert_eq(call(TOK_A, "POST", "/v1/sandboxes", "{\"image\":\"busybox\"}", &out), 200, "%s", out);
  char *a = member(out, "id");
  free(out);
  const char *unknown = "0123456789ab";
  char path[100], *theirs = NULL, *none = NULL;
  snprintf(path, sizeof path, "/v1/sandboxes/%s", a);
  int c1 = call(TOK_B, "GET", path, NULL, &theirs);
  snprintf(path, sizeof path, "/v1/sandboxes/%s", unknown);
  int c2 = call(TOK_B, "GET", path, NULL, &none);
  cr_expect_eq(c1, 404, "another token's sandbox: %d %s", c1, theirs);
  cr_expect_eq(c2, 404, "an unknown id: %d %s", c2, none);
  mask(theirs, a);
  mask(none, unknown);
  cr_expect_str_eq(theirs, none, "the answers differ");
  free(theirs);
  free(none);
  /* a write to it: the same */
  snprintf(path, sizeof path, "/v1/sandboxes/%s/exec", a);
  c1 = call(TOK_B, "POST", path, "{\"argv\":[\"true\"]}", &theirs);
  cr_expect_eq(c1, 404, "exec in another token's sandbox: %d %s", c1, theirs);
  free(theirs);
  /* over /mcp: the same error text */
  char args[100];
  snprintf(args, sizeof args, "{\"sandbox\":\"%s\"}", a);
  bool e1 = mcp_call(TOK_B, "inspect", args, &theirs);
  snprintf(args, sizeof args, "{\"sandbox\":\"%s\"}", unknown);
  bool e2 = mcp_call(TOK_B, "inspect", args, &none);
  cr_expect(e1 && e2, "inspect: %s / %s", theirs, none);
  mask(theirs, a);
  mask(none, unknown);
  cr_expect_str_eq(theirs, none, "the /mcp answers differ");
  free(theirs);
  free(none);
  /* the owner still sees it */
  snprintf(path, sizeof path, "/v1/sandboxes/%s", a);
  cr_expect_eq(call(TOK_A, "GET", path, NULL, &out), 200, "%s", out);
  free(out);
  cr_expect_eq(call(TOK_A, "DELETE", path, NULL, &out), 200, "%s", out);
  free(out);
  free(a);
}

/* stdio `agentnest mcp --max-sandboxes 1`: six creates sent at once make one
 * sandbox; a one-shot run_code while it is held is refused (redteam: it ran
 * uncounted). */
Test(admission, mcp_over_stdio_counts_creates_and_one_shot_runs) {
  need(true);
  const char *src = getenv("AN_TEST_SRC");
  char cmd[12000];
  int n = snprintf(cmd, sizeof cmd, "cd '%s' && python3 '%s/tests/mcp/mcp_stdio_calls.py' '%s' '%s' --max-sandboxes 1 --",
                   bf_work, src && *src ? src : ".", bf_an_bin, bf_root);
  for (int i = 1; i <= 6; i++)
    n += snprintf(cmd + n, sizeof cmd - (size_t) n,
                  " '{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"create\","
                  "\"arguments\":{\"image\":\"busybox\"}}}'", i);
  snprintf(cmd + n, sizeof cmd - (size_t) n, " >creates.out && grep -c '\"isError\":false' creates.out");
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  int ok = -1;
  cr_expect_eq(fscanf(p, "%d", &ok), 1);
  cr_expect_eq(pclose(p), 0, "the stdio session failed");
  cr_expect_eq(ok, 1, "%d of 6 concurrent stdio creates under --max-sandboxes 1 succeeded", ok);

  /* a create, then (after its answer) a one-shot run_code: refused */
  snprintf(cmd, sizeof cmd,
           "cd '%s' && python3 - '%s' '%s' <<'EOF'\n"
           "import json, subprocess, sys\n"
           "p = subprocess.Popen([sys.argv[1], '--root', sys.argv[2], 'mcp', '--quiet', '--max-sandboxes', '1'],\n"
           "                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)\n"
           "def ask(i, name, args):\n"
           "    p.stdin.write(json.dumps({'jsonrpc': '2.0', 'id': i, 'method': 'tools/call',\n"
           "                              'params': {'name': name, 'arguments': args}}) + '\\n')\n"
           "    p.stdin.flush()\n"
           "    while True:\n"
           "        m = json.loads(p.stdout.readline())\n"
           "        if m.get('id') == i: return m['result']\n"
           "r = ask(1, 'create', {'image': 'busybox'})\n"
           "assert not r['isError'], r\n"
           "r = ask(2, 'run_code', {'language': 'shell', 'code': 'echo one-shot'})\n"
           "print('REFUSED' if r['isError'] and 'at most 1' in r['content'][0]['text'] else 'RAN', r)\n"
           "p.stdin.close()\n"
           "sys.exit(p.wait(timeout=120))\n"
           "EOF\n",
           bf_work, bf_an_bin, bf_root);
  p = popen(cmd, "r");
  cr_assert_not_null(p);
  char line[2048] = "";
  if (!fgets(line, sizeof line, p)) line[0] = 0;
  cr_expect_eq(pclose(p), 0, "the stdio session failed: %s", line);
  cr_expect(!strncmp(line, "REFUSED", 7), "a one-shot run_code at --max-sandboxes 1 with one held: %s", line);
  cr_assert_eq(bf_an("ls --json"), 0);
  cr_expect(!strstr(bf_out, "\"id\""), "sandboxes left in the store: %s", bf_out);
}
