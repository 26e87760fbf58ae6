/* mcp/mcp_internal.h — the MCP server's state and what its two files share
 * (internal): mcp_server.c (loop, calls, cleanup), mcp_methods.c
 * (message dispatch, initialize, tools/list). */
#ifndef AN_MCP_INTERNAL_H
#define AN_MCP_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <sys/types.h>
#include "mcp.h"
#include "mcp_rpc.h"

#define MCP_MAX_CALLS 64

struct mcp_owned {
  char id[16];
  pid_t keeper;          /* the worker that owns it (lifeline), 0: none */
};

struct mcp_call {
  struct an_api_job *job;
  const struct an_api_op *op;
  struct rpc_id id, token;
  bool cancelled;
  bool holds;            /* counted against --max-sandboxes while it runs (an_api_call_holds_sandbox) */
  uint64_t next_progress_ms;
  int64_t progress;
};

struct mcp_server {
  const struct an_mcp_opts *o;
  struct an_api_ctx ctx;
  struct mcp_owned *own;
  size_t nown, capown;
  char (*gone)[16];      /* ids it destroyed: audit may still read them */
  size_t ngone, capgone;
  struct mcp_call calls[MCP_MAX_CALLS];
  size_t ncalls;
  char *in;
  size_t inlen, incap;
  bool skipping, eof, client_gone, signalled, initialized, no_progress;
  char version[16];
  /* the HTTP transport's hooks: the serve front end owns what a call made */
  void (*on_created)(void *data, const char *id, pid_t keeper);
  void (*on_destroyed)(void *data, const char *id);
  /* the HTTP transport's admission: the front end's count of the client's
   * sandboxes (across its concurrent requests) decides, and reserves a slot
   * in the same step; release gives it back when the call ends (after
   * on_created has counted what it made).  NULL: this server's own count. */
  bool (*admit)(void *data);
  void (*release)(void *data);
  void *hook_data;
};

void mcp_finish_calls(struct mcp_server *s, int cancel_fd, short cancel_events);

void mcp_handle_message(struct mcp_server *s, const char *line, size_t len);
void mcp_tools_call(struct mcp_server *s, const struct rpc_id *id, yajl_val params);
void mcp_cancel(struct mcp_server *s, yajl_val request_id);
void mcp_tool_error(struct mcp_server *s, const struct rpc_id *id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool mcp_tool_allowed(const struct mcp_server *s, const char *name);
int mcp_send(struct mcp_server *s, yajl_gen g);
void mcp_log(struct mcp_server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
