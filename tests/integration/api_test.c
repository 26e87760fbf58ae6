/* tests/integration/api_test.c — the API layer's concurrency model
 * (agentnest/api.h CONCURRENCY): calls made from several threads of one
 * process at once, each in its worker, on two real sandboxes, keep their
 * results apart; a call cancelled through its cancel fd ends and kills its
 * command; an operation's error comes back with its errno and message. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agentnest/api.h"
#include "batch_fixture.h"
#include "util.h"
#include "util/json_tree.h"
#include "ctx_fixture.h"

static void api_setup(void) {
  bf_setup();
  bf_import_image("python");
}

TestSuite(api, .init = api_setup, .fini = bf_teardown, .timeout = 300);

/* the context names agentnest-init explicitly (the test binary has none next to it) */
static char init_path[4096];

static struct an_api_ctx ctx(void) {
  const char *b = getenv("AN_TEST_BUILD");
  char rel[4096];
  snprintf(rel, sizeof rel, "%s/agentnest-init", b && *b ? b : "build");
  if (!realpath(rel, init_path)) snprintf(init_path, sizeof init_path, "%s", rel);
  setenv("AGENTNEST_INIT", init_path, 1);
  return (struct an_api_ctx){.store_root = bf_root, .lib = an_test_ctx(), .lifeline_fd = -1};
}

static char *call(const struct an_api_ctx *c, const char *op, const char *input, int *r) {
  char *out = NULL;
  an_error_t err = NULL;
  *r = an_api_call_sync(c, an_api_op_find(op), input, strlen(input), -1, 0, &out, NULL, &err);
  if (*r < 0) {
    char *m = strdup(err && err->msg ? err->msg : "?");
    an_error_free(&err);
    return m;
  }
  return out;
}

static char *create(const struct an_api_ctx *c) {
  int r;
  char *out = call(c, "create", "{}", &r);
  cr_assert_eq(r, 0, "create: %s", out);
  yajl_val v = NULL;
  an_error_t err = NULL;
  cr_assert_geq(an_json_parse(out, strlen(out), "create", &v, &err), 0);
  char *id = strdup(an_json_member_str(v, "id"));
  yajl_tree_free(v);
  free(out);
  return id;
}

struct worker_arg { struct an_api_ctx c; const char *id; const char *tag; int good; };

static void *exec_loop(void *p) {
  struct worker_arg *a = p;
  for (int i = 0; i < 4; i++) {
    char in[512];
    snprintf(in, sizeof in,
             "{\"sandbox\":\"%s\",\"argv\":[\"sh\",\"-c\",\"echo %s > /workspace/me; sleep 0.3; cat /workspace/me\"]}",
             a->id, a->tag);
    int r;
    char *out = call(&a->c, "exec", in, &r);
    char want[64];
    snprintf(want, sizeof want, "\"stdout\":\"%s\\n\"", a->tag);
    if (r == 0 && strstr(out, want)) a->good++;
    free(out);
  }
  return NULL;
}

Test(api, calls_from_threads_on_two_sandboxes_run_at_once_and_stay_apart) {
  struct an_api_ctx c = ctx();
  char *a = create(&c), *b = create(&c);
  struct worker_arg wa = {c, a, "alpha", 0}, wb = {c, b, "bravo", 0};
  pthread_t ta, tb;
  cr_assert_eq(pthread_create(&ta, NULL, exec_loop, &wa), 0);
  cr_assert_eq(pthread_create(&tb, NULL, exec_loop, &wb), 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  cr_assert_eq(wa.good, 4, "thread alpha: %d of 4 execs right", wa.good);
  cr_assert_eq(wb.good, 4, "thread bravo: %d of 4 execs right", wb.good);
  char in[128];
  int r;
  snprintf(in, sizeof in, "{\"sandbox\":\"%s\"}", a);
  free(call(&c, "destroy", in, &r));
  cr_assert_eq(r, 0);
  snprintf(in, sizeof in, "{\"sandbox\":\"%s\"}", b);
  free(call(&c, "destroy", in, &r));
  cr_assert_eq(r, 0);
  free(a);
  free(b);
}

struct cancel_arg { struct an_api_ctx c; char in[512]; int fd; int r; char *out; };

static void *cancelled_call(void *p) {
  struct cancel_arg *a = p;
  an_error_t err = NULL;
  a->r = an_api_call_sync(&a->c, an_api_op_find("exec"), a->in, strlen(a->in), a->fd, POLLIN, &a->out, NULL, &err);
  an_error_free(&err);
  return NULL;
}

Test(api, a_cancelled_call_ends_and_kills_its_command) {
  struct an_api_ctx c = ctx();
  char *id = create(&c);
  int pfd[2];
  cr_assert_eq(pipe(pfd), 0);
  struct cancel_arg a = {.c = c, .fd = pfd[0]};
  snprintf(a.in, sizeof a.in,
           "{\"sandbox\":\"%s\",\"argv\":[\"sh\",\"-c\",\"echo $$ > /workspace/pid; exec sleep 600\"]}", id);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, cancelled_call, &a), 0);
  char in[256];
  int r = -1;
  snprintf(in, sizeof in, "{\"sandbox\":\"%s\",\"path\":\"pid\"}", id);
  for (int i = 0; i < 200 && r != 0; i++) {
    free(call(&c, "read_file", in, &r));
    if (r != 0) usleep(50000);
  }
  cr_assert_eq(r, 0, "the command to cancel never started");
  cr_assert_eq(write(pfd[1], "x", 1), 1);
  pthread_join(t, NULL);
  cr_assert(a.r == -ECANCELED || (a.r == 0 && strstr(a.out, "\"cancelled\":true")),
            "the cancelled call returned %d %s", a.r, a.out ? a.out : "");
  snprintf(in, sizeof in, "{\"sandbox\":\"%s\",\"argv\":[\"sh\",\"-c\",\"kill -0 $(cat /workspace/pid)\"]}", id);
  char *out = call(&c, "exec", in, &r);
  cr_assert(r == 0 && strstr(out, "\"exit_code\":1"), "the cancelled command is still alive: %s", out);
  free(out);
  free(a.out);
  snprintf(in, sizeof in, "{\"sandbox\":\"%s\"}", id);
  free(call(&c, "destroy", in, &r));
  close(pfd[0]);
  close(pfd[1]);
  free(id);
}

Test(api, an_operation_error_keeps_its_errno_and_message) {
  struct an_api_ctx c = ctx();
  int r;
  char *msg = call(&c, "inspect", "{\"sandbox\":\"nosuchsandbox\"}", &r);
  cr_assert_eq(r, -ENOENT, "inspect of no sandbox: %d %s", r, msg);
  cr_assert(strstr(msg, "nosuchsandbox"), "message names it: %s", msg);
  free(msg);
  msg = call(&c, "exec", "{\"argv\":[\"true\"]}", &r);
  cr_assert_eq(r, -EINVAL);
  cr_assert(strstr(msg, "\"sandbox\" is required"), "%s", msg);
  free(msg);
}

/* A client names shipped profiles only: a path would load a profile it wrote itself
 * (e.g. in a workspace) with seccomp_unsafe or network full. */
Test(api, create_refuses_a_profile_given_as_a_path) {
  struct an_api_ctx c = ctx();
  char prof[400], in[600];
  snprintf(prof, sizeof prof, "%s/evil.json", bf_work);
  FILE *f = fopen(prof, "w");
  cr_assert_not_null(f);
  fputs("{\"image\":\"python\",\"seccomp_unsafe\":true}", f);
  fclose(f);
  snprintf(in, sizeof in, "{\"profile\":\"%s\"}", prof);
  int r;
  char *msg = call(&c, "create", in, &r);
  cr_assert_eq(r, -EINVAL, "a profile path was accepted: %d %s", r, msg);
  cr_assert(strstr(msg, "not a path"), "%s", msg);
  free(msg);
  cr_assert_eq(bf_an("ls --json"), 0);
  cr_assert(!strstr(bf_out, "\"id\""), "a sandbox was made: %s", bf_out);
}
