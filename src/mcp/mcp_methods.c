/* mcp/mcp_methods.c — one JSON-RPC message of the MCP server: validation
 * as JSON-RPC 2.0, and the methods answered without a job: initialize
 * (version negotiation), ping, tools/list (generated from the operations
 * table), notifications/initialized and notifications/cancelled. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "mcp_internal.h"
#include "util/json_tree.h"

const char *const an_mcp_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", NULL};

static void gstr(yajl_gen g, const char *v) { yajl_gen_string(g, (const unsigned char *) v, strlen(v)); }

static void initialize(struct mcp_server *s, const struct rpc_id *id, yajl_val params) {
  const char *want = an_json_member_str(params, "protocolVersion");
  /* the client's revision when we speak it, else our newest (the client decides) */
  const char *v = an_mcp_versions[0];
  for (size_t i = 0; want && an_mcp_versions[i]; i++)
    if (!strcmp(want, an_mcp_versions[i])) v = an_mcp_versions[i];
  snprintf(s->version, sizeof s->version, "%s", v);
  yajl_gen g = rpc_begin();
  if (!g) return;
  gstr(g, "id");
  rpc_id_gen(g, id);
  gstr(g, "result");
  yajl_gen_map_open(g);
  gstr(g, "protocolVersion");
  gstr(g, v);
  gstr(g, "capabilities");
  yajl_gen_map_open(g);
  gstr(g, "tools");
  yajl_gen_map_open(g);
  gstr(g, "listChanged");
  yajl_gen_bool(g, 0);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
  gstr(g, "serverInfo");
  yajl_gen_map_open(g);
  gstr(g, "name");
  gstr(g, "agentnest");
  gstr(g, "title");
  gstr(g, "AgentNest sandboxes");
  gstr(g, "version");
  gstr(g, AN_VERSION);
  yajl_gen_map_close(g);
  gstr(g, "instructions");
  gstr(g, "Run untrusted code in disposable Linux sandboxes. Use run_code for a one-off Python or shell "
          "snippet; create a sandbox for state across calls (exec, write_file, read_file, ...), destroy it "
          "when done. Sandboxes are destroyed when this session ends.");
  yajl_gen_map_close(g);
  mcp_send(s, g);
  mcp_log(s, "mcp: initialize: client asked %s, speaking %s", want ? want : "(none)", v);
}

static void tools_list(struct mcp_server *s, const struct rpc_id *id) {
  yajl_gen g = rpc_begin();
  if (!g) return;
  gstr(g, "id");
  rpc_id_gen(g, id);
  gstr(g, "result");
  yajl_gen_map_open(g);
  gstr(g, "tools");
  yajl_gen_array_open(g);
  size_t n = 0;
  const struct an_api_op *ops = an_api_ops(&n);
  for (size_t i = 0; i < n; i++) {
    if (!mcp_tool_allowed(s, ops[i].name)) continue;
    yajl_val in = NULL, out = NULL;
    an_error_t err = NULL;
    an_json_parse(ops[i].input_schema, strlen(ops[i].input_schema), ops[i].name, &in, &err);
    an_error_free(&err);
    an_json_parse(ops[i].output_schema, strlen(ops[i].output_schema), ops[i].name, &out, &err);
    an_error_free(&err);
    yajl_gen_map_open(g);
    gstr(g, "name");
    gstr(g, ops[i].name);
    gstr(g, "title");
    gstr(g, ops[i].title);
    gstr(g, "description");
    gstr(g, ops[i].description);
    gstr(g, "inputSchema");
    an_api_gen_value(g, in);
    gstr(g, "outputSchema");
    an_api_gen_value(g, out);
    gstr(g, "annotations");
    yajl_gen_map_open(g);
    gstr(g, "title");
    gstr(g, ops[i].title);
    gstr(g, "readOnlyHint");
    yajl_gen_bool(g, (ops[i].flags & AN_API_OP_READ_ONLY) != 0);
    gstr(g, "destructiveHint");
    yajl_gen_bool(g, (ops[i].flags & AN_API_OP_DESTROYS) || !strcmp(ops[i].name, "restore") ||
                         !strcmp(ops[i].name, "write_file"));
    gstr(g, "openWorldHint");
    yajl_gen_bool(g, 0);
    yajl_gen_map_close(g);
    yajl_gen_map_close(g);
    yajl_tree_free(in);
    yajl_tree_free(out);
  }
  yajl_gen_array_close(g);
  yajl_gen_map_close(g);
  mcp_send(s, g);
}

static void result_empty(struct mcp_server *s, const struct rpc_id *id) {
  yajl_gen g = rpc_begin();
  if (!g) return;
  gstr(g, "id");
  rpc_id_gen(g, id);
  gstr(g, "result");
  yajl_gen_map_open(g);
  yajl_gen_map_close(g);
  mcp_send(s, g);
}

void mcp_handle_message(struct mcp_server *s, const char *line, size_t len) {
  yajl_val msg = NULL;
  an_error_t err = NULL;
  if (an_json_parse(line, len, "message", &msg, &err) < 0) {
    rpc_send_error(s->o->out_fd, NULL, RPC_PARSE_ERROR, "Parse error: not JSON");
    an_error_free(&err);
    return;
  }
  struct rpc_id id = {0};
  yajl_val idv = an_json_member(msg, "id");
  const char *jsonrpc = an_json_member_str(msg, "jsonrpc");
  yajl_val method = an_json_member(msg, "method");
  yajl_val params = an_json_member(msg, "params");
  if (!YAJL_IS_OBJECT(msg) || !rpc_id_copy(&id, idv) || !jsonrpc || strcmp(jsonrpc, "2.0") ||
      (method && !YAJL_IS_STRING(method)) || (params && !YAJL_IS_OBJECT(params) && !YAJL_IS_ARRAY(params))) {
    rpc_send_error(s->o->out_fd, id.present ? &id : NULL, RPC_INVALID_REQUEST,
                   YAJL_IS_ARRAY(msg) ? "Invalid Request: JSON-RPC batches are not supported (MCP 2025-06-18 removed them)"
                                      : "Invalid Request: not a JSON-RPC 2.0 request");
    goto out;
  }
  if (!method) goto out;   /* a response to us: we send no requests */
  const char *m = method->u.string;
  if (!id.present) {       /* notifications: never answered */
    if (!strcmp(m, "notifications/initialized")) s->initialized = true;
    else if (!strcmp(m, "notifications/cancelled"))
      mcp_cancel(s, an_json_member(params, "requestId"));
    goto out;
  }
  if (!strcmp(m, "initialize")) initialize(s, &id, params);
  else if (!strcmp(m, "ping")) result_empty(s, &id);
  else if (!strcmp(m, "tools/list")) tools_list(s, &id);
  else if (!strcmp(m, "tools/call")) {
    if (!params || !YAJL_IS_OBJECT(params) || !an_json_member_str(params, "name"))
      rpc_send_error(s->o->out_fd, &id, RPC_INVALID_PARAMS, "Invalid params: tools/call needs {\"name\": TOOL}");
    else mcp_tools_call(s, &id, params);
  } else {
    char msgtext[300];
    snprintf(msgtext, sizeof msgtext, "Method not found: %.200s", m);
    rpc_send_error(s->o->out_fd, &id, RPC_METHOD_NOT_FOUND, msgtext);
  }
out:
  rpc_id_free(&id);
  yajl_tree_free(msg);
}
