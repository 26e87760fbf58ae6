/* api/openapi.c — the OpenAPI 3.1 document of `agentnest serve`, generated
 * from the operations table (agentnest/api.h): one path item per route
 * (under /v1), the "{sandbox}" path parameter, a JSON request body made of
 * the input schema less "sandbox" (POST routes), the output schema as the
 * 200 response, the error responses, bearer authentication; plus the raw
 * file routes (PUT/GET /v1/sandboxes/{sandbox}/files/{path}, the transport
 * of write_file/read_file for bytes) and the document itself. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api_internal.h"
#include "util/json_tree.h"

static void s(yajl_gen g, const char *v) { yajl_gen_string(g, (const unsigned char *) v, strlen(v)); }

/* The schema v without property `drop` (and without it in "required"). */
static void gen_schema_without(yajl_gen g, yajl_val v, const char *drop) {
  yajl_gen_map_open(g);
  for (size_t i = 0; i < v->u.object.len; i++) {
    const char *k = v->u.object.keys[i];
    yajl_val m = v->u.object.values[i];
    s(g, k);
    if (!strcmp(k, "properties") && YAJL_IS_OBJECT(m)) {
      yajl_gen_map_open(g);
      for (size_t j = 0; j < m->u.object.len; j++)
        if (strcmp(m->u.object.keys[j], drop)) {
          s(g, m->u.object.keys[j]);
          an_api_gen_value(g, m->u.object.values[j]);
        }
      yajl_gen_map_close(g);
    } else if (!strcmp(k, "required") && YAJL_IS_ARRAY(m)) {
      yajl_gen_array_open(g);
      for (size_t j = 0; j < m->u.array.len; j++)
        if (YAJL_IS_STRING(m->u.array.values[j]) && strcmp(m->u.array.values[j]->u.string, drop))
          an_api_gen_value(g, m->u.array.values[j]);
      yajl_gen_array_close(g);
    } else {
      an_api_gen_value(g, m);
    }
  }
  yajl_gen_map_close(g);
}

static size_t required_without(yajl_val v, const char *drop) {
  yajl_val req = an_json_member_type(v, "required", yajl_t_array);
  size_t n = 0;
  for (size_t j = 0; req && j < req->u.array.len; j++)
    n += YAJL_IS_STRING(req->u.array.values[j]) && strcmp(req->u.array.values[j]->u.string, drop);
  return n;
}

/* The JSON Lines alternative of a streaming operation's 200 response: the
 * schema of one line (the CLI's --stream format, src/cli/agentnest/stream.h). */
static const char stream_line_schema[] =
    "{\"type\":\"object\",\"required\":[\"type\"],\"description\":\"one JSON object per line (JSON Lines): "
    "{type: stdout|stderr, data, encoding?: base64} chunks as they come (base64 when a chunk is not UTF-8), then "
    "{type: result, ...the exec result} or {type: error, status: 125, error: {code, message}}\","
    "\"properties\":{\"type\":{\"type\":\"string\",\"enum\":[\"stdout\",\"stderr\",\"result\",\"error\"]},"
    "\"data\":{\"type\":\"string\"},\"encoding\":{\"type\":\"string\",\"enum\":[\"base64\"]},"
    "\"exit_code\":{\"type\":[\"integer\",\"null\"]},\"status\":{\"type\":\"integer\"},"
    "\"error\":{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"string\"},\"message\":{\"type\":\"string\"}}}}}";


/* The writers below each emit one piece of the document into g; the
 * caller has opened the map they go in. */

/* {k1: v1, k2: v2, ...}: a map of strings, the list ended by a NULL key. */
static void gen_strings(yajl_gen g, const char *k, ...) __attribute__((sentinel));
static void gen_strings(yajl_gen g, const char *k, ...) {
  va_list ap;
  va_start(ap, k);
  yajl_gen_map_open(g);
  for (; k; k = va_arg(ap, const char *)) s(g, k), s(g, va_arg(ap, const char *));
  yajl_gen_map_close(g);
  va_end(ap);
}

/* {"$ref": ref} */
static void gen_ref(yajl_gen g, const char *ref) {
  gen_strings(g, "$ref", ref, NULL);
}

/* {"type": type} (and "contentMediaType": media, for raw bytes) */
static void gen_type(yajl_gen g, const char *type, const char *media) {
  yajl_gen_map_open(g);
  s(g, "type"), s(g, type);
  if (media) s(g, "contentMediaType"), s(g, media);
  yajl_gen_map_close(g);
}

/* media: {"schema": ...}: opens it up to the schema, which the caller writes
 * and then closes with yajl_gen_map_close. */
static void media_open(yajl_gen g, const char *media) {
  s(g, media);
  yajl_gen_map_open(g);
  s(g, "schema");
}

/* "content": {media: {"schema": {"type": "string", "contentMediaType": media}}}: raw bytes */
static void raw_content(yajl_gen g, const char *media) {
  s(g, "content");
  yajl_gen_map_open(g);
  media_open(g, media);
  gen_type(g, "string", media);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
}

/* "content": {type: {"schema": schema or {"$ref": ref}}}, and, for a
 * streaming operation, the JSON Lines alternative. */
static void json_content(yajl_gen g, const char *type, yajl_val schema, const char *ref, bool streams) {
  s(g, "content");
  yajl_gen_map_open(g);
  media_open(g, type);
  if (ref) gen_ref(g, ref);
  else an_api_gen_value(g, schema);
  yajl_gen_map_close(g);
  yajl_val line = streams ? yajl_tree_parse(stream_line_schema, NULL, 0) : NULL;
  if (line) {
    media_open(g, "application/x-ndjson");
    an_api_gen_value(g, line);
    yajl_gen_map_close(g);
    yajl_tree_free(line);
  }
  yajl_gen_map_close(g);
}

/* code: {"description": description, ...: opens a response, which the
 * caller fills (its content) and closes with yajl_gen_map_close. */
static void response_open(yajl_gen g, const char *code, const char *description) {
  s(g, code);
  yajl_gen_map_open(g);
  s(g, "description"), s(g, description);
}

/* The members every operation object starts with. */
static void op_head(yajl_gen g, const char *id, const char *summary, const char *description, const char *tag) {
  s(g, "operationId"), s(g, id);
  s(g, "summary"), s(g, summary);
  s(g, "description"), s(g, description);
  s(g, "tags"), yajl_gen_array_open(g), s(g, tag), yajl_gen_array_close(g);
}

static void error_responses(yajl_gen g, bool with_path) {
  static const char *const codes[] = {"400", "401", "403", "404", "413", "429", "500", "503"};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    /* 404 on every route: an unknown image (create), a "sandbox" in the body that is unknown
     * or another client's (run_code, audit) read as not found */
    s(g, codes[i]);
    gen_ref(g, "#/components/responses/Error");
  }
}

static void path_params(yajl_gen g, bool sandbox, bool path) {
  s(g, "parameters");
  yajl_gen_array_open(g);
  for (int i = 0; i < 2; i++) {
    if ((i == 0 && !sandbox) || (i == 1 && !path)) continue;
    yajl_gen_map_open(g);
    s(g, "name"), s(g, i == 0 ? "sandbox" : "path");
    s(g, "in"), s(g, "path");
    s(g, "required"), yajl_gen_bool(g, 1);
    s(g, "description");
    s(g, i == 0 ? "sandbox id or name" : "file path relative to /workspace (URL-encoded; no .., no symlinks)");
    s(g, "schema");
    gen_type(g, "string", NULL);
    yajl_gen_map_close(g);
  }
  yajl_gen_array_close(g);
}

static void lower(char *dst, const char *src) {
  size_t i = 0;
  for (; src[i] && i < 15; i++) dst[i] = (char) (src[i] >= 'A' && src[i] <= 'Z' ? src[i] + 32 : src[i]);
  dst[i] = 0;
}

static void gen_op(yajl_gen g, const struct an_api_op *op, yajl_val in, yajl_val out) {
  bool has_sb = strstr(op->http_path, "{sandbox}") != NULL;
  char m[16];
  lower(m, op->http_method);
  s(g, m);
  yajl_gen_map_open(g);
  op_head(g, op->name, op->title, op->description,
          has_sb || !strcmp(op->name, "create") || !strcmp(op->name, "ls") ? "sandboxes" : "run");
  if (has_sb) path_params(g, true, false);
  if (!strcmp(op->http_method, "POST")) {
    s(g, "requestBody");
    yajl_gen_map_open(g);
    s(g, "required"), yajl_gen_bool(g, required_without(in, "sandbox") > 0);
    s(g, "content");
    yajl_gen_map_open(g);
    media_open(g, "application/json");
    gen_schema_without(g, in, "sandbox");
    yajl_gen_map_close(g);
    yajl_gen_map_close(g);
    yajl_gen_map_close(g);
  }
  s(g, "responses");
  yajl_gen_map_open(g);
  response_open(g, "200", op->flags & AN_API_OP_STREAMS
                              ? "the operation's result; with Accept: application/x-ndjson or \"stream\": true, JSON Lines: "
                                "output chunks as they come, then one result (or error) line"
                              : "the operation's result");
  json_content(g, "application/json", out, NULL, op->flags & AN_API_OP_STREAMS);
  yajl_gen_map_close(g);
  error_responses(g, has_sb);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
}

static void gen_raw_files(yajl_gen g, yajl_val write_out) {
  s(g, "/v1/sandboxes/{sandbox}/files/{path}");
  yajl_gen_map_open(g);
  path_params(g, true, true);
  s(g, "get");
  yajl_gen_map_open(g);
  op_head(g, "download_file", "Download a file",
          "read_file as raw bytes (capped by the sandbox's max_read and the server's --max-body).", "files");
  s(g, "responses");
  yajl_gen_map_open(g);
  response_open(g, "200", "the file's bytes");
  raw_content(g, "application/octet-stream");
  yajl_gen_map_close(g);
  error_responses(g, true);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
  s(g, "put");
  yajl_gen_map_open(g);
  op_head(g, "upload_file", "Upload a file", "write_file from raw bytes (at most --max-body), written atomically.",
          "files");
  s(g, "requestBody");
  yajl_gen_map_open(g);
  s(g, "required"), yajl_gen_bool(g, 1);
  raw_content(g, "application/octet-stream");
  yajl_gen_map_close(g);
  s(g, "responses");
  yajl_gen_map_open(g);
  response_open(g, "200", "written");
  json_content(g, "application/json", write_out, NULL, false);
  yajl_gen_map_close(g);
  error_responses(g, true);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
}

static void gen_self(yajl_gen g) {
  s(g, "/v1/openapi.json");
  yajl_gen_map_open(g);
  s(g, "get");
  yajl_gen_map_open(g);
  op_head(g, "openapi", "This document",
          "The OpenAPI 3.1 document of this API, generated from the operations table.", "meta");
  s(g, "security"), yajl_gen_array_open(g), yajl_gen_array_close(g);
  s(g, "responses");
  yajl_gen_map_open(g);
  response_open(g, "200", "the document");
  s(g, "content");
  yajl_gen_map_open(g);
  media_open(g, "application/json");
  gen_type(g, "object", NULL);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
  s(g, "405");
  gen_ref(g, "#/components/responses/Error");
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
}

static void gen_components(yajl_gen g, yajl_val errs) {
  s(g, "components");
  yajl_gen_map_open(g);
  s(g, "securitySchemes");
  yajl_gen_map_open(g);
  s(g, "bearer");
  gen_strings(g, "type", "http", "scheme", "bearer", "description", "a token of the server's --tokens file", NULL);
  yajl_gen_map_close(g);
  s(g, "schemas");
  yajl_gen_map_open(g);
  s(g, "Error");
  an_api_gen_value(g, errs);
  yajl_gen_map_close(g);
  s(g, "responses");
  yajl_gen_map_open(g);
  response_open(g, "Error", "the request failed: the status says how, the body why");
  json_content(g, "application/json", NULL, "#/components/schemas/Error", false);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
}

int an_api_openapi(char **json, size_t *len, an_error_t *err) {
  size_t n = 0;
  const struct an_api_op *ops = an_api_ops(&n);
  yajl_val *ins = calloc(n, sizeof *ins), *outs = calloc(n, sizeof *outs), errs = NULL;
  yajl_gen g = yajl_gen_alloc(NULL);
  int r = 0;
  if (!ins || !outs || !g) { r = an_error_set(err, ENOMEM, "openapi"); goto done; }
  for (size_t i = 0; i < n && r >= 0; i++)
    if ((r = an_json_parse(ops[i].input_schema, strlen(ops[i].input_schema), ops[i].name, &ins[i], err)) >= 0)
      r = an_json_parse(ops[i].output_schema, strlen(ops[i].output_schema), ops[i].name, &outs[i], err);
  if (r >= 0) r = an_json_parse(an_api_error_schema, strlen(an_api_error_schema), "error", &errs, err);
  if (r < 0) goto done;
  yajl_gen_config(g, yajl_gen_beautify, 1);
  yajl_gen_map_open(g);
  s(g, "openapi"), s(g, "3.1.0");
  s(g, "info");
  yajl_gen_map_open(g);
  s(g, "title"), s(g, "AgentNest HTTP API");
  s(g, "version"), s(g, AN_VERSION);
  s(g, "description");
  s(g, "Disposable, policy-controlled Linux sandboxes for untrusted code (agentnest serve). "
       "Every operation is also an MCP tool of agentnest mcp, from the same table.");
  s(g, "license");
  gen_strings(g, "name", "Apache-2.0", "identifier", "Apache-2.0", NULL);
  yajl_gen_map_close(g);
  s(g, "servers");
  yajl_gen_array_open(g);
  gen_strings(g, "url", "http://127.0.0.1:8741", "description", "the default --listen", NULL);
  yajl_gen_array_close(g);
  s(g, "security");
  yajl_gen_array_open(g);
  yajl_gen_map_open(g);
  s(g, "bearer"), yajl_gen_array_open(g), yajl_gen_array_close(g);
  yajl_gen_map_close(g);
  yajl_gen_array_close(g);
  s(g, "tags");
  yajl_gen_array_open(g);
  static const char *const tags[][2] = {{"sandboxes", "sandbox lifecycle and operations on one sandbox"},
                                        {"run", "one-shot code runs"}, {"files", "raw file transfer"},
                                        {"meta", "this document"}};
  for (size_t t = 0; t < 4; t++) gen_strings(g, "name", tags[t][0], "description", tags[t][1], NULL);
  yajl_gen_array_close(g);
  s(g, "paths");
  yajl_gen_map_open(g);
  /* one path item per distinct path, its methods in table order */
  for (size_t i = 0; i < n; i++) {
    bool first = true;
    for (size_t j = 0; j < i; j++) first = first && strcmp(ops[j].http_path, ops[i].http_path);
    if (!first) continue;
    char p[512];
    snprintf(p, sizeof p, "/v1%s", ops[i].http_path);
    s(g, p);
    yajl_gen_map_open(g);
    for (size_t j = i; j < n; j++)
      if (!strcmp(ops[j].http_path, ops[i].http_path)) gen_op(g, &ops[j], ins[j], outs[j]);
    yajl_gen_map_close(g);
  }
  const struct an_api_op *w = an_api_op_find("write_file");
  gen_raw_files(g, outs[w - ops]);
  gen_self(g);
  yajl_gen_map_close(g);
  gen_components(g, errs);
  yajl_gen_map_close(g);
  const unsigned char *buf = NULL;
  size_t blen = 0;
  if (yajl_gen_get_buf(g, &buf, &blen) != yajl_gen_status_ok) { r = an_error_set(err, EINVAL, "openapi: JSON"); goto done; }
  if (!(*json = malloc(blen + 1))) { r = an_error_set(err, ENOMEM, "openapi"); goto done; }
  memcpy(*json, buf, blen);
  (*json)[blen] = 0;
  if (len) *len = blen;
done:
  for (size_t i = 0; ins && outs && i < n; i++) yajl_tree_free(ins[i]), yajl_tree_free(outs[i]);
  yajl_tree_free(errs);
  free(ins);
  free(outs);
  if (g) yajl_gen_free(g);
  return r;
}
