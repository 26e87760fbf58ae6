/* mcp/mcp_http.c — one POST of MCP's Streamable HTTP transport (revision
 * 2025-11-25 "Streamable HTTP"), for `agentnest serve` at /mcp: the message
 * is handled by the same methods as stdio (mcp_methods.c), a tools/call runs
 * to its end in its worker, and the response is returned as one JSON body
 * (the transport lets a server answer with application/json instead of an
 * SSE stream; progress notifications are therefore not sent, and a client
 * that closes the connection cancels the call).  Sandboxes a call creates
 * or destroys are reported to the front end through hooks (mcp.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "mcp_internal.h"

int an_mcp_http_message(const struct an_mcp_http *h, const char *body, size_t len, char **resp,
                        size_t *resp_len, an_error_t *err) {
  int out = memfd_create("agentnest-mcp-http", MFD_CLOEXEC);
  if (out < 0) return an_error_set(err, errno, "mcp http: memfd");
  struct an_mcp_opts o = {.api = h->api, .allow_tools = h->allow_tools, .max_sandboxes = h->max_sandboxes,
                          .in_fd = -1, .out_fd = out, .log_fd = h->log_fd};
  struct mcp_server s = {.o = &o, .ctx = h->api, .no_progress = true, .on_created = h->on_created,
                         .on_destroyed = h->on_destroyed, .admit = h->admit, .release = h->release,
                         .hook_data = h->hook_data};
  /* what the client owns already: its ids, for --max-sandboxes and may_use */
  s.own = calloc(h->nowned + 1, sizeof *s.own);
  if (!s.own) { close(out); return an_error_set(err, ENOMEM, "mcp http"); }
  s.capown = h->nowned + 1;
  for (size_t i = 0; i < h->nowned; i++) {
    snprintf(s.own[i].id, sizeof s.own[i].id, "%s", h->owned[i]);
    s.own[i].keeper = 0;
  }
  s.nown = h->nowned;
  char *line = malloc(len + 1);
  if (!line) { free(s.own); close(out); return an_error_set(err, ENOMEM, "mcp http"); }
  memcpy(line, body, len);
  line[len] = 0;
  mcp_handle_message(&s, line, len);
  free(line);
  mcp_finish_calls(&s, h->cancel_fd, h->cancel_events);
  free(s.own);
  free(s.gone);
  off_t n = lseek(out, 0, SEEK_END);
  char *buf = n >= 0 ? malloc((size_t) n + 1) : NULL;
  if (!buf || pread(out, buf, (size_t) n, 0) != (ssize_t) n) {
    free(buf);
    close(out);
    return an_error_set(err, EIO, "mcp http: response");
  }
  close(out);
  /* one message at most (progress is off): drop its newline */
  while (n > 0 && buf[n - 1] == '\n') n--;
  buf[n] = 0;
  *resp = buf;
  *resp_len = (size_t) n;
  return 0;
}
