/* tests/bench/frontend_overhead.c — what the agent front ends add over the
 * library call for one exec of `true` in a running sandbox (issue 14's
 * target: < 1 ms), each path timed N times on the client side
 * (CLOCK_MONOTONIC) in one process, medians printed as JSON:
 *   lib_exec        an_sandbox_exec on a handle kept open;
 *   lib_open_exec   an_sandbox_open_ctx + an_sandbox_exec + close: what a
 *                   front end's worker does per call (the baseline);
 *   api_worker      an_api_call_sync of the exec operation (a worker process
 *                   per call, no transport);
 *   mcp_stdio       tools/call exec over `agentnest mcp` (stdio pipes);
 *   http_unix       POST /v1/sandboxes/ID/exec to `agentnest serve` over a
 *                   unix socket, one keep-alive connection.
 * Also each path's minimum ("min_ms"): on a shared host the load only adds
 * to a sample, so the minimum is the steadier estimate of the cost itself.
 * usage: frontend_overhead AGENTNEST ROOT N  (ROOT holds the busybox image;
 * AGENTNEST_INIT / AGENTNEST_PROFILES as for the CLI).  Built and run by
 * tests/bench/frontend_overhead.sh.  A front end itself, so it reads the
 * environment (the library does not). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "agentnest/api.h"
#include "agentnest/ctx.h"
#include "agentnest/sandbox.h"
#include "agentnest/sandbox_opts.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double) t.tv_sec * 1e3 + (double) t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* the minima of the paths, in the order measured (printed as "min_ms") */
static double mins[5];
static int nmins;

static double median(double *v, int n) {
  qsort(v, (size_t) n, sizeof *v, cmp);
  if (nmins < 5) mins[nmins++] = v[0];
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, an_error_t *err) {
  fprintf(stderr, "frontend_overhead: %s: %s\n", what, err && *err ? (*err)->msg : strerror(errno));
  exit(1);
}

/* ---- MCP over stdio ---- */
struct peer { FILE *in, *out; pid_t pid; };

static struct peer spawn(char *const argv[]) {
  int to[2], from[2];
  if (pipe(to) < 0 || pipe(from) < 0) die("pipe", NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(to[0], 0), dup2(from[1], 1);
    close(to[1]), close(from[0]);
    execv(argv[0], argv);
    _exit(127);
  }
  close(to[0]), close(from[1]);
  return (struct peer){fdopen(to[1], "w"), fdopen(from[0], "r"), pid};
}

/* Send one request, read lines until the answer with id `id`; it in buf. */
static void rpc(struct peer *p, int id, const char *method, const char *params, char *buf, size_t n) {
  fprintf(p->in, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}\n", id, method, params);
  fflush(p->in);
  char want[32];
  snprintf(want, sizeof want, "\"id\":%d", id);
  while (fgets(buf, (int) n, p->out))
    if (strstr(buf, want)) return;
  die("mcp: no answer", NULL);
}

static void json_id(const char *s, char id[16]) {
  const char *p = strstr(s, "\\\"id\\\":\\\"");   /* inside the text content */
  const char *q = strstr(s, "\"structuredContent\":{\"id\":\"");
  if (q) p = q + strlen("\"structuredContent\":{\"id\":\"");
  else if (p) p += strlen("\\\"id\\\":\\\"");
  if (!p || sscanf(p, "%12[0-9a-f]", id) != 1) die("no sandbox id in the answer", NULL);
}

/* ---- HTTP over a unix socket ---- */
static int http(int fd, const char *method, const char *path, const char *token, const char *body, char *buf,
                size_t n) {
  char req[1024];
  int len = snprintf(req, sizeof req,
                     "%s %s HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     method, path, token, strlen(body), body);
  if (write(fd, req, (size_t) len) != len) die("http write", NULL);
  size_t got = 0;
  char *end = NULL;
  while (!(end = strstr(buf, "\r\n\r\n"))) {
    ssize_t k = read(fd, buf + got, n - 1 - got);
    if (k <= 0) die("http read", NULL);
    got += (size_t) k;
    buf[got] = 0;
  }
  const char *cl = strcasestr(buf, "Content-Length:");
  size_t want = cl ? strtoul(cl + 15, NULL, 10) : 0, head = (size_t) (end + 4 - buf);
  while (got < head + want) {
    ssize_t k = read(fd, buf + got, n - 1 - got);
    if (k <= 0) die("http read body", NULL);
    got += (size_t) k;
  }
  buf[got] = 0;
  int status = 0;
  sscanf(buf, "HTTP/1.1 %d", &status);
  memmove(buf, buf + head, got - head + 1);
  return status;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: frontend_overhead AGENTNEST ROOT N\n");
    return 2;
  }
  const char *an = argv[1], *root = argv[2];
  int n = atoi(argv[3]);
  if (n < 1 || n > 10000) return 2;
  double *t = calloc((size_t) n, sizeof *t);
  an_error_t err = NULL;
  struct an_ctx *ctx = NULL;
  const char *ie = getenv("AGENTNEST_INIT"), *pe = getenv("AGENTNEST_PROFILES");
  if (an_ctx_new(&(struct an_ctx_config){.init_path = ie && *ie ? ie : NULL, .profiles_dir = pe && *pe ? pe : NULL},
                 &ctx, &err) < 0)
    die("context", &err);
  char *const tru[] = {"true", NULL};
  struct an_exec_opts eo = {.stdin_fd = -1};
  struct an_exec_result res;
  printf("{\"n\":%d", n);

  /* library: a sandbox of its own */
  struct an_sandbox_opts *o = NULL;
  struct an_sandbox *sb = NULL;
  if (an_sandbox_opts_new_ctx(ctx, &o, &err) < 0 || an_sandbox_opts_set_image(o, "busybox", &err) < 0 ||
      an_sandbox_create(root, o, &sb, &err) < 0)
    die("create", &err);
  char id[16];
  snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
  for (int i = 0; i < n; i++) {
    double a = now_ms();
    if (an_sandbox_exec(sb, tru, &eo, &res, &err) < 0) die("exec", &err);
    t[i] = now_ms() - a;
    an_exec_result_release(&res);
  }
  double lib = median(t, n);
  printf(",\"lib_exec_ms\":%.3f", lib);
  for (int i = 0; i < n; i++) {
    double a = now_ms();
    struct an_sandbox *s2 = NULL;
    if (an_sandbox_open_ctx(ctx, root, id, &s2, &err) < 0 || an_sandbox_exec(s2, tru, &eo, &res, &err) < 0)
      die("open+exec", &err);
    an_sandbox_close(s2);
    t[i] = now_ms() - a;
    an_exec_result_release(&res);
  }
  double base = median(t, n);
  printf(",\"lib_open_exec_ms\":%.3f", base);

  /* the API worker, no transport */
  struct an_api_ctx api = {.store_root = root, .lib = ctx, .lifeline_fd = -1};
  char in[128];
  snprintf(in, sizeof in, "{\"sandbox\":\"%s\",\"argv\":[\"true\"]}", id);
  for (int i = 0; i < n; i++) {
    char *out = NULL;
    size_t len = 0;
    double a = now_ms();
    if (an_api_call_sync(&api, an_api_op_find("exec"), in, strlen(in), -1, 0, &out, &len, &err) < 0)
      die("api exec", &err);
    t[i] = now_ms() - a;
    free(out);
  }
  double wk = median(t, n);
  printf(",\"api_worker_ms\":%.3f", wk);
  an_sandbox_destroy(sb, 0, &err);
  an_error_free(&err);

  /* MCP over stdio: its own sandbox (a client sees only what it created) */
  char rb[1 << 16];
  char *margv[] = {(char *) an, "--root", (char *) root, "mcp", "--quiet", NULL};
  struct peer p = spawn(margv);
  rpc(&p, 1, "initialize", "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"bench\","
      "\"version\":\"1\"}}", rb, sizeof rb);
  fprintf(p.in, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
  rpc(&p, 2, "tools/call", "{\"name\":\"create\",\"arguments\":{\"image\":\"busybox\"}}", rb, sizeof rb);
  json_id(rb, id);
  char params[256];
  snprintf(params, sizeof params, "{\"name\":\"exec\",\"arguments\":{\"sandbox\":\"%s\",\"argv\":[\"true\"]}}", id);
  for (int i = 0; i < n; i++) {
    double a = now_ms();
    rpc(&p, 10 + i, "tools/call", params, rb, sizeof rb);
    t[i] = now_ms() - a;
    if (!strstr(rb, "\"isError\":false")) die("mcp exec failed", NULL);
  }
  double mcp = median(t, n);
  printf(",\"mcp_stdio_ms\":%.3f", mcp);
  fclose(p.in);   /* the client goes away: the server destroys its sandbox */
  waitpid(p.pid, NULL, 0);
  fclose(p.out);

  /* HTTP over a unix socket */
  char dir[] = "/tmp/an-fe-bench-XXXXXX";
  if (!mkdtemp(dir)) die("mkdtemp", NULL);
  char tokens[64], sock[64], listen[80];
  snprintf(tokens, sizeof tokens, "%s/tokens", dir);
  snprintf(sock, sizeof sock, "%s/s", dir);
  snprintf(listen, sizeof listen, "unix:%s", sock);
  const char *tok = "bench-token-0123456789abcdef";
  FILE *f = fopen(tokens, "w");
  if (!f) die("tokens", NULL);
  fprintf(f, "%s bench\n", tok);
  fclose(f);
  chmod(tokens, 0600);
  pid_t srv = fork();
  if (srv == 0) {
    execl(an, an, "--root", root, "serve", "--quiet", "--tokens", tokens, "--listen", listen, (char *) NULL);
    _exit(127);
  }
  struct stat st;
  for (int i = 0; i < 200 && stat(sock, &st) != 0; i++) usleep(20000);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
  if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) die("connect serve", NULL);
  if (http(fd, "POST", "/v1/sandboxes", tok, "{\"image\":\"busybox\"}", rb, sizeof rb) != 200) die(rb, NULL);
  if (sscanf(strstr(rb, "\"id\":\"") ? strstr(rb, "\"id\":\"") + 6 : "", "%12[0-9a-f]", id) != 1) die(rb, NULL);
  char path[128];
  snprintf(path, sizeof path, "/v1/sandboxes/%s/exec", id);
  for (int i = 0; i < n; i++) {
    double a = now_ms();
    if (http(fd, "POST", path, tok, "{\"argv\":[\"true\"]}", rb, sizeof rb) != 200) die(rb, NULL);
    t[i] = now_ms() - a;
  }
  double web = median(t, n);
  printf(",\"http_unix_ms\":%.3f", web);
  snprintf(path, sizeof path, "/v1/sandboxes/%s", id);
  http(fd, "DELETE", path, tok, "", rb, sizeof rb);
  close(fd);
  kill(srv, SIGTERM);
  waitpid(srv, NULL, 0);
  unlink(tokens), unlink(sock), rmdir(dir);

  printf(",\"overhead_ms\":{\"api_worker\":%.3f,\"mcp_stdio\":%.3f,\"http_unix\":%.3f}", wk - base, mcp - base,
         web - base);
  printf(",\"min_ms\":{\"lib_exec\":%.3f,\"lib_open_exec\":%.3f,\"api_worker\":%.3f,\"mcp_stdio\":%.3f,"
         "\"http_unix\":%.3f}}\n", mins[0], mins[1], mins[2], mins[3], mins[4]);
  an_sandbox_opts_free(o);
  an_ctx_free(ctx);
  free(t);
  return 0;
}
