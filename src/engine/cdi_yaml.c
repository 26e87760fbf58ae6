/* engine/cdi_yaml.c — YAML CDI specs: libyaml's event parser feeding yajl_gen,
 * so a YAML spec becomes the JSON document the one CDI parser reads
 * (cdi_internal.h).  Only what JSON can express is accepted. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include <yaml.h>
#include "engine/cdi_internal.h"
#include "util/json_tree.h"

struct level { bool is_map, want_key; };

/* Integer forms of YAML 1.1/1.2 plain scalars; *out the decimal text. */
static bool yaml_integer(const char *s, char *out, size_t outlen) {
  const char *p = s;
  bool neg = false;
  if (*p == '-' || *p == '+') neg = *p++ == '-';
  if (!*p) return false;
  int base = 10;
  if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O')) base = 8, p += 2;
  else if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) base = 16, p += 2;
  else if (p[0] == '0' && p[1]) base = 8, p += 1;
  if (!*p) return false;
  for (const char *q = p; *q; q++) {
    int d = (*q >= '0' && *q <= '9') ? *q - '0' : (*q >= 'a' && *q <= 'f') ? *q - 'a' + 10
            : (*q >= 'A' && *q <= 'F') ? *q - 'A' + 10 : 99;
    if (d >= base) return false;
  }
  errno = 0;
  char *end = NULL;
  unsigned long long v = strtoull(p, &end, base);
  if (errno || *end || v > (uint64_t) INT64_MAX) return false;
  snprintf(out, outlen, "%s%llu", neg ? "-" : "", v);
  return true;
}

static int emit_scalar(yajl_gen g, const yaml_event_t *ev, bool as_key) {
  const char *s = (const char *) ev->data.scalar.value;
  size_t n = ev->data.scalar.length;
  bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
  if (!as_key && plain) {
    char num[32];
    if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0) return yajl_gen_bool(g, 1);
    if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0) return yajl_gen_bool(g, 0);
    if (n == 0 || strcmp(s, "null") == 0 || strcmp(s, "~") == 0) return yajl_gen_null(g);
    if (yaml_integer(s, num, sizeof num)) return yajl_gen_number(g, num, strlen(num));
  }
  return yajl_gen_string(g, (const unsigned char *) s, n);
}

int an_cdi_yaml_to_json(const char *yaml, size_t len, const char *what, char **json,
                        an_error_t *err) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) return an_error_set(err, ENOMEM, "%s", what);
  yaml_parser_set_input_string(&parser, (const unsigned char *) yaml, len);
  yajl_gen g = yajl_gen_alloc(NULL);
  if (!g) {
    yaml_parser_delete(&parser);
    return an_error_set(err, ENOMEM, "%s", what);
  }
  struct level stack[AN_JSON_MAX_DEPTH + 1];
  size_t depth = 0;
  bool done = false, started = false;
  int r = 0;
  while (!done && r == 0) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&parser, &ev)) {
      r = an_error_set(err, EINVAL, "%s: YAML line %zu: %s", what, parser.problem_mark.line + 1,
                       parser.problem ? parser.problem : "parse error");
      break;
    }
    size_t line = ev.start_mark.line + 1;
    struct level *top = depth ? &stack[depth - 1] : NULL;
    bool as_key = top && top->is_map && top->want_key;
    yajl_gen_status gs = yajl_gen_status_ok;
    switch (ev.type) {
    case YAML_DOCUMENT_START_EVENT:
      if (started) done = true;   /* only the first document */
      started = true;
      break;
    case YAML_DOCUMENT_END_EVENT: done = true; break;
    case YAML_STREAM_END_EVENT: done = true; break;
    case YAML_ALIAS_EVENT:
      r = an_error_set(err, EINVAL, "%s: YAML line %zu: aliases are refused", what, line);
      break;
    case YAML_SCALAR_EVENT:
      gs = emit_scalar(g, &ev, as_key);
      if (top && top->is_map) top->want_key = !top->want_key;
      break;
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
      if (as_key) {
        r = an_error_set(err, EINVAL, "%s: YAML line %zu: a key must be a scalar", what, line);
        break;
      }
      if (depth >= AN_JSON_MAX_DEPTH) {
        r = an_error_set(err, EINVAL, "%s: YAML line %zu: nested deeper than %u", what, line,
                         AN_JSON_MAX_DEPTH);
        break;
      }
      if (top && top->is_map) top->want_key = true;   /* the value is consumed */
      stack[depth++] = (struct level){.is_map = ev.type == YAML_MAPPING_START_EVENT, .want_key = true};
      gs = ev.type == YAML_MAPPING_START_EVENT ? yajl_gen_map_open(g) : yajl_gen_array_open(g);
      break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
      depth--;
      gs = ev.type == YAML_MAPPING_END_EVENT ? yajl_gen_map_close(g) : yajl_gen_array_close(g);
      break;
    default: break;
    }
    yaml_event_delete(&ev);
    if (r == 0 && gs != yajl_gen_status_ok)
      r = an_error_set(err, EINVAL, "%s: YAML line %zu: cannot be expressed as JSON", what, line);
  }
  yaml_parser_delete(&parser);
  if (r == 0) {
    const unsigned char *buf = NULL;
    size_t blen = 0;
    if (yajl_gen_get_buf(g, &buf, &blen) != yajl_gen_status_ok || blen == 0)
      r = an_error_set(err, EINVAL, "%s: empty YAML document", what);
    else if (!(*json = strndup((const char *) buf, blen)))
      r = an_error_set(err, ENOMEM, "%s", what);
  }
  yajl_gen_free(g);
  return r;
}
