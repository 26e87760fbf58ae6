/* tests/integration/mcp_test.c — `agentnest mcp` driven by the official MCP
 * TypeScript SDK client (tests/mcp/mcp_client.mjs; @modelcontextprotocol/sdk
 * pinned in tests/mcp/package-lock.json, installed here with `npm ci` when
 * tests/mcp/node_modules is missing): initialize and version negotiation,
 * tools/list with input and output schemas (validated by ajv), every tool
 * called and its structuredContent checked against its outputSchema, errors
 * as isError results, an unknown tool, malformed and non-JSON-RPC messages,
 * progress, a cancelled call whose command is killed, --allow-tools,
 * --max-sandboxes, and the client going away (close, stdin EOF mid-call,
 * SIGTERM, SIGKILL of the server).  Afterwards nothing of the test's store
 * is left: no sandbox, no cgroup of any sandbox the script saw, nothing for
 * prune to remove but what a SIGKILL left (tests/lib/batch_fixture.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "batch_fixture.h"
#include "bundle.h"
#include "util.h"

static void mcp_setup(void) {
  bf_setup();
  bf_import_image("python");
}

TestSuite(mcp, .init = mcp_setup, .fini = bf_teardown, .timeout = 600);

/* tests/mcp with its node_modules (npm ci from the lockfile), or skip. */
static const char *mcp_dir(void) {
  static char dir[4096];
  const char *src = getenv("AN_TEST_SRC");
  snprintf(dir, sizeof dir, "%s/tests/mcp", src && *src ? src : ".");
  if (an_test_sh("command -v node >/dev/null && command -v npm >/dev/null") != 0)
    cr_skip_test("node and npm are needed (Node.js 20: rootfs-tools/install-deps.sh)");
  char nm[4200];
  struct stat st;
  snprintf(nm, sizeof nm, "%s/node_modules/@modelcontextprotocol/sdk/package.json", dir);
  if (stat(nm, &st) != 0)
    cr_assert_eq(an_test_sh("cd '%s' && npm ci --no-audit --no-fund >/dev/null 2>&1", dir), 0,
                 "npm ci in %s failed (offline? the lockfile pins every package)", dir);
  return dir;
}

Test(mcp, official_sdk_client_drives_every_tool_and_nothing_is_left) {
  const char *dir = mcp_dir();
  int st = an_test_sh("cd '%s' && node mcp_client.mjs '%s' '%s' >'%s/.node.out' 2>'%s/.node.err'", dir,
                      bf_an_bin, bf_root, bf_work, bf_work);
  char p[700];
  snprintf(p, sizeof p, "%s/.node.out", bf_work);
  char *out = an_test_read_file(p, NULL);
  snprintf(p, sizeof p, "%s/.node.err", bf_work);
  char *err = an_test_read_file(p, NULL);
  cr_log_info("%s", out ? out : "");
  cr_assert_eq(st, 0, "the SDK client script failed:\n%s\nstderr:\n%s", out ? out : "",
               err ? err : "");
  cr_assert(out && strstr(out, "1.."), "the script did not finish its plan");
  /* every sandbox the script saw: gone from the store and from every cgroup hierarchy */
  bf_an("prune");
  cr_assert_eq(bf_an("ls --json"), 0);
  cr_assert_str_eq(bf_out[0] == '[' ? "[" : bf_out, "[");
  cr_assert(!strstr(bf_out, "\"id\""), "sandboxes left in the store: %s", bf_out);
  size_t seen = 0;
  for (char *l = out; l && (l = strstr(l, "SANDBOX ")); l += 8) {
    char id[16] = {0}, cg[32];
    sscanf(l + 8, "%12s", id);
    snprintf(cg, sizeof cg, "sb-%s", id);
    cr_assert(!an_test_cgroup_exists(cg), "cgroup agentnest/%s left behind", cg);
    seen++;
  }
  cr_assert_geq(seen, 6, "the script reported %zu sandboxes", seen);
  bf_assert_nothing_left();
  free(out);
  free(err);
}

/* The same SDK over the Streamable HTTP transport of `agentnest serve` (/mcp). */
Test(mcp, official_sdk_client_over_streamable_http_on_serve) {
  const char *dir = mcp_dir();
  int port = 20000 + (int) ((getpid() + 7919) % 20000);
  int st = an_test_sh("cd '%s' && node mcp_http_client.mjs '%s' '%s' '%s' %d >'%s/.node.out' 2>&1", dir,
                      bf_an_bin, bf_root, bf_work, port, bf_work);
  char p[700];
  snprintf(p, sizeof p, "%s/.node.out", bf_work);
  char *out = an_test_read_file(p, NULL);
  cr_log_info("%s", out ? out : "");
  cr_assert_eq(st, 0, "mcp_http_client.mjs failed:\n%s", out ? out : "");
  cr_assert(out && strstr(out, "\n1.."), "the script did not finish its plan");
  free(out);
  cr_assert_eq(bf_an("ls --json"), 0);
  cr_assert(!strstr(bf_out, "\"id\""), "sandboxes left in the store: %s", bf_out);
  bf_assert_nothing_left();
}
