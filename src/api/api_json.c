/* api/api_json.c — JSON plumbing of the operations: the input validator
 * (the JSON Schema subset our table's schemas use), re-emitting parsed
 * values, input accessors, and the small writers the handlers share.
 * Parsing is yajl's (util/json_tree.h); this file only walks trees. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "api_internal.h"
#include "util/json_tree.h"

yajl_gen_status an_api_gen_value(yajl_gen g, yajl_val v) {
  yajl_gen_status s = yajl_gen_status_ok;
  if (!v || YAJL_IS_NULL(v)) return yajl_gen_null(g);
  if (YAJL_IS_TRUE(v)) return yajl_gen_bool(g, 1);
  if (YAJL_IS_FALSE(v)) return yajl_gen_bool(g, 0);
  if (YAJL_IS_STRING(v)) return yajl_gen_string(g, (const unsigned char *) v->u.string, strlen(v->u.string));
  if (YAJL_IS_NUMBER(v)) return yajl_gen_number(g, v->u.number.r, strlen(v->u.number.r));
  if (YAJL_IS_ARRAY(v)) {
    if ((s = yajl_gen_array_open(g))) return s;
    for (size_t i = 0; i < v->u.array.len; i++)
      if ((s = an_api_gen_value(g, v->u.array.values[i]))) return s;
    return yajl_gen_array_close(g);
  }
  if ((s = yajl_gen_map_open(g))) return s;
  for (size_t i = 0; i < v->u.object.len; i++) {
    const char *k = v->u.object.keys[i];
    if ((s = yajl_gen_string(g, (const unsigned char *) k, strlen(k)))) return s;
    if ((s = an_api_gen_value(g, v->u.object.values[i]))) return s;
  }
  return yajl_gen_map_close(g);
}

/* ---- validation ------------------------------------------------------------------------- */

static bool type_is(yajl_val v, const char *t) {
  if (!strcmp(t, "object")) return YAJL_IS_OBJECT(v);
  if (!strcmp(t, "array")) return YAJL_IS_ARRAY(v);
  if (!strcmp(t, "string")) return YAJL_IS_STRING(v);
  if (!strcmp(t, "boolean")) return YAJL_IS_TRUE(v) || YAJL_IS_FALSE(v);
  if (!strcmp(t, "integer")) return YAJL_IS_INTEGER(v);
  if (!strcmp(t, "number")) return YAJL_IS_NUMBER(v);
  if (!strcmp(t, "null")) return YAJL_IS_NULL(v);
  return false;
}

static const char *a_an(const char *t) { return t[0] == 'a' || t[0] == 'o' || t[0] == 'i' ? "an" : "a"; }

static int check(yajl_val schema, yajl_val v, const char *where, an_error_t *err) {
  if (!YAJL_IS_OBJECT(schema)) return 0;
  const char *t = an_json_member_str(schema, "type");
  if (t && !type_is(v, t)) return an_error_set(err, EINVAL, "%s: expected %s %s", where, a_an(t), t);
  yajl_val en = an_json_member_type(schema, "enum", yajl_t_array);
  if (en) {
    bool ok = false;
    for (size_t i = 0; i < en->u.array.len && !ok; i++)
      ok = YAJL_IS_STRING(en->u.array.values[i]) && YAJL_IS_STRING(v) &&
           !strcmp(en->u.array.values[i]->u.string, v->u.string);
    if (!ok) return an_error_set(err, EINVAL, "%s: not one of the allowed values", where);
  }
  yajl_val mn = an_json_member_type(schema, "minimum", yajl_t_number);
  yajl_val mx = an_json_member_type(schema, "maximum", yajl_t_number);
  if (YAJL_IS_INTEGER(v) && mn && YAJL_IS_INTEGER(mn) && v->u.number.i < mn->u.number.i)
    return an_error_set(err, EINVAL, "%s: below the minimum %lld", where, mn->u.number.i);
  if (YAJL_IS_INTEGER(v) && mx && YAJL_IS_INTEGER(mx) && v->u.number.i > mx->u.number.i)
    return an_error_set(err, EINVAL, "%s: above the maximum %lld", where, mx->u.number.i);
  if (YAJL_IS_STRING(v)) {
    yajl_val ml = an_json_member_type(schema, "minLength", yajl_t_number);
    yajl_val xl = an_json_member_type(schema, "maxLength", yajl_t_number);
    size_t n = strlen(v->u.string);   /* bytes: a bound at least as strict as characters */
    if (ml && YAJL_IS_INTEGER(ml) && (long long) n < ml->u.number.i)
      return an_error_set(err, EINVAL, "%s: shorter than %lld", where, ml->u.number.i);
    if (xl && YAJL_IS_INTEGER(xl) && (long long) n > xl->u.number.i)
      return an_error_set(err, EINVAL, "%s: longer than %lld bytes", where, xl->u.number.i);
  }
  char sub[512];
  if (YAJL_IS_ARRAY(v)) {
    yajl_val items = an_json_member_type(schema, "items", yajl_t_object);
    yajl_val mi = an_json_member_type(schema, "minItems", yajl_t_number);
    if (mi && YAJL_IS_INTEGER(mi) && (long long) v->u.array.len < mi->u.number.i)
      return an_error_set(err, EINVAL, "%s: needs at least %lld item(s)", where, mi->u.number.i);
    yajl_val xi = an_json_member_type(schema, "maxItems", yajl_t_number);
    if (xi && YAJL_IS_INTEGER(xi) && (long long) v->u.array.len > xi->u.number.i)
      return an_error_set(err, EINVAL, "%s: takes at most %lld item(s)", where, xi->u.number.i);
    for (size_t i = 0; items && i < v->u.array.len; i++) {
      snprintf(sub, sizeof sub, "%s[%zu]", where, i);
      int r = check(items, v->u.array.values[i], sub, err);
      if (r < 0) return r;
    }
  }
  if (YAJL_IS_OBJECT(v)) {
    yajl_val props = an_json_member_type(schema, "properties", yajl_t_object);
    yajl_val addl = an_json_member(schema, "additionalProperties");
    yajl_val req = an_json_member_type(schema, "required", yajl_t_array);
    for (size_t i = 0; req && i < req->u.array.len; i++) {
      const char *k = YAJL_IS_STRING(req->u.array.values[i]) ? req->u.array.values[i]->u.string : "";
      if (!an_json_member(v, k)) return an_error_set(err, EINVAL, "%s: \"%s\" is required", where, k);
    }
    for (size_t i = 0; i < v->u.object.len; i++) {
      const char *k = v->u.object.keys[i];
      yajl_val ps = props ? an_json_member(props, k) : NULL;
      snprintf(sub, sizeof sub, "%s \"%.200s\"", where, k);
      if (!ps && addl && YAJL_IS_FALSE(addl))
        return an_error_set(err, EINVAL, "%s: unknown member", sub);
      if (!ps && addl && YAJL_IS_OBJECT(addl)) ps = addl;
      int r = ps ? check(ps, v->u.object.values[i], sub, err) : 0;
      if (r < 0) return r;
    }
  }
  return 0;
}

int an_api_validate(const struct an_api_op *op, yajl_val input, an_error_t *err) {
  yajl_val schema = NULL;
  int r = an_json_parse(op->input_schema, strlen(op->input_schema), op->name, &schema, err);
  if (r < 0) return r;
  r = check(schema, input, "input", err);
  yajl_tree_free(schema);
  if (r < 0) an_error_prefix(err, "%s", op->name);
  return r;
}

/* ---- input accessors -------------------------------------------------------------------- */

const char *an_api_in_str(yajl_val in, const char *key) { return an_json_member_str(in, key); }

bool an_api_in_bool(yajl_val in, const char *key, bool dflt) {
  yajl_val v = an_json_member(in, key);
  return v && YAJL_IS_TRUE(v) ? true : v && YAJL_IS_FALSE(v) ? false : dflt;
}

int64_t an_api_in_int(yajl_val in, const char *key, int64_t dflt) {
  yajl_val v = an_json_member(in, key);
  return v && YAJL_IS_INTEGER(v) ? v->u.number.i : dflt;
}

yajl_val an_api_in_array(yajl_val in, const char *key) { return an_json_member_type(in, key, yajl_t_array); }
yajl_val an_api_in_object(yajl_val in, const char *key) { return an_json_member_type(in, key, yajl_t_object); }

/* ---- writers ---------------------------------------------------------------------------- */

void an_api_gen_key(yajl_gen g, const char *k) { yajl_gen_string(g, (const unsigned char *) k, strlen(k)); }

void an_api_gen_kv_str(yajl_gen g, const char *k, const char *v) {
  an_api_gen_key(g, k);
  if (v) yajl_gen_string(g, (const unsigned char *) v, strlen(v));
  else yajl_gen_null(g);
}

void an_api_gen_kv_int(yajl_gen g, const char *k, int64_t v) {
  an_api_gen_key(g, k);
  yajl_gen_integer(g, v);
}

void an_api_gen_kv_bool(yajl_gen g, const char *k, bool v) {
  an_api_gen_key(g, k);
  yajl_gen_bool(g, v);
}

void an_api_gen_exec_result(yajl_gen g, const char *id, const struct an_exec_result *res) {
  yajl_gen_map_open(g);
  if (id) an_api_gen_kv_str(g, "id", id);
  an_exec_result_json_fields(g, res, NULL);
  an_api_gen_kv_bool(g, "cancelled", res->cancelled);
  yajl_gen_map_close(g);
}
