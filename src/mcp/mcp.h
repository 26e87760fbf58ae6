/* mcp/mcp.h — `agentnest mcp`: a Model Context Protocol server over stdio
 * (newline-delimited JSON-RPC 2.0 messages; MCP revision 2025-11-25,
 * negotiating 2025-06-18 and 2025-03-26).  Its tools are the operations
 * table (agentnest/api.h); every call runs in a worker process.
 *
 * Lifecycle: initialize / notifications/initialized, ping, tools/list,
 * tools/call (structuredContent + a text copy; an operation's failure is a
 * result with isError; progress notifications every second when the
 * request carried _meta.progressToken), notifications/cancelled (the
 * running call is killed, no response is sent).  Malformed JSON: -32700;
 * not a JSON-RPC request: -32600; unknown method: -32601; unknown or
 * disallowed tool: -32602.
 *
 * Sandboxes: a tool may only touch sandboxes this server created; at most
 * max_sandboxes at once; each lifetime capped by max_lifetime_ms.  When the
 * client goes away (stdin EOF, SIGTERM, SIGINT, SIGHUP) every sandbox the
 * server created is destroyed before it exits; if the server is SIGKILLed,
 * each sandbox's monitor destroys it (its owner process, a worker tied to
 * the server, dies with it: api.h SANDBOXES TIED TO THE FRONT END) and
 * `agentnest prune` removes what is left.
 *
 * an_mcp_serve is single-threaded and writes only to out_fd; an_mcp_http_message
 * (the Streamable HTTP transport) may run on several threads at once, one
 * message each.  Neither exits the process. */
#ifndef AN_MCP_MCP_H
#define AN_MCP_MCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "agentnest/api.h"

struct an_mcp_opts {
  struct an_api_ctx api;         /* store, init, profiles, --profile, lifetime cap; may_use
                                    and lifeline are set by the server */
  const char *const *allow_tools;/* NULL: every operation; else a NULL-terminated list */
  size_t max_sandboxes;          /* 0: no cap */
  int in_fd, out_fd;             /* stdin, stdout */
  int log_fd;                    /* -1: quiet; else one line per call (never a secret) */
};

/* Serve until the client goes away; then destroy what was created.
 * Returns 0, or a negative errno with *err (a write to out_fd failed: the
 * client is gone; cleanup still ran). */
int an_mcp_serve(const struct an_mcp_opts *opts, an_error_t *err);

/* One POST of the Streamable HTTP transport (mcp_http.c; `agentnest serve`
 * at /mcp).  api.may_use / lifeline come from the front end; owned lists the
 * ids the client has (nowned); on_created / on_destroyed are told what a
 * call made or removed (the keeper pid is the caller's to reap).  *resp: the
 * JSON-RPC response (heap; "" for a notification: answer 202).  The call is
 * cancelled when cancel_fd reports cancel_events. */
struct an_mcp_http {
  struct an_api_ctx api;
  const char *const *allow_tools;
  size_t max_sandboxes;
  const char *const *owned;
  size_t nowned;
  int cancel_fd;
  short cancel_events;
  int log_fd;
  void (*on_created)(void *data, const char *id, pid_t keeper);
  void (*on_destroyed)(void *data, const char *id);
  /* Admission of a call that holds a sandbox (an_api_call_holds_sandbox)
   * when max_sandboxes is set: admit checks the client's count (its
   * sandboxes and the calls holding one, across concurrent requests) and
   * reserves a slot in the same step (false: refused, the tool result says
   * so); release gives the slot back when the call ends, after on_created.
   * NULL: counted within this message only. */
  bool (*admit)(void *data);
  void (*release)(void *data);
  void *hook_data;
};
int an_mcp_http_message(const struct an_mcp_http *h, const char *body, size_t len, char **resp,
                        size_t *resp_len, an_error_t *err);

/* The MCP revisions this server speaks, newest first, NULL-terminated. */
extern const char *const an_mcp_versions[];

#endif
