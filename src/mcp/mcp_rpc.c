/* mcp/mcp_rpc.c — JSON-RPC 2.0 writers and id handling for the MCP server
 * (mcp_rpc.h).  Every message is one line of JSON written with yajl. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mcp_rpc.h"

static void gstr(yajl_gen g, const char *s) { yajl_gen_string(g, (const unsigned char *) s, strlen(s)); }

bool rpc_id_copy(struct rpc_id *id, yajl_val v) {
  memset(id, 0, sizeof *id);
  if (!v) return true;
  if (YAJL_IS_STRING(v)) id->is_str = true, id->text = strdup(v->u.string);
  else if (YAJL_IS_INTEGER(v)) id->text = strdup(v->u.number.r);
  else return false;
  id->present = id->text != NULL;
  return id->present;
}

void rpc_id_free(struct rpc_id *id) {
  free(id->text);
  memset(id, 0, sizeof *id);
}

bool rpc_id_equal(const struct rpc_id *a, yajl_val v) {
  if (!a->present || !v) return false;
  if (a->is_str) return YAJL_IS_STRING(v) && !strcmp(a->text, v->u.string);
  return YAJL_IS_INTEGER(v) && !strcmp(a->text, v->u.number.r);
}

void rpc_id_gen(yajl_gen g, const struct rpc_id *id) {
  if (!id || !id->present) yajl_gen_null(g);
  else if (id->is_str) gstr(g, id->text);
  else yajl_gen_number(g, id->text, strlen(id->text));
}

yajl_gen rpc_begin(void) {
  yajl_gen g = yajl_gen_alloc(NULL);
  if (!g) return NULL;
  yajl_gen_config(g, yajl_gen_validate_utf8, 1);
  yajl_gen_map_open(g);
  gstr(g, "jsonrpc");
  gstr(g, "2.0");
  return g;
}

int rpc_send(yajl_gen g, int fd) {
  if (!g) return -ENOMEM;
  yajl_gen_map_close(g);
  const unsigned char *buf = NULL;
  size_t len = 0;
  int r = 0;
  if (yajl_gen_get_buf(g, &buf, &len) != yajl_gen_status_ok) r = -EINVAL;
  /* one message per line: yajl's compact output never holds a raw newline */
  for (size_t off = 0; !r && off < len;) {
    ssize_t w = write(fd, buf + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) r = -errno;
    else off += (size_t) w;
  }
  while (!r && write(fd, "\n", 1) < 0) {
    if (errno != EINTR) r = -errno;
  }
  yajl_gen_free(g);
  return r;
}

int rpc_send_error(int fd, const struct rpc_id *id, int code, const char *message) {
  yajl_gen g = rpc_begin();
  if (!g) return -ENOMEM;
  gstr(g, "id");
  rpc_id_gen(g, id);
  gstr(g, "error");
  yajl_gen_map_open(g);
  gstr(g, "code");
  yajl_gen_integer(g, code);
  gstr(g, "message");
  gstr(g, message);
  yajl_gen_map_close(g);
  return rpc_send(g, fd);
}
