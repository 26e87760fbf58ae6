/* tests/escapes/session_escape_test.c — a session gives the sandbox
 * nothing a plain exec does not: the monitor's control socket is host-only
 * (0700 directory, 0600 socket, not reachable by any path or unix socket
 * list inside), the helper runs with exactly an exec's identity,
 * capabilities, no_new_privs and seccomp (compared field by field in
 * /proc/self/status), and frames the code forges on the helper's own
 * socket are not obeyed.  Images from the cache; skips without them. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "agentnest.h"
#include "agentnest/sandbox.h"
#include "agentnest/session.h"
#include "store_fixture.h"
#include "util.h"
#define AN_SF_SHORT_NAMES   /* make_sb, destroy, start, call (tests/lib/session_fixture.h) */
#include "session_fixture.h"

SF_TEST_SUITE(session_escape, "sessesc", true);

static char *field_lines(const char *status) {
  static const char *const keys[] = {"Uid:", "Gid:", "Groups:", "CapInh:", "CapPrm:", "CapEff:",
                                     "CapBnd:", "CapAmb:", "NoNewPrivs:", "Seccomp:",
                                     "Seccomp_filters:", NULL};
  char *out = calloc(1, strlen(status) + 1);
  cr_assert(out);
  for (const char *l = status; l && *l;) {
    const char *nl = strchr(l, '\n');
    size_t n = nl ? (size_t) (nl - l + 1) : strlen(l);
    for (size_t k = 0; keys[k]; k++)
      if (!strncmp(l, keys[k], strlen(keys[k]))) strncat(out, l, n);
    l += n;
  }
  return out;
}

static char *exec_out(struct an_sandbox *sb, char *const argv[]) {
  struct an_exec_result res;
  an_error_t err = NULL;
  cr_assert(an_sandbox_exec(sb, argv, NULL, &res, &err) == 0, "exec: %s", err ? err->msg : "");
  cr_assert_eq(res.status, 0, "stderr: %s", res.output.stderr_buf);
  char *s = strdup(res.output.stdout_buf);
  an_exec_result_release(&res);
  return s;
}

Test(session_escape, helper_has_exactly_the_confinement_of_an_exec) {
  struct an_sandbox *sb = make_sb("python", NULL);
  start(sb, AN_SESSION_PYTHON, "py");
  start(sb, AN_SESSION_SHELL, "sh");
  char *pyargv[] = {"python3", "-c", "print(open('/proc/self/status').read(), end='')", NULL};
  char *shargv[] = {"cat", "/proc/self/status", NULL};
  char *e_py = exec_out(sb, pyargv), *e_sh = exec_out(sb, shargv);
  struct an_session_result p = call(sb, "py", "print(open('/proc/self/status').read(), end='')", 0);
  struct an_session_result s = call(sb, "sh", "cat /proc/self/status", 0);
  char *a = field_lines(e_py), *b = field_lines(p.output.stdout_buf);
  cr_expect(strstr(a, "Uid:\t65532") && strstr(a, "CapEff:\t0000000000000000") &&
                strstr(a, "NoNewPrivs:\t1") && strstr(a, "Seccomp:\t2"), "exec: %s", a);
  cr_expect_str_eq(b, a, "python session vs exec:\n%s\nvs\n%s", b, a);
  char *c = field_lines(e_sh), *d = field_lines(s.output.stdout_buf);
  cr_expect_str_eq(d, c, "shell session vs exec:\n%s\nvs\n%s", d, c);
  free(a); free(b); free(c); free(d); free(e_py); free(e_sh);
  an_session_result_release(&p);
  an_session_result_release(&s);
  destroy(sb);
}

Test(session_escape, control_socket_is_unreachable_from_inside) {
  struct an_sandbox *sb = make_sb("python", NULL);
  start(sb, AN_SESSION_PYTHON, "py");
  char dir[PATH_MAX + 64], sock[PATH_MAX + 96];
  snprintf(dir, sizeof dir, "%s/sandboxes/%s/control", g_root, an_sandbox_id(sb));
  snprintf(sock, sizeof sock, "%s/control.sock", dir);
  struct stat st;
  cr_assert(stat(dir, &st) == 0);
  cr_expect(st.st_uid == 0 && (st.st_mode & 0777) == 0700, "control dir mode %o", st.st_mode & 0777);
  cr_assert(stat(sock, &st) == 0 && S_ISSOCK(st.st_mode));
  cr_expect((st.st_mode & 0777) == 0600, "socket mode %o", st.st_mode & 0777);
  /* inside: no path to it, no listing of it, no socket named so anywhere */
  char code[4 * PATH_MAX + 1024];
  snprintf(code, sizeof code,
           "import os, socket, stat\n"
           "found = []\n"
           "for top in ('/', '/workspace', '/run', '/tmp'):\n"
           "    for d, subdirs, files in os.walk(top):\n"
           "        if d.startswith(('/proc', '/sys')): subdirs[:] = []; continue\n"
           "        for f in files:\n"
           "            p = os.path.join(d, f)\n"
           "            try:\n"
           "                if f == 'control.sock' or stat.S_ISSOCK(os.lstat(p).st_mode): found.append(p)\n"
           "            except OSError: pass\n"
           "unix = open('/proc/net/unix').read()\n"
           "s = socket.socket(socket.AF_UNIX)\n"
           "try:\n"
           "    s.connect('%s'); conn = 'connected'\n"
           "except OSError as e:\n"
           "    conn = type(e).__name__\n"
           "(found, 'control.sock' in unix, conn)", sock);
  struct an_session_result r = call(sb, "py", code, 60000);
  cr_assert(r.value_repr, "error: %s", r.error_traceback ? r.error_traceback : "");
  cr_expect_str_eq(r.value_repr, "([], False, 'FileNotFoundError')");
  an_session_result_release(&r);
  destroy(sb);
}

Test(session_escape, forged_frames_on_the_helper_socket_are_not_obeyed) {
  struct an_sandbox *sb = make_sb("python", NULL);
  start(sb, AN_SESSION_PYTHON, "py");
  /* fd 3 is the helper's socket: the code writes a fake result and
   * control requests on it; the call's real result still comes, and the
   * session (and the monitor) ignore the rest */
  struct an_session_result r = call(sb, "py",
      "import os\n"
      "for doc in (b'{\"id\":1,\"type\":\"result\",\"status\":99}', b'{\"op\":\"session.stop\",\"name\":\"py\"}',\n"
      "            b'{\"op\":\"extend\",\"deadline_ms\":99999999999999}', b'garbage'):\n"
      "    os.write(3, b'%d:%s,' % (len(doc), doc))\n"
      "'real'", 0);
  cr_expect_eq(r.status, 0);
  cr_expect_str_eq(r.value_repr, "'real'");
  an_session_result_release(&r);
  struct an_session_result r2 = call(sb, "py", "'alive'", 0);
  cr_expect_str_eq(r2.value_repr, "'alive'");
  an_session_result_release(&r2);
  /* broken framing: the session is lost, nothing else is */
  struct an_session_result r3 = call(sb, "py", "import os; os.write(3, b'x:y,'); import time; time.sleep(5)", 0);
  cr_expect(r3.session_lost, "status %d", r3.status);
  an_session_result_release(&r3);
  start(sb, AN_SESSION_PYTHON, "py");
  destroy(sb);
}

/* redteam: the request's id was the caller's pid << 20 ^ its CLOCK_MONOTONIC
 * ms, and the code can read its own request (the helper is its process):
 * the id told the sandbox a host pid (the caller's) and the host's uptime,
 * which its time namespace hides from a plain exec.  The id is random now. */
static unsigned long long request_id(struct an_sandbox *sb, uint64_t *ms) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  *ms = (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
  struct an_session_result r = call(sb, "py",
      "import sys\n"
      "f = sys._getframe(0)\n"
      "while f is not None and 'req' not in f.f_locals: f = f.f_back\n"
      "f.f_locals['req']['id']", 0);
  cr_assert_eq(r.status, 0, "%s", r.error_traceback ? r.error_traceback : "");
  cr_assert_not_null(r.value_repr);
  unsigned long long id = strtoull(r.value_repr, NULL, 10);
  an_session_result_release(&r);
  return id;
}

Test(session_escape, the_request_id_tells_no_host_pid_or_clock) {
  struct an_sandbox *sb = make_sb("python", NULL);
  start(sb, AN_SESSION_PYTHON, "py");
  int near_clock = 0;
  for (int i = 0; i < 2; i++) {
    uint64_t ms = 0;
    unsigned long long id = request_id(sb, &ms);
    unsigned long long pid_part = (id >> 20) ^ (ms >> 20);
    long long dt = (long long) (id & 0xfffff) - (long long) (ms & 0xfffff);
    cr_expect((pid_part ^ (unsigned long long) getpid()) >= 4, "request id %llu holds the caller's pid %d", id,
              (int) getpid());
    near_clock += dt >= 0 && dt < 2000;
  }
  /* a random id is that close to the clock by chance once in 500 calls; twice, hardly */
  cr_expect_lt(near_clock, 2, "both request ids hold the host's CLOCK_MONOTONIC");
  destroy(sb);
}
