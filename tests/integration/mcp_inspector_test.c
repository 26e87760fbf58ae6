/* tests/integration/mcp_inspector_test.c — `agentnest mcp` driven by the
 * official MCP Inspector in its CLI mode (`mcp-inspector --cli CMD ARGS
 * --method ...`; @modelcontextprotocol/inspector pinned with integrity in
 * tests/mcp-inspector/package-lock.json, installed here with `npm ci` when
 * its node_modules is missing): tools/list names every operation of the
 * table with an inputSchema and an outputSchema; tools/call of run_code runs
 * Python in a one-shot sandbox and returns its output as structuredContent;
 * a call of an unknown tool fails; nothing is left in the test's store.
 * Skipped without node/npm, or (with the reason) when the npm registry
 * cannot be reached to install the pinned package. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "agentnest/api.h"
#include "batch_fixture.h"
#include "util.h"

static void setup(void) {
  bf_setup();
  if (access("/var/cache/agentnest/images/python/layout", F_OK) == 0) bf_import_image("python");
}

TestSuite(mcp_inspector, .init = setup, .fini = bf_teardown, .timeout = 600);

/* tests/mcp-inspector with its node_modules, or skip saying why. */
static const char *inspector_dir(void) {
  static char dir[4096];
  const char *src = getenv("AN_TEST_SRC");
  snprintf(dir, sizeof dir, "%s/tests/mcp-inspector", src && *src ? src : ".");
  if (an_test_sh("command -v node >/dev/null && command -v npm >/dev/null") != 0)
    cr_skip_test("node and npm are needed (Node.js 20: rootfs-tools/install-deps.sh)");
  char bin[4200];
  snprintf(bin, sizeof bin, "%s/node_modules/.bin/mcp-inspector", dir);
  char log[400];
  snprintf(log, sizeof log, "%s/.npm-ci.log", bf_work);
  if (access(bin, X_OK) != 0 &&
      an_test_sh("cd '%s' && npm ci --no-audit --no-fund >'%s' 2>&1", dir, log) != 0) {
    char *text = an_test_read_file(log, NULL);
    size_t n = text ? strlen(text) : 0;
    const char *tail = text ? text + (n > 600 ? n - 600 : 0) : "";
    if (an_test_sh("cd '%s' && timeout 30 npm ping >/dev/null 2>&1", dir) != 0)
      cr_skip_test("the npm registry is unreachable from this host: cannot install the pinned "
                   "@modelcontextprotocol/inspector (npm ci: ...%s)", tail);
    cr_assert_fail("npm ci in %s failed with the registry reachable: ...%s", dir, tail);
  }
  return dir;
}

static const char *str_of(yajl_val v) {
  const char *s = v && YAJL_IS_STRING(v) ? YAJL_GET_STRING(v) : NULL;
  return s ? s : "";
}

/* Run the inspector's CLI mode against `agentnest --root <store> mcp` with
 * `args`; its exit status, stdout in *out (heap). */
static int inspect(const char *dir, const char *args, char **out) {
  char outf[400];
  snprintf(outf, sizeof outf, "%s/.inspector.out", bf_work);
  int st = an_test_sh("cd '%s' && timeout 300 node_modules/.bin/mcp-inspector --cli '%s' --root '%s' mcp %s "
                      ">'%s' 2>'%s.err'", dir, bf_an_bin, bf_root, args, outf, outf);
  *out = an_test_read_file(outf, NULL);
  if (!*out) *out = strdup("");
  return st;
}

Test(mcp_inspector, lists_every_tool_with_both_schemas) {
  const char *dir = inspector_dir();
  char *out = NULL;
  int st = inspect(dir, "--method tools/list", &out);
  cr_assert_eq(st, 0, "mcp-inspector --cli --method tools/list: status %d\n%s", st, out);
  yajl_val v = yajl_tree_parse(out, NULL, 0);
  cr_assert_not_null(v, "not JSON: %s", out);
  const char *tp[] = {"tools", NULL};
  yajl_val tools = yajl_tree_get(v, tp, yajl_t_array);
  cr_assert_not_null(tools, "no tools: %s", out);
  size_t n = 0;
  const struct an_api_op *ops = an_api_ops(&n);
  cr_expect_eq(tools->u.array.len, n, "%zu tools listed, the table has %zu", tools->u.array.len, n);
  for (size_t i = 0; i < n; i++) {
    bool found = false;
    for (size_t k = 0; k < tools->u.array.len && !found; k++) {
      yajl_val t = tools->u.array.values[k];
      const char *np[] = {"name", NULL}, *ip[] = {"inputSchema", "type", NULL},
                 *op[] = {"outputSchema", "type", NULL};
      yajl_val name = yajl_tree_get(t, np, yajl_t_string);
      if (strcmp(str_of(name), ops[i].name)) continue;
      found = true;
      yajl_val it = yajl_tree_get(t, ip, yajl_t_string), ot = yajl_tree_get(t, op, yajl_t_string);
      cr_expect(!strcmp(str_of(it), "object"), "%s: no inputSchema object", ops[i].name);
      cr_expect(!strcmp(str_of(ot), "object"), "%s: no outputSchema object", ops[i].name);
    }
    cr_expect(found, "tool %s not listed", ops[i].name);
  }
  yajl_tree_free(v);
  free(out);
}

Test(mcp_inspector, calls_run_code_and_an_unknown_tool) {
  if (access("/var/cache/agentnest/images/python/layout", F_OK) != 0) cr_skip_test("python image absent");
  const char *dir = inspector_dir();
  char *out = NULL;
  int st = inspect(dir, "--method tools/call --tool-name run_code --tool-arg language=python "
                        "--tool-arg 'code=print(6*7, \"from-the-inspector\")'", &out);
  cr_assert_eq(st, 0, "mcp-inspector --cli --method tools/call run_code: status %d\n%s", st, out);
  yajl_val v = yajl_tree_parse(out, NULL, 0);
  cr_assert_not_null(v, "not JSON: %s", out);
  const char *ep[] = {"isError", NULL}, *sp[] = {"structuredContent", "stdout", NULL},
             *cp[] = {"structuredContent", "exit_code", NULL};
  yajl_val e = yajl_tree_get(v, ep, yajl_t_any), so = yajl_tree_get(v, sp, yajl_t_string),
           code = yajl_tree_get(v, cp, yajl_t_number);
  cr_expect(e && YAJL_IS_FALSE(e), "isError: %s", out);
  cr_expect(!strcmp(str_of(so), "42 from-the-inspector\n"), "stdout: %s", out);
  cr_expect(code && YAJL_GET_INTEGER(code) == 0, "exit_code: %s", out);
  yajl_tree_free(v);
  free(out);
  st = inspect(dir, "--method tools/call --tool-name no_such_tool", &out);
  cr_expect_neq(st, 0, "a call of an unknown tool succeeded: %s", out);
  free(out);
  cr_assert_eq(bf_an("ls --json"), 0);
  cr_expect(!strstr(bf_out, "\"id\""), "sandboxes left in the store: %s", bf_out);
  bf_assert_nothing_left();
}
