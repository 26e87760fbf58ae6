/* mcp/mcp_rpc.h — JSON-RPC 2.0 plumbing of the MCP server (internal): ids
 * and progress tokens kept past their message, and the writers of
 * responses, errors and notifications (yajl).  mcp_rpc.c. */
#ifndef AN_MCP_RPC_H
#define AN_MCP_RPC_H

#include <stdbool.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

/* JSON-RPC 2.0 error codes (section 5.1) */
#define RPC_PARSE_ERROR -32700
#define RPC_INVALID_REQUEST -32600
#define RPC_METHOD_NOT_FOUND -32601
#define RPC_INVALID_PARAMS -32602
#define RPC_INTERNAL_ERROR -32603

/* A request id or progress token: a string or an integer, copied. */
struct rpc_id {
  bool present, is_str;
  char *text;
};
/* Copy v (string or integer); false when v is another type. */
bool rpc_id_copy(struct rpc_id *id, yajl_val v);
void rpc_id_free(struct rpc_id *id);
bool rpc_id_equal(const struct rpc_id *a, yajl_val v);
void rpc_id_gen(yajl_gen g, const struct rpc_id *id);   /* null when absent */

/* A yajl generator for one message, opened as {"jsonrpc":"2.0",. */
yajl_gen rpc_begin(void);
/* Close the map and write the message + '\n' to fd; frees g.  0 or -errno. */
int rpc_send(yajl_gen g, int fd);

/* {"jsonrpc","id","error":{"code","message"}} */
int rpc_send_error(int fd, const struct rpc_id *id, int code, const char *message);

#endif
