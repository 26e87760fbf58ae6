/* Unit tests for util/json_gen.h: the JSON writer's output, its sticky
 * status and what an_jgen_finish returns. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "util/json_gen.h"

/* Finish j, expecting success, and compare the document with `want`. */
static void finish_is(struct an_jgen *j, const char *want) {
  char *doc = NULL;
  size_t len = 0;
  int r = an_jgen_finish(j, &doc, &len);
  cr_assert_eq(r, 0, "an_jgen_finish: %d", r);
  cr_assert_str_eq(doc, want);
  cr_assert_eq(len, strlen(want));
  cr_assert_null(j->g, "the generator is freed");
  free(doc);
}

Test(json_gen, compact_values_and_members) {
  struct an_jgen j;
  cr_assert_eq(an_jgen_init(&j, false), 0);
  static const char *const v[] = {"a", "b", NULL};
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "s", "x\"y\n");
  an_jgen_kv_str(&j, "null", NULL);
  an_jgen_kv_bool(&j, "t", true);
  an_jgen_kv_i64(&j, "neg", INT64_MIN);
  an_jgen_kv_u64(&j, "big", UINT64_MAX);
  an_jgen_kv_strv(&j, "v", v);
  an_jgen_kv_strv(&j, "nv", NULL);
  an_jgen_key(&j, "a");
  an_jgen_array_open(&j);
  an_jgen_null(&j);
  an_jgen_str(&j, NULL);
  an_jgen_array_close(&j);
  an_jgen_map_close(&j);
  finish_is(&j, "{\"s\":\"x\\\"y\\n\",\"null\":null,\"t\":true,\"neg\":-9223372036854775808,"
                "\"big\":18446744073709551615,\"v\":[\"a\",\"b\"],\"nv\":null,\"a\":[null,null]}");
}

Test(json_gen, beautify_and_indent) {
  struct an_jgen j;
  cr_assert_eq(an_jgen_init(&j, true), 0);
  an_jgen_map_open(&j);
  an_jgen_kv_i64(&j, "n", 1);
  an_jgen_map_close(&j);
  finish_is(&j, "{\n    \"n\": 1\n}\n");

  cr_assert_eq(an_jgen_init(&j, false), 0);
  an_jgen_indent(&j, "\t");
  an_jgen_map_open(&j);
  an_jgen_kv_i64(&j, "n", 1);
  an_jgen_map_close(&j);
  finish_is(&j, "{\n\t\"n\": 1\n}\n");
}

Test(json_gen, a_failure_sticks_and_later_writes_are_skipped) {
  struct an_jgen j;
  cr_assert_eq(an_jgen_init(&j, false), 0);
  an_jgen_map_open(&j);
  an_jgen_i64(&j, 1);                          /* a value where a key must be */
  yajl_gen_status first = j.st;
  cr_assert_neq(first, yajl_gen_status_ok);
  an_jgen_kv_str(&j, "k", "v");
  an_jgen_map_close(&j);
  cr_assert_eq(j.st, first, "the first failure is kept");
  char *doc = (char *) "untouched";
  cr_assert_eq(an_jgen_finish(&j, &doc, NULL), -EINVAL);
  cr_assert_str_eq(doc, "untouched");
  cr_assert_null(j.g);
}

Test(json_gen, invalid_utf8_fails_only_when_validated) {
  struct an_jgen j;
  cr_assert_eq(an_jgen_init(&j, false), 0);
  an_jgen_validate_utf8(&j);
  an_jgen_str(&j, "bad\xff");
  char *doc = NULL;
  cr_assert_eq(an_jgen_finish(&j, &doc, NULL), -EINVAL);
  cr_assert_eq(j.st, yajl_gen_invalid_string);

  cr_assert_eq(an_jgen_init(&j, false), 0);
  an_jgen_str(&j, "bad\xff");
  finish_is(&j, "\"bad\xff\"");
}

Test(json_gen, a_bad_indent_fails_the_document) {
  struct an_jgen j;
  cr_assert_eq(an_jgen_init(&j, false), 0);
  an_jgen_indent(&j, "x");
  an_jgen_array_open(&j);
  an_jgen_array_close(&j);
  char *doc = NULL;
  cr_assert_eq(an_jgen_finish(&j, &doc, NULL), -EINVAL);
}

Test(json_gen, a_failed_init_is_safe_and_reported_by_finish) {
  struct an_jgen j = {.g = NULL, .st = yajl_gen_in_error_state};   /* as a failed an_jgen_init leaves it */
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "k", "v");
  char *doc = NULL;
  cr_assert_eq(an_jgen_finish(&j, &doc, NULL), -ENOMEM);
  cr_assert_null(doc);
  an_jgen_free(&j);
}

Test(json_gen, cleanup_frees_an_unfinished_generator) {
  cleanup_jgen struct an_jgen j;
  cr_assert_eq(an_jgen_init(&j, false), 0);
  an_jgen_array_open(&j);   /* freed at the end of the scope (ASan/valgrind would see a leak) */
}
