/* tests/integration/http_test.c — `agentnest serve` checked from outside by
 * tests/http/http_check.mjs (Redocly's CLI and ajv pinned in
 * tests/http/package-lock.json, installed here with `npm ci` when
 * tests/http/node_modules is missing): curl against every route and the raw
 * file routes, every response validated against the served OpenAPI 3.1
 * document (itself linted by `redocly lint`), auth failures (missing, wrong,
 * revoked: 401/403, nothing done, no token logged), 413 (Content-Length and
 * chunked), 405, 404, path traversal in file routes, per-token ownership and
 * max-sandboxes, a client hanging up mid-exec (its command killed),
 * slowloris-style clients, a bounded wrk run on loopback (every response
 * 2xx), --max-concurrent (503), SIGTERM (sandboxes destroyed) and SIGKILL
 * (torn down by their monitors).  Afterwards nothing of the store is left
 * (prune finds nothing to do; tests/lib/batch_fixture.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "batch_fixture.h"
#include "util.h"

static void http_setup(void) {
  bf_setup();
  bf_import_image("python");
}

TestSuite(http, .init = http_setup, .fini = bf_teardown, .timeout = 600);

Test(http, every_route_auth_caps_and_openapi_checked_nothing_left) {
  const char *src = getenv("AN_TEST_SRC");
  char dir[4096], nm[4300];
  snprintf(dir, sizeof dir, "%s/tests/http", src && *src ? src : ".");
  if (an_test_sh("command -v node >/dev/null && command -v npm >/dev/null && command -v curl >/dev/null && "
                 "command -v wrk >/dev/null") != 0)
    cr_skip_test("node, npm, curl and wrk are needed (rootfs-tools/install-deps.sh)");
  struct stat st;
  snprintf(nm, sizeof nm, "%s/node_modules/.bin/redocly", dir);
  if (stat(nm, &st) != 0)
    cr_assert_eq(an_test_sh("cd '%s' && npm ci --no-audit --no-fund >/dev/null 2>&1", dir), 0,
                 "npm ci in %s failed (offline? the lockfile pins every package)", dir);
  /* a loopback port of this test process (several helpers run tests at once) */
  int port = 20000 + (int) (getpid() % 20000);
  int rc = an_test_sh("cd '%s' && node http_check.mjs '%s' '%s' '%s' %d >'%s/.node.out' 2>&1", dir, bf_an_bin,
                      bf_root, bf_work, port, bf_work);
  /* a script that stopped early (a failed check) leaves its servers running: end them */
  an_test_sh("pkill -TERM -f -- '[-]-root %s serve' >/dev/null 2>&1; sleep 1; pkill -KILL -f -- '[-]-root %s serve' "
             ">/dev/null 2>&1; true", bf_root, bf_root);
  char p[700];
  snprintf(p, sizeof p, "%s/.node.out", bf_work);
  char *out = an_test_read_file(p, NULL);
  cr_log_info("%s", out ? out : "");
  cr_assert_eq(rc, 0, "http_check.mjs failed:\n%s", out ? out : "");
  cr_assert(out && strstr(out, "\n1.."), "the script did not finish its plan");
  free(out);
  cr_assert_eq(bf_an("ls --json"), 0);
  cr_assert(!strstr(bf_out, "\"id\""), "sandboxes left in the store: %s", bf_out);
  cr_assert_eq(bf_an("prune"), 0);
  cr_assert(strstr(bf_out, "\"removed\":[]"), "prune found something left: %s", bf_out);
  bf_assert_nothing_left();
}
