/* tests/escapes/pool_escape_test.c — nothing that runs in a pooled sandbox
 * can reach its pool's state or keeper (agentnest/pool.h "STATE"): the
 * pool directory is neither visible nor reachable from inside (no mount of
 * it, no path to it through /proc/1/root, no file named like it anywhere),
 * the keeper is not in the sandbox's pid namespace, and the sandbox's own
 * host ids cannot open the pool directory from the host side either.
 * Through the built binary, in a store of the test's own
 * (tests/lib/batch_fixture.h). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "batch_fixture.h"
#include "util.h"

TestSuite(pool_escape, .init = bf_setup, .fini = bf_teardown, .timeout = 120);

static long long json_int(const char *text, const char *key) {
  yajl_val v = yajl_tree_parse(text, NULL, 0);
  cr_assert_not_null(v, "not JSON: %s", text);
  long long n = bf_jint(v, key, -1);
  yajl_tree_free(v);
  return n;
}

Test(pool_escape, pool_state_unreachable_from_a_pooled_sandbox) {
  cr_assert_eq(bf_an("pool start p --size 1 --image busybox"), 0, "%s", bf_err);
  char meta[700];
  snprintf(meta, sizeof meta, "%s/pools/p/pool.json", bf_root);
  char *m = an_test_read_file(meta, NULL);
  cr_assert_not_null(m);
  long long keeper = json_int(m, "keeper_pid");
  free(m);
  cr_assert_gt(keeper, 1);
  cr_assert_eq(bf_an("create --pool p --pool-only"), 0, "%s", bf_err);
  char id[16];
  snprintf(id, sizeof id, "%.12s", bf_out);

  /* from inside: each probe prints OPEN when it reaches something */
  cr_assert_eq(bf_an("exec %s -- sh -c '"
                     "ls %s/pools >/dev/null 2>&1 && echo OPEN-store; "
                     "cat /proc/1/root%s/pools/p/pool.json >/dev/null 2>&1 && echo OPEN-proc-root; "
                     "grep -q pools /proc/self/mountinfo && echo OPEN-mount; "
                     "find / -xdev -name pool.json 2>/dev/null | grep -q . && echo OPEN-find; "
                     "[ -e /proc/%lld ] && echo OPEN-keeper; "
                     "kill -0 %lld 2>/dev/null && echo OPEN-kill; "
                     "echo done'", id, bf_root, bf_root, keeper, keeper), 0, "%s", bf_err);
  cr_expect_str_eq(bf_out, "done\n", "a pooled sandbox reached its pool: %s", bf_out);

  /* from the host, as the sandbox's own host uid/gid (its root inside) */
  cr_assert_eq(bf_an("inspect %s", id), 0);
  long long base = json_int(bf_out, "host_uid_base");
  cr_assert_gt(base, 0);
  char pooldir[700];
  snprintf(pooldir, sizeof pooldir, "%s/pools/p", bf_root);
  pid_t c = fork();
  if (c == 0) {
    if (setgroups(0, NULL) < 0 || setresgid((gid_t) base, (gid_t) base, (gid_t) base) < 0 ||
        setresuid((uid_t) base, (uid_t) base, (uid_t) base) < 0)
      _exit(2);
    int fd = open(pooldir, O_RDONLY | O_DIRECTORY);
    int fd2 = open(meta, O_RDONLY);
    _exit(fd < 0 && errno == EACCES && fd2 < 0 ? 0 : 1);
  }
  int st = 0;
  cr_assert_eq(waitpid(c, &st, 0), c);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the sandbox's host uid %lld opened the pool directory (%d)",
            base, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  cr_assert_eq(bf_an("destroy %s", id), 0);
  cr_assert_eq(bf_an("pool stop p"), 0, "%s", bf_err);
  bf_assert_nothing_left();
}
