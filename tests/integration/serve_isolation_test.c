/* tests/integration/serve_isolation_test.c — what one bearer token of
 * `agentnest serve` can reach of another's, checked with curl over a unix
 * socket of the test's store: a snapshot is addressed by its sha256, and
 * that digest must not let another token restore (and so read) the
 * workspace it holds (api.h snapshot_owner); max-sandboxes holds for
 * concurrent creates; one token's flood of long calls cannot take every
 * --max-concurrent slot, nor its slow or idle connections every
 * --max-connections one; a create whose client hung up leaves no sandbox.
 * The busybox image from the
 * `make images` cache; skipped without it or without curl.  Run as root
 * from the worktree root. */
#include <criterion/criterion.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "batch_fixture.h"
#include "serve_fixture.h"
#include "store_fixture.h"
#include "util.h"

#define TOK_A SV_TOK_A
#define TOK_B SV_TOK_B
#define TOK_C SV_TOK_C

static pid_t g_serve;
static char g_sock[400];

static void setup(void) { bf_setup(); }   /* imports busybox */

static void teardown(void) {
  sv_stop(&g_serve);
  bf_teardown();
}

TestSuite(serve_isolation, .init = setup, .fini = teardown, .timeout = 240);

static void start_serve(void) { g_serve = sv_start(g_sock); }

/* sv_call on PATH under /v1 */
static int call(const char *token, const char *method, const char *path, const char *body, char **out) {
  char full[600];
  snprintf(full, sizeof full, "/v1%s", path);
  return sv_call(g_sock, token, method, full, body, out);
}

#define member sv_member

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

/* s4-red: a create with a name another token's sandbox holds failed with
 * "sandbox name N: in use by sandbox <id>", so token B learned the id of
 * token A's sandbox (which every other answer keeps from it: an id it does
 * not own reads as unknown).  The refusal names no id now. */
Test(serve_isolation, a_name_in_use_by_another_token_tells_no_id) {
  if (access("/var/cache/agentnest/images/busybox/layout", F_OK) != 0) cr_skip_test("image cache absent");
  if (an_test_sh("command -v curl >/dev/null") != 0) cr_skip_test("curl is needed");
  start_serve();
  char *out = NULL;
  cr_assert_eq(call(TOK_A, "POST", "/sandboxes", "{\"image\":\"busybox\",\"name\":\"s4-shared\"}", &out), 200, "%s",
               out);
  char *a = member(out, "id");
  free(out);
  cr_assert_not_null(a);
  int code = call(TOK_B, "POST", "/sandboxes", "{\"image\":\"busybox\",\"name\":\"s4-shared\"}", &out);
  cr_expect_neq(code, 200, "token B got the name token A's sandbox holds: %s", out);
  cr_expect(!strstr(out, a), "token B's refused create names token A's sandbox %s: %s", a, out);
  free(out);
  free(a);
}

/* redteam: --max-concurrent counted the calls of all tokens together, so one
 * token's long calls took every slot and the other tokens got 503 until
 * they ended; each token is now promised a slot. */
Test(serve_isolation, one_tokens_flood_leaves_the_others_a_slot) {
  if (access("/var/cache/agentnest/images/busybox/layout", F_OK) != 0) cr_skip_test("image cache absent");
  if (an_test_sh("command -v curl >/dev/null") != 0) cr_skip_test("curl is needed");
  g_serve = sv_start_opt(g_sock, "--max-concurrent", "4");
  char *out = NULL;
  cr_assert_eq(call(TOK_A, "POST", "/sandboxes", "{\"image\":\"busybox\"}", &out), 200, "%s", out);
  char *a = member(out, "id");
  free(out);
  /* alice: four calls of 3 s at once, on a server of four slots and three tokens */
  char cmd[2000];
  snprintf(cmd, sizeof cmd,
           "cd '%s' && for i in 1 2 3 4; do curl -s -o f$i.out -w '%%{http_code}\\n' --unix-socket '%s' "
           "-X POST -H 'Authorization: Bearer " TOK_A "' --data-binary '{\"argv\":[\"sleep\",\"3\"]}' "
           "http://localhost/v1/sandboxes/%s/exec >f$i.code & done; sleep 1; "
           "curl -s -o fb.out -w '%%{http_code}\\n' --unix-socket '%s' -H 'Authorization: Bearer " TOK_B "' "
           "http://localhost/v1/sandboxes >fb.code; wait; cat f1.code f2.code f3.code f4.code fb.code",
           bf_work, g_sock, a, g_sock);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  int codes[5] = {0}, n = 0;
  while (n < 5 && fscanf(p, "%d", &codes[n]) == 1) n++;
  pclose(p);
  cr_assert_eq(n, 5, "curl codes: %d", n);
  int ok = 0, busy = 0;
  for (int i = 0; i < 4; i++) ok += codes[i] == 200, busy += codes[i] == 503;
  /* four slots, bob's and carol's promised: alice has two */
  cr_expect_eq(ok, 2, "alice's calls admitted: %d (503: %d)", ok, busy);
  cr_expect_eq(busy, 2, "alice's calls refused: %d", busy);
  cr_expect_eq(codes[4], 200, "bob's call during alice's flood: %d", codes[4]);
  char del[100];
  snprintf(del, sizeof del, "/sandboxes/%s", a);
  call(TOK_A, "DELETE", del, NULL, &out);
  free(out);
  free(a);
}

/* Open a connection to SOCK and send `text` on it; the fd (asserts). */
static int open_and_send(const char *sock, const char *text, size_t len) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  cr_assert_lt(strlen(sock), sizeof sa.sun_path);
  memcpy(sa.sun_path, sock, strlen(sock) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  cr_assert_geq(fd, 0);
  cr_assert_eq(connect(fd, (struct sockaddr *) &sa, sizeof sa), 0, "connect %s", sock);
  if (len) cr_assert_eq(write(fd, text, len), (ssize_t) len);
  return fd;
}

/* redteam: --max-concurrent promises each token a call, but a call needs a
 * connection first, and --max-connections is shared by every client.  Alice
 * held every connection with requests whose body never completes (an
 * idle-timeout apart, a byte now and then keeps each open for ever), and
 * bob's call found no connection (curl: reset, status 000).  Now each
 * connection counts for the token of its request and each token is promised
 * one (server_conns.c): alice's requests beyond her share get 503 and lose
 * their connection. */
Test(serve_isolation, one_tokens_slow_requests_leave_the_others_a_connection) {
  if (access("/var/cache/agentnest/images/busybox/layout", F_OK) != 0) cr_skip_test("image cache absent");
  if (an_test_sh("command -v curl >/dev/null") != 0) cr_skip_test("curl is needed");
  g_serve = sv_start_opt(g_sock, "--max-connections", "8");
  int fds[8];
  static const char head[] = "POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " TOK_A
                             "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{";
  for (int i = 0; i < 8; i++) fds[i] = open_and_send(g_sock, head, sizeof head - 1);
  usleep(300000);
  char *out = NULL;
  int st = call(TOK_B, "GET", "/sandboxes", NULL, &out);
  free(out);
  for (int i = 0; i < 8; i++) close(fds[i]);
  cr_expect_eq(st, 200, "bob's call while alice holds every connection with unfinished bodies: %d", st);
}

/* The same with connections that are merely idle: alice's finished keep-alive requests
 * (HTTP/1.1) leave her connections open until --idle-timeout, and held them all. */
Test(serve_isolation, one_tokens_idle_keep_alive_connections_leave_the_others_one) {
  if (access("/var/cache/agentnest/images/busybox/layout", F_OK) != 0) cr_skip_test("image cache absent");
  if (an_test_sh("command -v curl >/dev/null") != 0) cr_skip_test("curl is needed");
  g_serve = sv_start_opt(g_sock, "--max-connections", "8");
  static const char req[] = "GET /v1/sandboxes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " TOK_A "\r\n\r\n";
  int fds[8], ok = 0, busy = 0;
  for (int i = 0; i < 8; i++) {
    fds[i] = open_and_send(g_sock, req, sizeof req - 1);
    struct pollfd p = {.fd = fds[i], .events = POLLIN};
    char buf[4096] = "";
    if (poll(&p, 1, 5000) == 1 && read(fds[i], buf, sizeof buf - 1) > 0) {
      ok += !strncmp(buf, "HTTP/1.1 200", 12);
      busy += !strncmp(buf, "HTTP/1.1 503", 12);
    }
  }
  char *out = NULL;
  int st = call(TOK_B, "GET", "/sandboxes", NULL, &out);
  free(out);
  for (int i = 0; i < 8; i++) close(fds[i]);
  cr_expect_eq(st, 200, "bob's call while alice keeps %d idle connections (%d refused): %d", ok, busy, st);
  cr_expect(ok >= 1 && busy >= 1, "alice: %d answered, %d refused with 503", ok, busy);
}

/* redteam (was a known hole): a connection whose headers never complete has no token to
 * count it for, and a trickle of bytes defeats --idle-timeout, so unauthenticated clients
 * held every connection.  Now a connection open --idle-timeout without an authenticated
 * request is shut down (server_conns.c), trickle or not. */
Test(serve_isolation, unfinished_headers_leave_the_others_a_connection) {
  if (access("/var/cache/agentnest/images/busybox/layout", F_OK) != 0) cr_skip_test("image cache absent");
  if (an_test_sh("command -v curl >/dev/null") != 0) cr_skip_test("curl is needed");
  g_serve = sv_start_opt(g_sock, "--max-connections=8", "--idle-timeout=2s");
  static const char part[] = "GET /v1/sandboxes HTTP/1.1\r\nHost: x\r\n";
  int fds[8];
  for (int i = 0; i < 8; i++) fds[i] = open_and_send(g_sock, part, sizeof part - 1);
  /* a header byte every 400 ms for 4 s: never idle for --idle-timeout */
  for (int t = 0; t < 10; t++) {
    usleep(400000);
    for (int i = 0; i < 8; i++)
      if (send(fds[i], "X", 1, MSG_NOSIGNAL) < 0) {}   /* EPIPE once the server has shut it down */
  }
  char *out = NULL;
  int st = call(TOK_B, "GET", "/sandboxes", NULL, &out);
  free(out);
  for (int i = 0; i < 8; i++) close(fds[i]);
  cr_expect_eq(st, 200, "bob's call while 8 clients trickle unfinished headers: %d", st);
}

/* redteam: a token's snapshots are kept under its NAME, its sandboxes under
 * the token: two tokens of one name each owned their sandboxes, yet one
 * restored the other's snapshot by its digest and read its files.  serve
 * now refuses two tokens that are not revoked under one name (a rotation
 * keeps the old line, revoked), and one TOKEN on two lines. */
static int serve_with_tokens(const char *text, char **err_text) {
  char path[400], errf[400];
  snprintf(path, sizeof path, "%s/tokens2", bf_work);
  snprintf(errf, sizeof errf, "%s/serve2.err", bf_work);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  chmod(path, 0600);
  /* 124: still serving after 2 s (accepted); anything else: refused at start */
  int st = an_test_sh("timeout 2 '%s' --root '%s' serve --quiet --tokens '%s' --listen 'unix:%s/serve2.sock' 2>'%s'",
                      bf_an_bin, bf_root, path, bf_work, errf);
  *err_text = an_test_read_file(errf, NULL);
  return st;
}

Test(serve_isolation, two_live_tokens_may_not_share_a_name) {
  char *e = NULL;
  int st = serve_with_tokens(TOK_A " alice\n" TOK_B " alice\n", &e);
  cr_expect(st != 124 && st != 0, "serve started with two live tokens named alice (status %d)", st);
  cr_expect(e && strstr(e, "alice") && !strstr(e, TOK_B), "error: %s", e ? e : "");
  free(e);
  st = serve_with_tokens(TOK_A " alice\n" TOK_A " bob\n", &e);
  cr_expect(st != 124 && st != 0, "serve started with one TOKEN on two lines (status %d)", st);
  cr_expect(e && !strstr(e, TOK_A), "the error shows the token: %s", e ? e : "");
  free(e);
  /* a rotation: the old token revoked under the same name */
  st = serve_with_tokens(TOK_A " alice revoked\n" TOK_B " alice\n", &e);
  cr_expect_eq(st, 124, "serve refused a revoked token's name for the new one: %s", e ? e : "");
  free(e);
}

/* Send a create for TOK_A over SOCK and hang up (shutdown for writing: the server sees
 * POLLRDHUP, as when a client program ends); the answer it still gets, in a heap string. */
static char *create_and_hang_up(const char *sock) {
  const char body[] = "{\"image\":\"busybox\",\"timeout\":\"300s\"}";
  char req[600];
  int n = snprintf(req, sizeof req,
                   "POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " TOK_A "\r\n"
                   "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                   sizeof body - 1, body);
  int fd = open_and_send(sock, req, (size_t) n);
  cr_assert_eq(shutdown(fd, SHUT_WR), 0);
  char *resp = calloc(1, 65536);
  size_t len = 0;
  ssize_t r;
  while (len < 65535 && (r = read(fd, resp + len, 65535 - len)) > 0) len += (size_t) r;
  close(fd);
  return resp;
}

/* CI: a client that went away during a create (the Python pool's refill thread, ended with
 * its program) left the sandbox running, owned by nobody who knew its id, until its timeout;
 * and where the create took over 2 s the worker was SIGKILLed mid-create, leaving a
 * half-made "dead" sandbox that only prune removes.  Now the create completes and the
 * worker destroys what it made before it answers. */
Test(serve_isolation, a_create_whose_client_hung_up_leaves_no_sandbox) {
  if (access("/var/cache/agentnest/images/busybox/layout", F_OK) != 0) cr_skip_test("image cache absent");
  start_serve();
  char *resp = create_and_hang_up(g_sock);
  cr_expect(!strncmp(resp, "HTTP/1.1 503", 12) && strstr(resp, "ECANCELED") && strstr(resp, "is destroyed"),
            "answer to the create whose client hung up: %s", resp);
  free(resp);
  cr_assert_eq(bf_an("ls --json"), 0, "%s", bf_err);
  cr_expect_str_eq(bf_out, "[]\n", "sandboxes left after the create whose client hung up: %s", bf_out);
  bf_an("audit --json");
  cr_expect(bf_out && strstr(bf_out, "\"op\":\"create\"") && strstr(bf_out, "\"op\":\"destroy\""),
            "audit: %s", bf_out);
}

/* redteam: a streamed one-shot run (POST /v1/run, Accept: application/x-ndjson) whose client
 * hung up while output flowed: libmicrohttpd's write failed, it closed the connection and
 * stream_free's an_api_job_free SIGKILLed the worker at once (the 30 s grace of a call
 * holding a sandbox was not asked for), leaving the one-shot sandbox "dead" with its
 * workspace mounted on a loop device, its cgroups and its state, owned by no token and
 * removed by nothing but prune.  Any token could pile them up.  Now freeing a job still
 * running cancels it as a hang-up does and waits out its grace. */
Test(serve_isolation, a_streamed_run_whose_client_hung_up_leaves_no_sandbox) {
  if (access("/var/cache/agentnest/images/busybox/layout", F_OK) != 0) cr_skip_test("image cache absent");
  g_serve = sv_start_opt(g_sock, "--profile", "shell");
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  cr_assert_geq(fd, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  cr_assert_lt(strlen(g_sock), sizeof a.sun_path, "socket path too long: %s", g_sock);
  memcpy(a.sun_path, g_sock, strlen(g_sock) + 1);
  cr_assert_eq(connect(fd, (struct sockaddr *) &a, sizeof a), 0, "connect %s: %m", g_sock);
  const char body[] = "{\"language\":\"shell\",\"code\":\"while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done\"}";
  char req[600];
  int n = snprintf(req, sizeof req,
                   "POST /v1/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " TOK_A "\r\n"
                   "Accept: application/x-ndjson\r\nContent-Type: application/json\r\n"
                   "Content-Length: %zu\r\n\r\n%s",
                   sizeof body - 1, body);
  cr_assert_eq(write(fd, req, (size_t) n), n);
  /* read until the output flows, then hang up with data unread (the server's next write fails) */
  char buf[65536];
  size_t got = 0;
  ssize_t r;
  while (got < 256 * 1024 && (r = read(fd, buf, sizeof buf)) > 0) got += (size_t) r;
  cr_assert_geq(got, 256 * 1024, "the run's output did not flow (%zu bytes)", got);
  usleep(300000);   /* the server's socket buffer fills: it waits to write, not in its read callback */
  close(fd);
  /* the cancelled run tears its sandbox down; a SIGKILLed worker leaves it "dead" for good */
  bool empty = false;
  for (int i = 0; i < 100 && !empty; i++) {
    usleep(100000);
    cr_assert_eq(bf_an("ls --json"), 0, "%s", bf_err);
    empty = !strcmp(bf_out, "[]\n");
  }
  cr_expect(empty, "sandboxes left after the streamed run whose client hung up: %s", bf_out);
}

/* redteam: destroy of a dead sandbox (its monitor gone) worked for its token by id only: by
 * its name the token got 404 "no such sandbox" (an_api_open_sandbox tells any failure by
 * name as unknown), while the CLI takes either.  Another token still gets 404 both ways. */
Test(serve_isolation, a_token_destroys_its_dead_sandbox_by_name_and_no_other_token_can) {
  if (access("/var/cache/agentnest/images/busybox/layout", F_OK) != 0) cr_skip_test("image cache absent");
  if (an_test_sh("command -v curl >/dev/null") != 0) cr_skip_test("curl is needed");
  start_serve();
  char *out = NULL;
  cr_assert_eq(call(TOK_A, "POST", "/sandboxes", "{\"image\":\"busybox\",\"name\":\"deadbox\"}", &out), 200, "%s",
               out);
  char *id = member(out, "id");
  free(out);
  cr_assert_eq(bf_an("ls --json"), 0, "%s", bf_err);
  char *mon = strstr(bf_out, "\"monitor_pid\":");
  cr_assert_not_null(mon, "ls: %s", bf_out);
  pid_t mpid = (pid_t) atoi(mon + strlen("\"monitor_pid\":"));
  cr_assert_gt(mpid, 0, "ls: %s", bf_out);
  cr_assert_eq(kill(mpid, SIGKILL), 0);
  for (int i = 0; i < 50; i++) {
    usleep(100000);
    bf_an("ls --json");
    if (bf_out && strstr(bf_out, "\"status\":\"dead\"")) break;
  }
  cr_assert(bf_out && strstr(bf_out, "\"status\":\"dead\""), "the sandbox is not dead: %s", bf_out);
  char path[200];
  const char *ways[] = {"deadbox", id};
  for (int w = 0; w < 2; w++) {
    snprintf(path, sizeof path, "/sandboxes/%s", ways[w]);
    int code = call(TOK_B, "DELETE", path, NULL, &out);
    cr_expect_eq(code, 404, "token B on token A's dead sandbox %s: %d %s", ways[w], code, out);
    free(out);
  }
  int code = call(TOK_A, "DELETE", "/sandboxes/deadbox", NULL, &out);
  cr_expect_eq(code, 200, "token A destroying its dead sandbox by name: %d %s", code, out);
  cr_expect(out && strstr(out, id), "%s", out);
  free(out);
  cr_assert_eq(bf_an("ls --json"), 0, "%s", bf_err);
  cr_expect_str_eq(bf_out, "[]\n", "left: %s", bf_out);
  if (strcmp(bf_out, "[]\n")) {
    bf_an("destroy %s", id);
  }
  free(id);
}
