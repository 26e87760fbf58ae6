/* tests/integration/egress_fork_test.c — when the egress process is forked
 * (sandbox/egress_run.h): create's prep thread makes the netns, ruleset,
 * listeners, filter and proxy while the creator goes on, but forks the
 * egress process only once the creator waits for it (an_sb_egress_start),
 * never while the creator runs: a child forked while another thread
 * allocates inherits that thread's allocator locks (an egress process hung
 * in ASan's malloc, and every DNS query of its sandbox with it).  A
 * creation abandoned before an_sb_egress_start never forks it at all, and
 * leaves no netns behind.  Real netns and nftables: run as root. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/sandbox_opts.h"
#include "sandbox/egress_run.h"
#include "util.h"

static char dir[64];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/an-egfork-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void) {
  if (dir[0]) an_test_sh("rm -rf %s", dir);
}

TestSuite(egress_fork, .init = setup, .fini = teardown, .timeout = 60);

static bool exists(const char *name) {
  char p[128];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return access(p, F_OK) == 0;
}

/* options of an allowlist sandbox (pkg.example, upstream 192.0.2.53) */
static struct an_sandbox_opts *allowlist_opts(void) {
  struct an_sandbox_opts *o = NULL;
  an_error_t e = NULL;
  cr_assert_eq(an_sandbox_opts_new(&o, &e), 0);
  cr_assert_eq(an_sandbox_opts_set_network(o, "allowlist", &e), 0, "%s", e ? e->msg : "");
  cr_assert_eq(an_sandbox_opts_add_allow(o, "pkg.example", &e), 0, "%s", e ? e->msg : "");
  cr_assert_eq(an_sandbox_opts_add_dns_upstream(o, "192.0.2.53", &e), 0, "%s", e ? e->msg : "");
  return o;
}

Test(egress_fork, no_fork_while_the_creator_runs_and_none_when_it_gives_up) {
  an_error_t e = NULL;
  struct an_sandbox_opts *o = allowlist_opts();
  struct an_sb_egress_prep *ep = NULL;
  cr_assert_eq(an_sb_egress_prepare(dir, o, &ep, &e), 0, "%s", e ? e->msg : "");
  cr_assert_not_null(ep);
  /* the creator keeps running (here: sleeping) well past the thread's work:
   * the netns is made, the egress process is not */
  for (int i = 0; i < 100 && !exists("netns"); i++) usleep(10000);
  usleep(500000);
  cr_expect(exists("netns"), "the prep thread made no netns");
  bool forked = exists("egress.pid");
  /* the creation is given up: the fork never happens, the netns goes */
  an_sb_egress_prep_free(ep);
  cr_expect(!forked, "the egress process was forked while its creator was running");
  cr_expect(!exists("egress.pid"), "an abandoned creation forked its egress process");
  cr_expect(!exists("netns"), "an abandoned creation left its netns");
  an_sandbox_opts_free(o);
}

/* The thread's fd table is its own before an_sb_egress_prepare returns: a
 * pipe the creator makes afterwards (create's mke2fs pipe) reaches EOF when
 * the creator closes its write end, while the thread still waits for the
 * creator's word.  A thread that unshared later held a copy of the write
 * end: `agentnest create --network allowlist` on a busy host hung for ever
 * reading mke2fs's output (the creator waited for EOF, the thread for
 * an_sb_egress_start). */
Test(egress_fork, a_pipe_the_creator_makes_after_prepare_is_not_held_by_the_thread) {
  an_error_t e = NULL;
  struct an_sandbox_opts *o = allowlist_opts();
  for (int i = 0; i < 3; i++) {
    struct an_sb_egress_prep *ep = NULL;
    cr_assert_eq(an_sb_egress_prepare(dir, o, &ep, &e), 0, "%s", e ? e->msg : "");
    int p[2];
    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    usleep(50000);   /* the creator's mke2fs runs: the thread goes on meanwhile */
    close(p[1]);
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    int n = poll(&pfd, 1, 3000);
    char c;
    bool eof = n == 1 && read(p[0], &c, 1) == 0;
    close(p[0]);
    an_sb_egress_prep_free(ep);
    cr_assert(eof, "round %d: no EOF on a pipe made after an_sb_egress_prepare: the prep thread holds its write end", i);
  }
  an_sandbox_opts_free(o);
}
