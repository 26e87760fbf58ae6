/* tests/integration/mcp_expiry_test.c — `agentnest mcp --max-sandboxes N`
 * counts the sandboxes the client holds: one that ended by its lifetime no
 * longer counts.  JSON-RPC lines written by a shell script into the server's
 * stdin (no MCP client library needed); the busybox image from the
 * `make images` cache.  Run as root from the worktree root. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "batch_fixture.h"
#include "util.h"

TestSuite(mcp_expiry, .init = bf_setup, .fini = bf_teardown, .timeout = 120);

/* redteam: the MCP server dropped an owned sandbox only on its destroy tool, so after N
 * sandboxes had expired a --max-sandboxes N server refused every create for good. */
Test(mcp_expiry, an_expired_sandbox_frees_its_max_sandboxes_slot) {
  if (access("/var/cache/agentnest/images/busybox/layout", F_OK) != 0) cr_skip_test("image cache absent");
  int rc = an_test_sh(
      "cd '%s' && A='%s' && R='%s' && O=mcp.out && rm -f $O && (\n"
      "echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
      "\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}'\n"
      "echo '{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}'\n"
      "echo '{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"create\","
      "\"arguments\":{\"image\":\"busybox\",\"timeout\":\"2s\"}}}'\n"
      "for i in $(seq 300); do grep -q '\"id\":2' $O 2>/dev/null && break; sleep 0.1; done\n"
      "for i in $(seq 300); do \"$A\" --root \"$R\" ls --json | grep -q '\"id\"' || break; sleep 0.1; done\n"
      "echo '{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"create\","
      "\"arguments\":{\"image\":\"busybox\"}}}'\n"
      "for i in $(seq 300); do grep -q '\"id\":3' $O 2>/dev/null && break; sleep 0.1; done\n"
      ") | \"$A\" --root \"$R\" mcp --max-sandboxes 1 >$O 2>mcp.err",
      bf_work, bf_an_bin, bf_root);
  cr_assert_eq(rc, 0, "the script or the server failed");
  char *out = bf_read_work("mcp.out");
  cr_assert_not_null(out);
  cr_assert(strstr(out, "\"id\":2,\"result\""), "first create: %s", out);
  char *third = strstr(out, "\"id\":3,");
  cr_assert_not_null(third, "no answer to the second create: %s", out);
  cr_expect(!strstr(third, "at most") && !strstr(third, "\"isError\":true"),
            "the expired sandbox still counts against --max-sandboxes 1: %s", third);
  free(out);
  /* the server destroyed the second one when its stdin closed */
  cr_assert_eq(bf_an("ls --json"), 0);
  cr_expect(!strstr(bf_out, "\"id\""), "left: %s", bf_out);
}
