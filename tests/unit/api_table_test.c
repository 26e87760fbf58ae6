/* tests/unit/api_table_test.c — the operations table (agentnest/api.h) as
 * data: unique names and routes, every schema valid JSON of type object,
 * the validator's refusals naming the member, and the OpenAPI document
 * generated from it (parsed back: every operation present once). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/api.h"
#include "util/json_tree.h"

Test(api_table, names_and_routes_are_unique_and_schemas_are_objects) {
  size_t n = 0;
  const struct an_api_op *ops = an_api_ops(&n);
  cr_assert_geq(n, 14);
  for (size_t i = 0; i < n; i++) {
    cr_assert_eq(an_api_op_find(ops[i].name), &ops[i], "%s: found by name", ops[i].name);
    for (size_t j = 0; j < i; j++) {
      cr_assert_str_neq(ops[i].name, ops[j].name);
      cr_assert(strcmp(ops[i].http_path, ops[j].http_path) || strcmp(ops[i].http_method, ops[j].http_method),
                "%s and %s share %s %s", ops[i].name, ops[j].name, ops[i].http_method, ops[i].http_path);
    }
    const char *schemas[] = {ops[i].input_schema, ops[i].output_schema};
    for (int k = 0; k < 2; k++) {
      yajl_val v = NULL;
      an_error_t err = NULL;
      cr_assert_geq(an_json_parse(schemas[k], strlen(schemas[k]), ops[i].name, &v, &err), 0, "%s: %s",
                    ops[i].name, err ? err->msg : "");
      cr_assert_str_eq(an_json_member_str(v, "type"), "object", "%s: schema %d is an object schema", ops[i].name, k);
      yajl_tree_free(v);
    }
    if (strstr(ops[i].http_path, "{sandbox}")) {
      cr_assert(strstr(ops[i].input_schema, "\"sandbox\""), "%s: a {sandbox} route takes a sandbox", ops[i].name);
    }
  }
  cr_assert_null(an_api_op_find("nope"));
}

static void refuses(const char *op, const char *input, const char *needle) {
  yajl_val v = NULL;
  an_error_t err = NULL;
  cr_assert_geq(an_json_parse(input, strlen(input), "t", &v, &err), 0);
  int r = an_api_validate(an_api_op_find(op), v, &err);
  cr_assert_eq(r, -EINVAL, "%s %s: accepted", op, input);
  cr_assert(err && strstr(err->msg, needle), "%s %s: message \"%s\" lacks \"%s\"", op, input,
            err ? err->msg : "", needle);
  an_error_free(&err);
  yajl_tree_free(v);
}

Test(api_table, validator_refuses_bad_input_naming_the_member) {
  refuses("exec", "{\"sandbox\":\"a\"}", "\"argv\" is required");
  refuses("exec", "{\"sandbox\":\"a\",\"argv\":[]}", "at least 1");
  refuses("exec", "{\"sandbox\":\"a\",\"argv\":[1]}", "argv\"[0]: expected a string");
  refuses("exec", "{\"sandbox\":\"a\",\"argv\":[\"x\"],\"bogus\":1}", "\"bogus\": unknown member");
  refuses("exec", "{\"sandbox\":\"a\",\"argv\":[\"x\"],\"timeout_s\":0}", "below the minimum");
  refuses("exec", "{\"sandbox\":\"a\",\"argv\":[\"x\"],\"env\":{\"K\":1}}", "\"K\": expected a string");
  refuses("run_code", "{\"code\":\"x\",\"language\":\"ruby\"}", "not one of the allowed values");
  refuses("create", "[]", "expected an object");
  refuses("create", "{\"memory\":1}", "expected a string");
  refuses("restore", "{\"sandbox\":\"a\",\"snapshot\":\"abc\"}", "shorter than 64");
  yajl_val v = NULL;
  an_error_t err = NULL;
  const char *good = "{\"sandbox\":\"a\",\"argv\":[\"ls\",\"-l\"],\"env\":{\"A\":\"b\"},\"timeout_s\":5}";
  cr_assert_geq(an_json_parse(good, strlen(good), "t", &v, &err), 0);
  cr_assert_eq(an_api_validate(an_api_op_find("exec"), v, &err), 0, "%s", err ? err->msg : "");
  yajl_tree_free(v);
}

Test(api_table, openapi_document_has_every_operation_once) {
  char *doc = NULL;
  size_t len = 0;
  an_error_t err = NULL;
  cr_assert_eq(an_api_openapi(&doc, &len, &err), 0, "%s", err ? err->msg : "");
  yajl_val v = NULL;
  cr_assert_geq(an_json_parse(doc, len, "openapi", &v, &err), 0);
  cr_assert_str_eq(an_json_member_str(v, "openapi"), "3.1.0");
  size_t n = 0;
  const struct an_api_op *ops = an_api_ops(&n);
  for (size_t i = 0; i < n; i++) {
    char needle[128];
    snprintf(needle, sizeof needle, "\"operationId\": \"%s\"", ops[i].name);
    char *at = strstr(doc, needle);
    cr_assert(at, "%s missing from the document", ops[i].name);
    cr_assert_null(strstr(at + 1, needle), "%s twice in the document", ops[i].name);
  }
  yajl_tree_free(v);
  free(doc);
}
