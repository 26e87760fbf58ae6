/* tests/integration/python_client_test.c — the Python client (python/agentnest) with Debian's
 * python3 against a real `agentnest serve`: installed with `pip install ./python` into a
 * private directory (no index: nothing is downloaded), its offline unit tests
 * (tests/python/test_client_offline.py), and one program per documented feature of the
 * AgentNest 0.3 API (tests/python/examples/NN_*.py), each run unchanged and required to exit 0
 * printing "ok".
 *
 * Each test starts `agentnest --root ROOT serve --listen unix:SOCK --tokens FILE` (criterion
 * forks each test), kills it after, and checks that the server left no sandbox behind. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli_fixture.h"
#include "store_fixture.h"
#include "util.h"

#define TOKEN "python-client-test-token-0123456789"

static pid_t server = -1;
static char sock[400], site[400], srcdir[4096];

static void install_client(void) {
  /* once per run: `pip install ./python` (no index, no build isolation) into ROOT/site */
  snprintf(site, sizeof site, "%s/site", an_cli.root);
  char stamp[450];
  snprintf(stamp, sizeof stamp, "%s/.installed", site);
  if (access(stamp, F_OK) == 0) return;
  /* from a copy: pip's build/ and egg-info/ never land in the source tree */
  cr_assert_eq(an_test_sh("rm -rf '%s/pysrc' && cp -r '%s/python' '%s/pysrc' && cd '%s' && "
                          "/usr/bin/python3 -m pip install --quiet --no-index --no-build-isolation "
                          "--no-deps --target '%s' ./pysrc > '%s/pip.log' 2>&1",
                          an_cli.root, srcdir, an_cli.root, an_cli.root, site, an_cli.work),
               0, "pip install ./python failed (see %s/pip.log)", an_cli.work);
  an_test_write_file(stamp, "", 0, 0644);
}

static void setup(void) {
  an_cli_setup("pyclient", 0755);
  const char *s = getenv("AN_TEST_SRC");
  cr_assert_not_null(realpath(s && *s ? s : ".", srcdir));
  an_cli_import("python");
  an_cli_import("debian");
  install_client();
  char tokens[400], log[400];
  snprintf(sock, sizeof sock, "%s/api.sock", an_cli.work);
  snprintf(tokens, sizeof tokens, "%s/tokens", an_cli.work);
  snprintf(log, sizeof log, "%s/serve.log", an_cli.work);
  an_test_write_file(tokens, TOKEN " pyclient\n", strlen(TOKEN " pyclient\n"), 0600);
  char listen[420];
  snprintf(listen, sizeof listen, "unix:%s", sock);
  server = fork();
  cr_assert_geq(server, 0);
  if (server == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(126);
    execl(an_cli.bin, "agentnest", "--root", an_cli.root, "serve", "--listen", listen, "--tokens", tokens,
          (char *) NULL);
    _exit(127);
  }
  for (int i = 0; i < 1000 && access(sock, F_OK) != 0; i++) {
    int st;
    cr_assert_eq(waitpid(server, &st, WNOHANG), 0, "agentnest serve exited: %s",
                 an_test_read_file(log, NULL) ?: "");
    an_test_msleep(10);
  }
  cr_assert_eq(access(sock, F_OK), 0, "agentnest serve did not listen on %s", sock);
}

static void teardown(void) {
  if (server > 0) {
    kill(server, SIGTERM);
    int st;
    waitpid(server, &st, 0);
    server = -1;
  }
  an_cli_teardown();
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
  (void) stats;
  an_cli_remove_root("pyclient");
}

TestSuite(python_client, .init = setup, .fini = teardown, .timeout = 300);

/* Run a python file of tests/python with the client installed; output in an_cli.out. */
static int py(const char *rel) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd,
           "cd '%s' && PYTHONPATH='%s' AGENTNEST_URL='unix:%s' AGENTNEST_TOKEN='%s' PYTHONDONTWRITEBYTECODE=1 "
           "timeout 240 /usr/bin/python3 '%s/tests/python/%s' > '%s' 2>&1",
           an_cli.work, site, sock, TOKEN, srcdir, rel, an_cli.out_path);
  int st = system(cmd);
  free(an_cli.out);
  an_cli.out = an_test_read_file(an_cli.out_path, NULL);
  if (!an_cli.out) an_cli.out = strdup("");
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* No sandbox of the server's is left once its client is done. */
static void assert_no_sandbox_left(void) {
  cr_assert_eq(an_cli_run("ls --json"), 0, "%s", an_cli.err);
  yajl_val v = an_cli_json(an_cli.out);
  cr_expect(YAJL_IS_ARRAY(v) && YAJL_GET_ARRAY(v)->len == 0, "sandboxes left: %s", an_cli.out);
  /* removed, so that the next example is judged on its own leftovers, not this one's */
  for (size_t i = 0; YAJL_IS_ARRAY(v) && i < YAJL_GET_ARRAY(v)->len; i++) {
    const char *path[] = {"id", NULL};
    yajl_val id = yajl_tree_get(YAJL_GET_ARRAY(v)->values[i], path, yajl_t_string);
    if (id) cr_expect_eq(an_cli_run("destroy --wait %s", YAJL_GET_STRING(id)), 0, "%s", an_cli.err);
  }
  yajl_tree_free(v);
}

Test(python_client, offline_unit_tests_pass) {
  cr_assert_eq(py("test_client_offline.py"), 0, "%s", an_cli.out);
  cr_expect(strstr(an_cli.out, "OK"), "%s", an_cli.out);
}

#define EXAMPLE(name)                                                               \
  Test(python_client, example_##name) {                                             \
    cr_assert_eq(py("examples/" #name ".py"), 0, "%s", an_cli.out);                 \
    cr_expect(strstr(an_cli.out, "ok\n"), "%s", an_cli.out);                        \
    assert_no_sandbox_left();                                                       \
  }

EXAMPLE(01_exec)
EXAMPLE(02_exec_python_shell_json)
EXAMPLE(03_stream_shell)
EXAMPLE(04_files)
EXAMPLE(05_artifacts)
EXAMPLE(06_snapshot_restore_fork)
EXAMPLE(07_errors)
EXAMPLE(08_secrets)
EXAMPLE(09_approvals)
EXAMPLE(10_pool)
EXAMPLE(11_async)
EXAMPLE(12_security_policy)
EXAMPLE(13_python_session)
EXAMPLE(14_runner_and_tool)
EXAMPLE(15_git_workspace)

/* Every example is listed above: a new file in tests/python/examples must get a line. */
Test(python_client, every_example_is_run) {
  cr_assert_eq(an_test_sh("ls '%s/tests/python/examples' | grep -c '[.]py$' > '%s'", srcdir, an_cli.out_path), 0);
  char *n = an_test_read_file(an_cli.out_path, NULL);
  cr_expect_eq(atoi(n ? n : "0"), 15, "examples: %s", n);
  free(n);
}
