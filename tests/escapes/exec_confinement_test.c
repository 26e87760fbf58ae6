/* tests/escapes/exec_confinement_test.c — issue 15, "exactly the
 * confinement it gets today": an exec'd process must be confined exactly as
 * the sandbox's own process is.  Since issue 15 the joiner of an exec
 * (engine/exec_join.h) runs the part of the process's setup that needs no
 * identity change (rlimits, session keyring, cwd, Landlock) itself, while
 * the runtime moves it into the cgroup, and the process inherits it and
 * does only its identity, capabilities and no_new_privs; so the same probe
 * runs as the sandbox's pid-1 process (the
 * full init path, which does all of it in the process) and through the
 * engine's exec (an_container_exec, the path of `agentnest exec` and
 * `agentnest-oci exec`), and every line must match: /proc/self/status
 * (Uid, Gid, Groups, CapInh, CapPrm, CapEff, CapBnd, CapAmb, NoNewPrivs,
 * Seccomp, Seccomp_filters), /proc/self/cgroup, /proc/self/limits, umask,
 * cwd, HOME, and a write that only Landlock denies (/proc/self/comm, see
 * isolation_test's landlock test).  A failed setup must still come back as
 * the command's error (127 for a missing command, 126 for a file that is
 * not executable), not as a runtime failure. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/landlock.h"
#include "escape_fixture.h"
#include "util.h"

static struct esc_sandbox S;

static void setup(void) { esc_sandbox_init(&S, "busybox"); }
static void teardown(void) { esc_sandbox_fini(&S); }

TestSuite(exec_confinement, .init = setup, .fini = teardown, .timeout = 300);

#define CONFINEMENT_PROBE                                                                     \
  "grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp|"           \
  "Seccomp_filters):' /proc/self/status; cat /proc/self/cgroup; cat /proc/self/limits; "      \
  "echo umask $(umask); echo cwd $(pwd); echo home $HOME; "                                     \
  "if echo p 2>/dev/null >/proc/self/comm; then echo comm-written; else echo comm-denied; fi"

/* The line of `text` that starts with `key`, or "" (a static copy). */
static const char *line_of(const char *text, const char *key) {
  static char buf[512];
  buf[0] = '\0';
  for (const char *p = text; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t) (nl - p) : strlen(p);
    if (!strncmp(p, key, strlen(key))) {
      snprintf(buf, sizeof buf, "%.*s", (int) n, p);
      break;
    }
    p = nl ? nl + 1 : NULL;
  }
  return buf;
}

Test(exec_confinement, exec_is_confined_exactly_as_the_sandbox_process) {
  esc_start(&S, "(" CONFINEMENT_PROBE ") > /workspace/pid1.txt 2>&1; echo > /workspace/ready; "
                "exec sleep 120", "ready");
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/pid1.txt", S.ws);
  size_t len = 0;
  char *pid1 = an_test_read_file(path, &len);
  cr_assert(pid1, "no pid1.txt");
  char *argv[] = {"/bin/sh", "-c", CONFINEMENT_PROBE, NULL};
  struct esc_result r = {0};
  cr_assert_eq(esc_exec(&S, argv, &r), 0, "exec: %s", r.err);
  /* the probe really ran: these lines are there, and say what the secure
   * defaults say (no capabilities, no_new_privs, one seccomp filter) */
  static const char *const keys[] = {"Uid:", "Gid:", "Groups:", "CapInh:", "CapPrm:", "CapEff:",
                                     "CapBnd:", "CapAmb:", "NoNewPrivs:", "Seccomp:",
                                     "Seccomp_filters:", "umask ", "cwd ", "home ", "comm-"};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
    char want[512];
    snprintf(want, sizeof want, "%s", line_of(pid1, keys[i]));
    cr_assert(want[0], "pid 1 printed no %s line:\n%s", keys[i], pid1);
    cr_expect_str_eq(line_of(r.out, keys[i]), want, "exec vs pid 1, %s", keys[i]);
  }
  cr_expect_str_eq(line_of(r.out, "CapEff:"), "CapEff:\t0000000000000000");
  cr_expect_str_eq(line_of(r.out, "NoNewPrivs:"), "NoNewPrivs:\t1");
  cr_expect_str_eq(line_of(r.out, "Seccomp:"), "Seccomp:\t2");
  /* every cgroup and rlimit line: the whole text after the status lines */
  const char *cg_exec = strstr(r.out, "\n0::"), *cg_pid1 = strstr(pid1, "\n0::");
  cr_assert(cg_exec && cg_pid1, "no cgroup2 line:\n%s", r.out);
  const char *lim_exec = strstr(r.out, "Limit "), *lim_pid1 = strstr(pid1, "Limit ");
  cr_assert(lim_exec && lim_pid1, "no limits:\n%s", r.out);
  const char *st_exec = strchr(strstr(r.out, "Seccomp_filters:"), '\n');
  const char *st_pid1 = strchr(strstr(pid1, "Seccomp_filters:"), '\n');
  cr_expect_str_eq(st_exec, st_pid1, "cgroups, limits, umask, cwd, HOME, Landlock differ");
  if (an_landlock_abi_version() >= 1) cr_expect_str_eq(line_of(r.out, "comm-"), "comm-denied");
  esc_result_free(&r);
  free(pid1);
}

Test(exec_confinement, a_failed_setup_in_the_joiner_is_the_commands_error) {
  esc_start(&S, "echo > /workspace/ready; exec sleep 120", "ready");
  char *missing[] = {"no-such-command", NULL};
  struct esc_result r = {0};
  int st = esc_exec(&S, missing, &r);
  cr_expect_eq(st, -ENOENT, "missing command: %d %s", st, r.err);
  cr_expect(strstr(r.err, "not found"), "%s", r.err);
  esc_result_free(&r);
  char *notexec[] = {"/etc/passwd", NULL};
  st = esc_exec(&S, notexec, &r);
  cr_expect_eq(st, -EACCES, "not executable: %d %s", st, r.err);
  esc_result_free(&r);
  /* and the sandbox still runs commands */
  char *ok[] = {"/bin/echo", "fine", NULL};
  cr_assert_eq(esc_exec(&S, ok, &r), 0, "%s", r.err);
  cr_expect_str_eq(r.out, "fine\n");
  esc_result_free(&r);
}
