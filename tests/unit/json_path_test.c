/* tests/unit/json_path_test.c — the member paths the JSON parsers name in
 * their errors (util/json_tree.h an_json_path_key / an_json_path_index):
 * "<parent>.<key>", "<key>" at the root, "<parent>[<i>]", cut at
 * AN_JSON_PATH_MAX - 1 bytes; built without snprintf (a quarter of the CPU
 * of loading a config.json went to its format parsing, tests/bench/README.md
 * "Front-end overhead"), so each case is checked against what snprintf
 * writes.  No kernel needed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/json_tree.h"

TestSuite(json_path);

Test(json_path, keys_and_indices_read_as_the_parsers_name_them) {
  char buf[AN_JSON_PATH_MAX], sub[AN_JSON_PATH_MAX];
  cr_expect_str_eq(an_json_path_key(buf, "", "process"), "process");
  cr_expect_str_eq(an_json_path_key(buf, NULL, "process"), "process");
  cr_expect_str_eq(an_json_path_key(buf, "linux", "seccomp"), "linux.seccomp");
  cr_expect_str_eq(an_json_path_index(buf, "linux.seccomp.syscalls", 0), "linux.seccomp.syscalls[0]");
  cr_expect_str_eq(an_json_path_index(buf, "a", 1234567890123ull), "a[1234567890123]");
  cr_expect_str_eq(an_json_path_index(buf, NULL, 7), "[7]");
  an_json_path_index(sub, "mounts", 12);
  cr_expect_str_eq(an_json_path_key(buf, sub, "options"), "mounts[12].options");
  /* the parent may be the buffer itself */
  an_json_path_key(buf, "x", "y");
  cr_expect_str_eq(an_json_path_index(buf, buf, 3), "x.y[3]");
}

/* what snprintf(buf, AN_JSON_PATH_MAX, ...) leaves of `full` */
static const char *cut(char want[AN_JSON_PATH_MAX], const char *full) {
  size_t n = strlen(full);
  if (n > AN_JSON_PATH_MAX - 1) n = AN_JSON_PATH_MAX - 1;
  memcpy(want, full, n);
  want[n] = 0;
  return want;
}

Test(json_path, a_long_path_is_cut_where_snprintf_cuts_it) {
  char parent[2 * AN_JSON_PATH_MAX], key[AN_JSON_PATH_MAX + 8], full[4 * AN_JSON_PATH_MAX];
  char want[AN_JSON_PATH_MAX], buf[AN_JSON_PATH_MAX];
  for (size_t plen = AN_JSON_PATH_MAX - 4; plen < AN_JSON_PATH_MAX + 3; plen++) {
    memset(parent, 'p', plen);
    parent[plen] = 0;
    snprintf(full, sizeof full, "%s.k", parent);
    cr_expect_str_eq(an_json_path_key(buf, parent, "k"), cut(want, full), "parent of %zu bytes", plen);
    snprintf(full, sizeof full, "%s[42]", parent);
    cr_expect_str_eq(an_json_path_index(buf, parent, 42), cut(want, full), "parent of %zu bytes", plen);
  }
  memset(key, 'k', sizeof key - 1);
  key[sizeof key - 1] = 0;
  cr_expect_str_eq(an_json_path_key(buf, "", key), cut(want, key));
  cr_expect_eq(strlen(buf), AN_JSON_PATH_MAX - 1);
}

Test(json_path, a_parse_error_names_the_nested_member) {
  const char doc[] = "{\"a\":[{\"b\":1},{\"c\":{\"d\":1,\"d\":2}}]}";
  yajl_val v = NULL;
  an_error_t err = NULL;
  cr_assert_lt(an_json_parse(doc, strlen(doc), "doc", &v, &err), 0);
  cr_assert_not_null(err);
  cr_expect(strstr(err->msg, "a[1].c: duplicate key \"d\""), "%s", err->msg);
  an_error_free(&err);
  yajl_tree_free(v);
}
