/* tests/escapes/terminal_test.c — stdin and terminals cannot be used to
 * reach the caller's terminal (issue 13 item 2, the escape suite): with a
 * host terminal as the exec's stdin (an_exec_opts.has_stdin, as `exec -i`
 * from a terminal), the command holds a pipe, never the terminal itself,
 * so it cannot change the caller's terminal modes (tcsetattr, `stty
 * -echo`), push input into it (TIOCSTI) or resize it; with a pty
 * (an_exec_opts.tty, `exec -t`), the pty comes from the sandbox's own
 * devpts instance and TIOCSTI from inside lands in that pty, never in the
 * caller's.  The caller's terminal is a host pty pair made by the test.
 *
 * Store: /tmp/an-esc-term-<runner pid> (tests/lib/store_fixture.h), the
 * python image imported from the image cache once per run, removed by the
 * POST_ALL hook. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>
#include "agentnest.h"
#include "agentnest/sandbox.h"
#include "store_fixture.h"
#include "util.h"
#include "ctx_fixture.h"

static char g_store[PATH_MAX];
static struct an_sandbox *SB;
static int host_master = -1, host_slave = -1;   /* "the caller's terminal" */

static void setup(void) {
  an_test_lib_env(NULL, 0);   /* the build under test ($AN_TEST_BUILD) */
  snprintf(g_store, sizeof g_store, "/tmp/an-esc-term-%d", (int) getppid());
  an_test_store_make(g_store);
  if (!an_test_store_image(g_store, "python", true)) cr_skip_test("no python image in the cache (make images)");
  an_error_t err = NULL;
  struct an_sandbox_opts *opts = NULL;
  cr_assert(an_sandbox_opts_new_ctx(an_test_ctx(), &opts, &err) == 0);
  cr_assert(an_sandbox_opts_set_image(opts, "python", &err) == 0);
  cr_assert(an_sandbox_create(g_store, opts, &SB, &err) == 0, "create: %s", err ? err->msg : "");
  an_sandbox_opts_free(opts);
  /* the caller's terminal: a host pty, 33 rows x 77 columns, echo on */
  host_master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  cr_assert(host_master >= 0);
  cr_assert(grantpt(host_master) == 0 && unlockpt(host_master) == 0);
  host_slave = open(ptsname(host_master), O_RDWR | O_NOCTTY | O_CLOEXEC);
  cr_assert(host_slave >= 0);
  struct winsize ws = {.ws_row = 33, .ws_col = 77};
  cr_assert(ioctl(host_master, TIOCSWINSZ, &ws) == 0);
}

static void teardown(void) {
  if (SB) {
    an_error_t err = NULL;
    an_sandbox_destroy(SB, 0, &err);
    an_error_free(&err);
    an_sandbox_close(SB);
    SB = NULL;
  }
  if (host_slave >= 0) close(host_slave);
  if (host_master >= 0) close(host_master);
  host_slave = host_master = -1;
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
  (void) stats;
  char root[PATH_MAX];
  snprintf(root, sizeof root, "/tmp/an-esc-term-%d", (int) getpid());
  an_test_store_remove(root);
}

TestSuite(terminal, .init = setup, .fini = teardown, .timeout = 180);

/* Python that tries everything against its fd 0 and reports each result. */
static const char ATTACK[] =
    "import fcntl, os, struct, sys, termios\n"
    "def tryit(name, f):\n"
    "    try:\n"
    "        f(); print(name, 'ok')\n"
    "    except (OSError, termios.error) as e:\n"
    "        print(name, 'refused', e.args[0])\n"
    "print('isatty', os.isatty(0))\n"
    "print('fd0', os.readlink('/proc/self/fd/0'))\n"
    "def noecho():\n"
    "    a = termios.tcgetattr(0); a[3] &= ~termios.ECHO; termios.tcsetattr(0, termios.TCSANOW, a)\n"
    "tryit('tcsetattr', noecho)\n"
    "tryit('tiocsti', lambda: [fcntl.ioctl(0, termios.TIOCSTI, bytes([c])) for c in b'INJECTED\\n'])\n"
    "tryit('tiocswinsz', lambda: fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack('HHHH', 5, 6, 0, 0)))\n"
    "sys.stdout.flush()\n";

static char *exec_attack(bool tty, int *status) {
  char *argv[] = {"python3", "-c", (char *) ATTACK, NULL};
  struct an_exec_opts eo = {.timeout_ms = 60000, .has_stdin = true, .stdin_fd = host_slave, .tty = tty};
  struct an_exec_result res;
  an_error_t err = NULL;
  cr_assert(an_sandbox_exec(SB, argv, &eo, &res, &err) == 0, "exec: %s", err ? err->msg : "");
  *status = res.status;
  char *out = strdup(res.output.stdout_buf);
  an_exec_result_release(&res);
  return out;
}

/* Nothing arrived in the host terminal's input queue, its modes and size
 * are the test's own. */
static void host_terminal_untouched(void) {
  int fl = fcntl(host_slave, F_GETFL);
  cr_assert(fcntl(host_slave, F_SETFL, fl | O_NONBLOCK) == 0);
  char buf[64];
  ssize_t n = read(host_slave, buf, sizeof buf);
  cr_expect(n < 0 && errno == EAGAIN, "input was pushed into the caller's terminal: %zd bytes", n);
  fcntl(host_slave, F_SETFL, fl);
  struct termios t;
  cr_assert(tcgetattr(host_slave, &t) == 0);
  cr_expect(t.c_lflag & ECHO, "the caller's terminal lost ECHO");
  struct winsize ws;
  cr_assert(ioctl(host_master, TIOCGWINSZ, &ws) == 0);
  cr_expect(ws.ws_row == 33 && ws.ws_col == 77, "the caller's terminal was resized to %ux%u", ws.ws_row, ws.ws_col);
}

Test(terminal, stdin_from_the_callers_terminal_is_a_pipe_the_terminal_is_out_of_reach) {
  int st;
  char *out = exec_attack(false, &st);
  cr_expect_eq(st, 0, "%s", out);
  cr_expect(strstr(out, "isatty False\n") != NULL, "%s", out);
  cr_expect(strstr(out, "fd0 pipe:[") != NULL, "%s", out);
  cr_expect(strstr(out, "tcsetattr refused") && strstr(out, "tiocsti refused") && strstr(out, "tiocswinsz refused"),
            "%s", out);
  free(out);
  host_terminal_untouched();
}

Test(terminal, tty_is_a_pty_of_the_sandboxs_own_devpts_and_tiocsti_stays_inside) {
  int st;
  char *out = exec_attack(true, &st);
  cr_expect_eq(st, 0, "%s", out);
  cr_expect(strstr(out, "isatty True\r\n") != NULL, "%s", out);
  /* the sandbox's devpts instance: its first pty, whatever the host has */
  cr_expect(strstr(out, "fd0 /dev/pts/0\r\n") != NULL, "%s", out);
  /* on its own pty the command may do what it likes: it is its terminal */
  cr_expect(strstr(out, "tcsetattr ok") != NULL, "%s", out);
  free(out);
  host_terminal_untouched();

  /* it took the caller's size, and sees only its own pty */
  char *argv[] = {"sh", "-c", "stty size; ls -1 /dev/pts", NULL};
  struct an_exec_opts eo = {.timeout_ms = 60000, .has_stdin = true, .stdin_fd = host_slave, .tty = true};
  struct an_exec_result res;
  an_error_t err = NULL;
  cr_assert(an_sandbox_exec(SB, argv, &eo, &res, &err) == 0, "exec: %s", err ? err->msg : "");
  cr_expect_str_eq(res.output.stdout_buf, "33 77\r\n0\r\nptmx\r\n");
  cr_expect_str_eq(res.output.stderr_buf, "", "one stream on a terminal");
  an_exec_result_release(&res);
}

Test(terminal, tty_with_a_file_as_stdin_passes_its_end_as_the_ptys_eof) {
  char path[] = "/tmp/an-esc-term-in-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, "line\n", 5), 5);
  cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
  unlink(path);
  /* cat ends only when the pty's reader gets EOF; else the timeout (124) */
  char *argv[] = {"cat", NULL};
  struct an_exec_opts eo = {.timeout_ms = 60000, .has_stdin = true, .stdin_fd = fd, .tty = true};
  struct an_exec_result res;
  an_error_t err = NULL;
  cr_assert(an_sandbox_exec(SB, argv, &eo, &res, &err) == 0, "exec: %s", err ? err->msg : "");
  close(fd);
  cr_expect_eq(res.status, 0, "status %d: %s", res.status, res.output.stdout_buf);
  /* the pty echoes the input, then cat writes it */
  cr_expect_str_eq(res.output.stdout_buf, "line\r\nline\r\n");
  an_exec_result_release(&res);
}
