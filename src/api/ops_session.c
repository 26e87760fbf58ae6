/* api/ops_session.c — the session operations of the table: session_start,
 * session_run, session_stop (agentnest/session.h calls).  A session lives
 * in the sandbox's monitor, so it outlives the worker that started it; a
 * cancelled session_run interrupts the call (KeyboardInterrupt / SIGINT)
 * through the worker's cancel pipe and the session lives on. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/session.h"
#include "api_internal.h"

int an_api_op_session_start(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  enum an_session_kind kind = AN_SESSION_PYTHON;
  const char *k = an_api_in_str(in, "kind");
  int r;
  if (k && (r = an_session_kind_parse(k, &kind, err)) < 0) return r;
  struct an_sandbox *sb = NULL;
  if ((r = an_api_open_sandbox(c, in, &sb, err)) < 0) return r;
  char *name = NULL;
  r = an_session_start(sb, kind, an_api_in_str(in, "session"), 0, &name, err);
  an_sandbox_close(sb);
  if (r < 0) return r;
  yajl_gen_map_open(out);
  an_api_gen_kv_str(out, "session", name);
  an_api_gen_kv_str(out, "kind", an_session_kind_name(kind));
  yajl_gen_map_close(out);
  free(name);
  return 0;
}

int an_api_op_session_run(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  const char *name = an_api_in_str(in, "session"), *code = an_api_in_str(in, "code");
  if (!name || !code) return an_error_set(err, EINVAL, "input: \"session\" and \"code\" are required");
  struct an_sandbox *sb = NULL;
  int r = an_api_open_sandbox(c, in, &sb, err);
  if (r < 0) return r;
  int64_t t = an_api_in_int(in, "timeout_s", 0);
  struct an_session_run_opts ro = {.timeout_ms = t > 0 ? (uint64_t) t * 1000 : 0, .has_cancel_fd = true,
                                   .cancel_fd = c->cancel_fd};
  struct an_session_result res = {0};
  r = an_session_run(sb, name, code, strlen(code), &ro, &res, err);
  an_sandbox_close(sb);
  if (r < 0) return r;
  yajl_gen_map_open(out);
  an_api_gen_kv_str(out, "session", name);
  an_session_result_json_fields(out, &res);
  an_api_gen_kv_bool(out, "cancelled", res.cancelled);
  yajl_gen_map_close(out);
  an_session_result_release(&res);
  return 0;
}

int an_api_op_session_stop(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  const char *name = an_api_in_str(in, "session");
  if (!name) return an_error_set(err, EINVAL, "input: \"session\" is required");
  struct an_sandbox *sb = NULL;
  int r = an_api_open_sandbox(c, in, &sb, err);
  if (r < 0) return r;
  r = an_session_stop(sb, name, err);
  an_sandbox_close(sb);
  if (r < 0) return r;
  yajl_gen_map_open(out);
  an_api_gen_kv_str(out, "session", name);
  an_api_gen_kv_bool(out, "stopped", true);
  yajl_gen_map_close(out);
  return 0;
}
