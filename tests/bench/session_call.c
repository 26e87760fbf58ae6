/* tests/bench/session_call.c — one call of `pass` in a live Python session
 * through the library, timed on the caller's side (CLOCK_MONOTONIC), N
 * times each way (issue 13: a session call under 1 ms beyond Python's own
 * work; the CLI row adds a process start per call):
 *   kept   an_session_run on a sandbox handle kept open (what a front end
 *          holding the sandbox pays: attach to the monitor, the call, the
 *          fsync'ed audit record, the event);
 *   open   an_sandbox_open_ctx + an_session_run + an_sandbox_close.
 * Prints {"kept":[s,...],"open":[s,...]}: each call's seconds, the form
 * tests/bench/bench.sh's rows take.
 * usage: session_call ROOT SANDBOX SESSION N  (AGENTNEST_INIT as for the
 * CLI).  Built and run by tests/bench/bench.sh.  A front end itself, so it
 * reads the environment (the library does not). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "agentnest/ctx.h"
#include "agentnest/sandbox.h"
#include "agentnest/session.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

static void die(const char *what, an_error_t *err) {
  fprintf(stderr, "session_call: %s: %s\n", what, err && *err ? (*err)->msg : "failed");
  exit(1);
}

static void call(struct an_sandbox *sb, const char *session, an_error_t *err) {
  struct an_session_result r;
  memset(&r, 0, sizeof r);
  if (an_session_run(sb, session, "pass", 4, NULL, &r, err) < 0) die("session run", err);
  if (r.status != 0) die("session run: status not 0", NULL);
  an_session_result_release(&r);
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: session_call ROOT SANDBOX SESSION N\n");
    return 2;
  }
  const char *root = argv[1], *id = argv[2], *session = argv[3];
  int n = atoi(argv[4]);
  if (n < 1 || n > 100000) return 2;
  an_error_t err = NULL;
  struct an_ctx *ctx = NULL;
  const char *ie = getenv("AGENTNEST_INIT");
  if (an_ctx_new(&(struct an_ctx_config){.init_path = ie && *ie ? ie : NULL}, &ctx, &err) < 0) die("context", &err);
  struct an_sandbox *sb = NULL;
  if (an_sandbox_open_ctx(ctx, root, id, &sb, &err) < 0) die("open", &err);
  for (int i = 0; i < 5; i++) call(sb, session, &err);   /* warm-up */
  printf("{\"kept\":[");
  for (int i = 0; i < n; i++) {
    double a = now_s();
    call(sb, session, &err);
    printf("%s%.7f", i ? "," : "", now_s() - a);
  }
  an_sandbox_close(sb);
  printf("],\"open\":[");
  for (int i = 0; i < n; i++) {
    double a = now_s();
    struct an_sandbox *s2 = NULL;
    if (an_sandbox_open_ctx(ctx, root, id, &s2, &err) < 0) die("open", &err);
    call(s2, session, &err);
    an_sandbox_close(s2);
    printf("%s%.7f", i ? "," : "", now_s() - a);
  }
  printf("]}\n");
  an_ctx_free(ctx);
  return 0;
}
