/* api/api_internal.h — what the operation handlers share (internal): the
 * call they run in, input accessors with messages that name the member,
 * and the JSON writers of results.  The table is ops_table.c; the worker
 * machinery worker.c; handlers ops_sandbox.c, ops_exec.c, ops_files.c, ops_session.c,
 * ops_network.c. */
#ifndef AN_API_INTERNAL_H
#define AN_API_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>
#include "agentnest/api.h"
#include "agentnest/sandbox.h"

/* A call as its handler sees it (in the worker). */
struct an_api_call {
  const struct an_api_ctx *ctx;
  int cancel_fd;          /* readable when the front end cancels the call */
  int stream_fd;          /* where a streaming handler's output frames go (the result pipe) */
  bool keep_alive;        /* set by a handler that made an owned sandbox: the worker stays
                             as its owner until the lifeline closes */
};

/* Input members (validated already against the schema: types are right). */
const char *an_api_in_str(yajl_val in, const char *key);          /* NULL: absent */
bool an_api_in_bool(yajl_val in, const char *key, bool dflt);
int64_t an_api_in_int(yajl_val in, const char *key, int64_t dflt);
yajl_val an_api_in_array(yajl_val in, const char *key);           /* NULL: absent */
yajl_val an_api_in_object(yajl_val in, const char *key);          /* NULL: absent */

/* Open the input's "sandbox" (id or name) and check ctx->may_use on its id:
 * a sandbox the client may not use is -ENOENT "sandbox X: no such sandbox",
 * the answer of an unknown one (nothing about it is revealed). */
int an_api_open_sandbox(struct an_api_call *call, yajl_val in, struct an_sandbox **out,
                        an_error_t *err);

/* Exec options from the input: timeout_s, env {K:V}, workdir, stdin (text),
 * with call's cancel pipe; with "stream": true, eo.on_data sends each
 * output chunk to the front end as it comes ("D<stream><8 hex digits
 * length>\n" + the bytes on call->stream_fd, worker.c).  *env_out / *stdin_fd_out to be freed/closed by
 * the caller (an_api_exec_in_release). */
struct an_api_exec_in {
  struct an_exec_opts eo;
  char **env;
  int stdin_fd;
};
int an_api_exec_in(struct an_api_call *call, yajl_val in, struct an_api_exec_in *x,
                   an_error_t *err);
void an_api_exec_in_release(struct an_api_exec_in *x);

/* {"id"?, exit_code, ..., artifacts:[]}: the exec result object. */
void an_api_gen_exec_result(yajl_gen g, const char *id, const struct an_exec_result *res);

/* Small yajl writers (status ignored: the worker checks yajl_gen_get_buf). */
void an_api_gen_kv_str(yajl_gen g, const char *k, const char *v);   /* NULL: null */
void an_api_gen_kv_int(yajl_gen g, const char *k, int64_t v);
void an_api_gen_kv_bool(yajl_gen g, const char *k, bool v);
void an_api_gen_key(yajl_gen g, const char *k);

/* Handlers (the table's entries). */
int an_api_op_create(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_destroy(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_ls(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_inspect(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_fork(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_events(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_exec(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_run_code(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_write_file(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_read_file(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_list_files(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_artifacts(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_snapshot(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_restore(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_session_start(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_session_run(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_session_stop(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_network(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_network_change(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_extend(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);
int an_api_op_audit(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err);

#endif
