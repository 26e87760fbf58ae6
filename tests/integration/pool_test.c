/* tests/integration/pool_test.c — warm pools through the built binary
 * (`agentnest pool start|ls|stop`, `create/run --pool`, `batch --pool`) on
 * the real kernel, in a store of the test's own (tests/lib/batch_fixture.h):
 * a pooled sandbox is indistinguishable from a fresh one (same effective
 * policy but for ids, empty workspace, no process from before), each is
 * handed out once (concurrent takers get distinct sandboxes, a used one
 * never comes back), the keeper refills, the lifetime counts from the
 * hand-out, a killed taker takes its pooled sandbox with it, `pool stop`
 * and a SIGKILLed keeper + `prune` leave nothing, options that conflict
 * with the pool's are refused, an empty pool falls back (or fails with
 * --pool-only), `batch --pool` runs jobs on pooled sandboxes, a ready
 * sandbox that dies is replaced, and a pool whose keeper died is listed as
 * dead, hands out nothing (saying why) and is removed by `pool stop`; the
 * keeper reaps the inits of the sandboxes it handed out.  No test
 * asserts a duration. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "batch_fixture.h"
#include "util.h"

TestSuite(pool, .init = bf_setup, .fini = bf_teardown, .timeout = 240);

#define MAXIDS 64

static size_t dir_ids(const char *sub, char ids[][16], size_t max) {
  char p[700];
  snprintf(p, sizeof p, "%s/pools/%s", bf_root, sub);
  DIR *d = opendir(p);
  size_t n = 0;
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (de->d_name[0] != '.' && n < max) snprintf(ids[n++], 16, "%.15s", de->d_name);
  if (d) closedir(d);
  return n;
}

static void start_pool(const char *name, int size, const char *opts) {
  cr_assert_eq(bf_an("pool start %s --size %d --image busybox %s", name, size, opts), 0,
               "pool start: %s", bf_err);
}

/* `create --pool NAME --json`: the id (into id) and whether it was pooled. */
static bool take(const char *name, const char *extra, char id[16]) {
  cr_assert_eq(bf_an("--json create --pool %s %s", name, extra), 0, "create --pool: %s", bf_err);
  yajl_val v = yajl_tree_parse(bf_out, NULL, 0);
  cr_assert_not_null(v, "create --json: %s", bf_out);
  snprintf(id, 16, "%.15s", bf_jstr(v, "id"));
  bool pooled = bf_jtrue(v, "pooled");
  yajl_tree_free(v);
  return pooled;
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Member of a JSON file as an integer. */
static long long file_int(const char *path, const char *key) {
  char *s = an_test_read_file(path, NULL);
  cr_assert_not_null(s, "read %s", path);
  yajl_val v = yajl_tree_parse(s, NULL, 0);
  free(s);
  cr_assert_not_null(v);
  long long n = bf_jint(v, key, -1);
  yajl_tree_free(v);
  return n;
}

static bool sandbox_exists(const char *id) {
  char p[700];
  struct stat st;
  snprintf(p, sizeof p, "%s/sandboxes/%s", bf_root, id);
  return stat(p, &st) == 0;
}

/* Wait (bounded, polling) for cond over up to 30 s; the result is returned,
 * the time is not asserted. */
#define WAIT_FOR(cond)                                              \
  ({                                                                \
    bool ok_ = false;                                               \
    for (int i_ = 0; i_ < 300 && !(ok_ = (cond)); i_++) usleep(100000); \
    ok_;                                                            \
  })

/* Sandboxes in the store now (remembered for the host check). */
static int count_sandboxes(void) {
  bf_remember_store_sandboxes();
  char p[700];
  snprintf(p, sizeof p, "%s/sandboxes", bf_root);
  DIR *d = opendir(p);
  int k = 0;
  struct dirent *de;
  while (d && (de = readdir(d))) k += de->d_name[0] != '.';
  if (d) closedir(d);
  return k;
}

/* How many pools `pool ls --json` lists. */
static size_t pools_listed(void) {
  cr_assert_eq(bf_an("pool ls --json"), 0, "%s", bf_err);
  yajl_val v = yajl_tree_parse(bf_out, NULL, 0);
  cr_assert(v && YAJL_IS_ARRAY(v), "pool ls --json: %s", bf_out);
  size_t n = v->u.array.len;
  yajl_tree_free(v);
  return n;
}

/* inspect --policy with every occurrence of the sandbox's id and its host
 * uid base replaced: what must be equal between a pooled and a fresh one. */
static char *policy_of(const char *id) {
  cr_assert_eq(bf_an("inspect --policy %s", id), 0, "inspect --policy: %s", bf_err);
  char *pol = strdup(bf_out);
  cr_assert_eq(bf_an("inspect %s", id), 0);
  yajl_val v = yajl_tree_parse(bf_out, NULL, 0);
  cr_assert_not_null(v);
  long long base = bf_jint(v, "host_uid_base", -1);
  yajl_tree_free(v);
  char num[32];
  snprintf(num, sizeof num, "%lld", base);
  /* replace id, and host ids base..base+65535 as "base+N" */
  char *out = calloc(1, strlen(pol) * 2 + 1);
  const char *p = pol;
  char *o = out;
  while (*p) {
    if (!strncmp(p, id, strlen(id))) {
      o = stpcpy(o, "<ID>");
      p += strlen(id);
    } else if (*p >= '0' && *p <= '9' && (p == pol || !(p[-1] >= '0' && p[-1] <= '9'))) {
      char *end;
      long long n = strtoll(p, &end, 10);
      if (n >= base && n < base + 65536 && base > 0) o += sprintf(o, "<BASE+%lld>", n - base);
      else {
        memcpy(o, p, (size_t) (end - p));
        o += end - p;
      }
      p = end;
    } else {
      *o++ = *p++;
    }
  }
  free(pol);
  return out;
}

Test(pool, pooled_is_indistinguishable_from_fresh) {
  start_pool("p", 1, "--memory 96m --pids 64");
  char pid_[16], fid[16];
  cr_assert(take("p", "--pool-only", pid_));
  cr_assert_eq(bf_an("create --image busybox --memory 96m --pids 64"), 0, "%s", bf_err);
  snprintf(fid, sizeof fid, "%.12s", bf_out);
  char *a = policy_of(pid_), *b = policy_of(fid);
  cr_expect_str_eq(a, b, "inspect --policy of a pooled and a fresh sandbox differ");
  free(a);
  free(b);
  /* empty workspace, only pid 1 and the exec's own processes */
  for (int k = 0; k < 2; k++) {
    const char *id = k ? fid : pid_;
    /* builtins only: the processes are pid 1 and this shell */
    cr_assert_eq(bf_an("exec %s -- sh -c 'ls -A /workspace /tmp; echo --; set -- /proc/[0-9]*; echo $# $1'", id), 0,
                 "%s", bf_err);
    cr_expect_str_eq(bf_out, "/tmp:\n\n/workspace:\n--\n2 /proc/1\n", "sandbox %s (%s): %s", id,
                     k ? "fresh" : "pooled", bf_out);
  }
  cr_assert_eq(bf_an("destroy %s %s", pid_, fid), 0, "%s", bf_err);
  cr_assert_eq(bf_an("pool stop p"), 0, "%s", bf_err);
  bf_assert_nothing_left();
}

Test(pool, concurrent_takers_get_distinct_sandboxes_never_reused) {
  start_pool("p", 4, "");
  char ready[MAXIDS][16];
  size_t nready = dir_ids("p/ready", ready, MAXIDS);
  cr_assert_eq(nready, 4);
  /* four takers at once, each printing its sandbox's id */
  cr_assert_eq(an_test_sh("cd '%s' && for i in 1 2 3 4; do '%s' --root '%s' --json create --pool p --pool-only "
                          "> t$i.json 2>&1 & done; wait", bf_work, bf_an_bin, bf_root), 0);
  char got[4][16];
  for (int i = 0; i < 4; i++) {
    char name[16];
    snprintf(name, sizeof name, "t%d.json", i + 1);
    char *s = bf_read_work(name);
    yajl_val v = yajl_tree_parse(s, NULL, 0);
    cr_assert_not_null(v, "taker %d: %s", i + 1, s);
    cr_assert(bf_jtrue(v, "pooled"), "taker %d: %s", i + 1, s);
    snprintf(got[i], 16, "%.15s", bf_jstr(v, "id"));
    yajl_tree_free(v);
    free(s);
    /* from the pool: one of the ready ones, or a refill made meanwhile;
     * either way recorded as handed out */
    char taken[MAXIDS][16];
    size_t nt = dir_ids("p/taken", taken, MAXIDS);
    bool was_taken = false;
    for (size_t k = 0; k < nt; k++) was_taken |= !strcmp(taken[k], got[i]);
    cr_expect(was_taken, "taker %d got %s, which the pool did not hand out", i + 1, got[i]);
    for (int j = 0; j < i; j++) cr_expect_str_neq(got[i], got[j], "two takers got sandbox %s", got[i]);
  }
  /* used and destroyed: never handed out again, nor listed as ready */
  cr_assert_eq(bf_an("exec %s -- touch /workspace/used", got[0]), 0, "%s", bf_err);
  cr_assert_eq(bf_an("destroy %s %s %s %s", got[0], got[1], got[2], got[3]), 0, "%s", bf_err);
  cr_assert(WAIT_FOR(dir_ids("p/ready", ready, MAXIDS) == 4), "the pool was not refilled");
  for (int round = 0; round < 6; round++) {
    char id[16];
    take("p", "", id);
    for (int i = 0; i < 4; i++) cr_expect_str_neq(id, got[i], "sandbox %s handed out twice", id);
    cr_assert_eq(bf_an("exec %s -- ls -A /workspace", id), 0);
    cr_expect_str_eq(bf_out, "", "a pooled workspace is not empty: %s", bf_out);
    cr_assert_eq(bf_an("destroy %s", id), 0);
  }
  cr_assert_eq(bf_an("pool ls --json"), 0);
  yajl_val v = yajl_tree_parse(bf_out, NULL, 0);
  cr_assert(v && YAJL_IS_ARRAY(v) && v->u.array.len == 1, "%s", bf_out);
  cr_expect_eq(bf_jint(v->u.array.values[0], "handed_out", -1), 10);
  cr_expect_eq(bf_jint(v->u.array.values[0], "size", -1), 4);
  cr_expect_geq(bf_jint(v->u.array.values[0], "created", -1), 10);
  yajl_tree_free(v);
  cr_assert_eq(bf_an("pool stop p"), 0, "%s", bf_err);
  bf_assert_nothing_left();
}

Test(pool, lifetime_counts_from_hand_out) {
  start_pool("p", 1, "--timeout 2s");
  sleep(3);   /* longer than the lifetime: a ready sandbox does not expire */
  long long before = now_ms();
  char id[16];
  cr_assert(take("p", "--pool-only", id));
  char rec[700];
  snprintf(rec, sizeof rec, "%s/sandboxes/%s/sandbox.json", bf_root, id);
  cr_expect_geq(file_int(rec, "deadline_ms"), before + 2000, "the deadline does not count from the hand-out");
  cr_expect_eq(bf_an("exec %s -- true", id), 0, "%s", bf_err);
  /* the monitor's timer was re-armed: the sandbox expires by itself */
  cr_expect(WAIT_FOR(!sandbox_exists(id)), "the handed-out sandbox did not expire");
  cr_assert_eq(bf_an("pool stop p"), 0, "%s", bf_err);
  bf_assert_nothing_left();
}

Test(pool, killed_taker_takes_its_sandbox_with_it) {
  start_pool("p", 1, "");
  pid_t c = fork();
  if (c == 0) {
    execl(bf_an_bin, bf_an_bin, "--root", bf_root, "run", "--pool", "p", "--pool-only", "--", "sleep", "100",
          (char *) NULL);
    _exit(127);
  }
  char taken[MAXIDS][16];
  cr_assert(WAIT_FOR(dir_ids("p/taken", taken, MAXIDS) == 1));
  char ev[700];
  snprintf(ev, sizeof ev, "%s/sandboxes/%s/events.jsonl", bf_root, taken[0]);
  cr_assert(WAIT_FOR(({ char *s_ = an_test_read_file(ev, NULL); bool f_ = s_ && strstr(s_, "\"claimed\""); free(s_); f_; })));
  usleep(300000);
  kill(c, SIGKILL);
  waitpid(c, NULL, 0);
  cr_expect(WAIT_FOR(!sandbox_exists(taken[0])), "sandbox %s outlived its killed taker", taken[0]);
  cr_assert_eq(bf_an("pool stop p"), 0, "%s", bf_err);
  bf_assert_nothing_left();
}

Test(pool, stop_destroys_ready_leaves_handed_out) {
  start_pool("p", 3, "");
  char id[16];
  cr_assert(take("p", "--pool-only", id));
  char ready[MAXIDS][16];
  cr_assert(WAIT_FOR(dir_ids("p/ready", ready, MAXIDS) == 3));
  size_t n = dir_ids("p/ready", ready, MAXIDS);
  cr_assert_eq(bf_an("pool stop p"), 0, "%s", bf_err);
  for (size_t i = 0; i < n; i++) cr_expect(!sandbox_exists(ready[i]), "ready sandbox %s left", ready[i]);
  char p[700];
  struct stat st;
  snprintf(p, sizeof p, "%s/pools/p", bf_root);
  cr_expect(stat(p, &st) != 0, "the pool directory is left");
  cr_expect_eq(bf_an("exec %s -- echo alive", id), 0, "the handed-out sandbox was touched: %s", bf_err);
  cr_expect_str_eq(bf_out, "alive\n");
  cr_expect_neq(bf_an("pool stop p"), 0);
  cr_expect(strstr(bf_err, "no pool p"), "%s", bf_err);
  cr_assert_eq(bf_an("destroy %s", id), 0);
  bf_remember_store_sandboxes();
  bf_assert_nothing_left();
}

/* Pool p of 2 ready sandboxes whose keeper is then SIGKILLed (and gone): its pid. */
static pid_t start_pool_kill_keeper(void) {
  start_pool("p", 2, "");
  bf_remember_store_sandboxes();
  char meta[700];
  snprintf(meta, sizeof meta, "%s/pools/p/pool.json", bf_root);
  pid_t keeper = (pid_t) file_int(meta, "keeper_pid");
  cr_assert_gt(keeper, 1);
  cr_assert_eq(kill(keeper, SIGKILL), 0);
  cr_assert(WAIT_FOR(kill(keeper, 0) != 0));
  return keeper;
}

Test(pool, keeper_sigkill_then_prune_leaves_nothing) {
  start_pool_kill_keeper();
  cr_assert_eq(bf_an("pool ls --json"), 0);
  cr_expect(strstr(bf_out, "\"keeper_alive\":false"), "%s", bf_out);
  char ready[MAXIDS][16];
  size_t n = dir_ids("p/ready", ready, MAXIDS);
  cr_assert_eq(bf_an("prune"), 0, "prune: %s %s", bf_out, bf_err);
  cr_expect(strstr(bf_out, "\"pools\":[\"p\"]"), "prune report: %s", bf_out);
  for (size_t i = 0; i < n; i++) cr_expect(!sandbox_exists(ready[i]), "ready sandbox %s left", ready[i]);
  cr_expect_eq(pools_listed(), 0, "prune left the pool listed");
  char p[700];
  struct stat st;
  snprintf(p, sizeof p, "%s/pools/p", bf_root);
  cr_expect(stat(p, &st) != 0, "the pool directory is left");
  bf_assert_nothing_left();
}

Test(pool, conflicting_options_and_bad_names_refused) {
  start_pool("p", 1, "");
  cr_expect_eq(bf_an("run --pool p --memory 1g -- true"), 125);
  cr_expect(strstr(bf_err, "the sandbox options are the pool's"), "%s", bf_err);
  cr_expect_eq(bf_an("create --pool p --profile shell"), 125);
  cr_expect_eq(bf_an("run --pool nosuch -- true"), 125);
  cr_expect(strstr(bf_err, "no pool nosuch"), "%s", bf_err);
  cr_expect_eq(bf_an("run --pool-only -- true"), 125);
  cr_expect_eq(bf_an("pool start ../x --size 1 --image busybox"), 125);
  cr_expect(strstr(bf_err, "pool name"), "%s", bf_err);
  cr_expect_eq(bf_an("pool start q --size 0 --image busybox"), 125);
  cr_expect_eq(bf_an("pool start q --size 1 --image busybox --secret K=v"), 125);
  cr_expect_eq(bf_an("pool start p --size 1 --image busybox"), 125);
  cr_expect(strstr(bf_err, "exists"), "%s", bf_err);
  /* a pool whose sandboxes cannot be made fails at once and leaves nothing */
  cr_expect_eq(bf_an("pool start q --size 1 --image no-such-image"), 125);
  char p[700];
  struct stat st;
  snprintf(p, sizeof p, "%s/pools/q", bf_root);
  cr_expect(stat(p, &st) != 0, "a failed pool start left its directory");
  cr_assert_eq(bf_an("pool stop p"), 0, "%s", bf_err);
  bf_assert_nothing_left();
}

Test(pool, empty_pool_falls_back_or_fails_with_pool_only) {
  start_pool("p", 1, "--memory 80m");
  char meta[700];
  snprintf(meta, sizeof meta, "%s/pools/p/pool.json", bf_root);
  pid_t keeper = (pid_t) file_int(meta, "keeper_pid");
  cr_assert_eq(kill(keeper, SIGSTOP), 0);   /* no refill while stopped */
  char a[16], b[16];
  cr_expect(take("p", "", a));
  cr_expect(!take("p", "", b), "an empty pool handed out a sandbox");
  cr_expect(strstr(bf_err, "pool p is empty"), "%s", bf_err);
  cr_assert_eq(bf_an("inspect %s", b), 0);
  cr_expect(strstr(bf_out, "\"memory\": 83886080"), "the fallback does not have the pool's options: %s", bf_out);
  cr_expect_eq(bf_an("--json run --pool p --pool-only -- true"), 125);
  cr_expect(strstr(bf_err, "pool p is empty"), "%s", bf_err);
  cr_expect_eq(bf_an("--json run --pool p -- true"), 0, "%s", bf_err);
  cr_expect(strstr(bf_out, "\"pooled\": false"), "%s", bf_out);
  kill(keeper, SIGCONT);
  cr_assert_eq(bf_an("destroy %s %s", a, b), 0);
  char ready[MAXIDS][16];
  cr_assert(WAIT_FOR(dir_ids("p/ready", ready, MAXIDS) == 1), "no refill after SIGCONT");
  cr_expect_eq(bf_an("--json run --pool p --pool-only -- echo hi"), 0, "%s", bf_err);
  cr_expect(strstr(bf_out, "\"pooled\": true"), "%s", bf_out);
  cr_assert_eq(bf_an("pool stop p"), 0, "%s", bf_err);
  bf_assert_nothing_left();
}

Test(pool, batch_uses_the_pool) {
  start_pool("p", 2, "");
  bf_write_text("jobs.jsonl",
                "{\"id\":\"a\",\"shell\":\"ls -A /workspace; echo a\"}\n"
                "{\"id\":\"b\",\"cmd\":[\"echo\",\"b\"]}\n"
                "{\"id\":\"c\",\"shell\":\"echo c\",\"memory\":\"100m\"}\n");
  cr_assert_eq(bf_an("batch --pool p -j 1 --results r.jsonl jobs.jsonl"), 0, "%s", bf_err);
  char *text = bf_read_work("r.jsonl");
  yajl_val recs[8];
  size_t n = bf_parse_records(text, recs, 8);
  free(text);
  cr_assert_eq(n, 3);
  yajl_val a = bf_find_record(recs, n, "a"), c = bf_find_record(recs, n, "c");
  cr_assert(a && c);
  cr_expect_str_eq(bf_jstr(a, "result"), "passed");
  cr_expect_str_eq(bf_jstr(a, "stdout"), "a\n");
  cr_expect(bf_jtrue(a, "pooled"), "the first job did not take a ready sandbox");
  cr_expect_str_eq(bf_jstr(bf_find_record(recs, n, "b"), "result"), "passed");
  cr_expect(!bf_jtrue(c, "pooled"), "a job with options of its own took a pooled sandbox");
  cr_expect_str_eq(bf_jstr(c, "result"), "passed");
  bf_free_records(recs, n);
  cr_expect_eq(bf_an("batch --pool p --memory 1g jobs.jsonl"), 125);
  cr_assert_eq(bf_an("pool stop p"), 0, "%s", bf_err);
  cr_assert(WAIT_FOR(count_sandboxes() == 0), "pooled batch sandboxes were not torn down");
  bf_assert_nothing_left();
}

Test(pool, dead_ready_sandbox_is_replaced) {
  start_pool("p", 2, "");
  char ready[MAXIDS][16];
  cr_assert_eq(dir_ids("p/ready", ready, MAXIDS), 2);
  char victim[16];
  snprintf(victim, sizeof victim, "%s", ready[0]);
  bf_remember_store_sandboxes();
  char rec[700];
  snprintf(rec, sizeof rec, "%s/sandboxes/%s/sandbox.json", bf_root, victim);
  pid_t init = (pid_t) file_int(rec, "init_pid");
  cr_assert_gt(init, 1);
  cr_assert_eq(kill(init, SIGKILL), 0);   /* a ready sandbox dies from the host side */
  cr_assert(WAIT_FOR(!sandbox_exists(victim)), "the dead ready sandbox %s was not removed", victim);
  cr_assert(WAIT_FOR(({
              size_t n_ = dir_ids("p/ready", ready, MAXIDS);
              bool has_ = false;
              for (size_t k_ = 0; k_ < n_; k_++) has_ |= !strcmp(ready[k_], victim);
              n_ == 2 && !has_;
            })),
            "the pool was not refilled without the dead sandbox");
  char id[16];
  cr_assert(take("p", "--pool-only", id));
  cr_expect_str_neq(id, victim);
  cr_expect_eq(bf_an("exec %s -- true", id), 0, "%s", bf_err);
  cr_assert_eq(bf_an("destroy %s", id), 0);
  cr_assert_eq(bf_an("pool stop p"), 0, "%s", bf_err);
  bf_assert_nothing_left();
}

/* The pool's operations are in the store's audit log: its start and each hand-out, naming the
 * pool (and the sandbox handed out). */
Test(pool, start_and_hand_out_are_audited) {
  start_pool("p", 1, "");
  char id[16];
  cr_assert(take("p", "--pool-only", id));
  cr_assert_eq(bf_an("audit --op pool_start --json"), 0, "%s", bf_err);
  cr_expect(strstr(bf_out, "\"pool\":\"p\"") && strstr(bf_out, "\"size\":1"), "%s", bf_out);
  cr_assert_eq(bf_an("audit --op pool_acquire --sandbox %s --json", id), 0, "%s", bf_err);
  cr_expect(strstr(bf_out, "\"pool\":\"p\"") && strstr(bf_out, id), "%s", bf_out);
  cr_assert_eq(bf_an("destroy %s", id), 0);
  cr_assert_eq(bf_an("pool stop p"), 0, "%s", bf_err);
  bf_assert_nothing_left();
}

/* Occurrences of `needle` in `hay`. */
static int count_of(const char *hay, const char *needle) {
  int k = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) k++;
  return k;
}

/* A SIGKILLed keeper: `pool ls` says the pool is dead (state, pid) and
 * counts no ready sandbox (they die with their owner, the keeper);
 * `--pool-only` fails naming the pool and the cause, not "empty"; without
 * it a fresh sandbox is made with a warning; `pool stop` removes the pool
 * and leaves nothing.  (Before: ls showed READY 2 and no state, the claim
 * said "pool p is empty".) */
Test(pool, dead_keeper_is_shown_and_hands_out_nothing) {
  pid_t keeper = start_pool_kill_keeper();
  cr_assert_eq(bf_an("pool ls --json"), 0, "%s", bf_err);
  yajl_val v = yajl_tree_parse(bf_out, NULL, 0);
  cr_assert(v && YAJL_IS_ARRAY(v) && v->u.array.len == 1, "%s", bf_out);
  yajl_val p0 = v->u.array.values[0];
  cr_expect_str_eq(bf_jstr(p0, "state") ? bf_jstr(p0, "state") : "(none)", "dead", "%s", bf_out);
  cr_expect_eq(bf_jint(p0, "keeper_pid", -1), keeper, "%s", bf_out);
  cr_expect_eq(bf_jint(p0, "ready", -1), 0, "a dead keeper's pool counts ready sandboxes: %s", bf_out);
  yajl_tree_free(v);
  cr_assert_eq(bf_an("pool ls"), 0, "%s", bf_err);
  cr_expect(strstr(bf_out, "STATE") && strstr(bf_out, " dead "), "%s", bf_out);
  char pidtxt[32];
  snprintf(pidtxt, sizeof pidtxt, " %d\n", (int) keeper);
  cr_expect(strstr(bf_out, pidtxt), "no keeper pid %d: %s", (int) keeper, bf_out);

  char cause[128];
  snprintf(cause, sizeof cause, "pool p: its keeper (pid %d) is dead", (int) keeper);
  cr_expect_eq(bf_an("run --pool p --pool-only -- true"), 125, "%s", bf_err);
  cr_expect(strstr(bf_err, cause) && strstr(bf_err, "`agentnest pool stop p`") && !strstr(bf_err, "empty"),
            "%s", bf_err);
  cr_expect_eq(bf_an("create --pool p --pool-only"), 125, "%s", bf_err);
  cr_expect(strstr(bf_err, cause), "%s", bf_err);
  cr_expect_eq(bf_an("--json run --pool p -- echo hi"), 0, "%s", bf_err);
  cr_expect(strstr(bf_out, "\"pooled\": false") && strstr(bf_out, "hi"), "%s", bf_out);
  cr_expect(strstr(bf_err, "warning") && count_of(bf_err, cause) == 1, "%s", bf_err);
  /* batch --pool: said once, and every job gets a fresh sandbox */
  bf_write_text("jobs.jsonl", "{\"id\":\"a\",\"cmd\":[\"true\"]}\n");
  cr_expect_eq(bf_an("batch --pool p --results r.jsonl jobs.jsonl"), 0, "%s", bf_err);
  cr_expect(strstr(bf_err, "warning") && count_of(bf_err, cause) == 1, "%s", bf_err);
  char *text = bf_read_work("r.jsonl");
  yajl_val recs[2];
  size_t nr = bf_parse_records(text, recs, 2);
  free(text);
  cr_expect(nr == 1 && !bf_jtrue(recs[0], "pooled"), "a dead pool's batch job was pooled");
  bf_free_records(recs, nr);
  char ready[MAXIDS][16];
  size_t n = dir_ids("p/ready", ready, MAXIDS);
  cr_assert_eq(bf_an("pool stop p"), 0, "pool stop on a dead keeper: %s", bf_err);
  for (size_t i = 0; i < n; i++) cr_expect(!sandbox_exists(ready[i]), "ready sandbox %s left", ready[i]);
  char p[700];
  struct stat st;
  snprintf(p, sizeof p, "%s/pools/p", bf_root);
  cr_expect(stat(p, &st) != 0, "the pool directory is left");
  cr_expect_eq(pools_listed(), 0, "pool stop left the pool listed");
  bf_assert_nothing_left();
}

/* The number of zombie children of process `parent` (/proc/PID/stat). */
static int zombies_of(pid_t parent) {
  int n = 0;
  DIR *d = opendir("/proc");
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (de->d_name[0] < '1' || de->d_name[0] > '9') continue;
    char p[300], text[1024] = "";
    snprintf(p, sizeof p, "/proc/%s/stat", de->d_name);
    FILE *f = fopen(p, "re");
    if (!f) continue;
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = '\0';
    char *e = strrchr(text, ')');
    char state = 0;
    int ppid = 0;
    if (e && sscanf(e + 1, " %c %d", &state, &ppid) == 2 && ppid == parent && state == 'Z') n++;
  }
  if (d) closedir(d);
  return n;
}

/* Sandboxes handed out and destroyed leave no zombie behind in the keeper
 * (it is their init's parent): each was reaped only at `pool stop`, so a
 * pool that served for long filled the pid space. */
Test(pool, keeper_reaps_what_it_handed_out) {
  start_pool("p", 1, "");
  char meta[700];
  snprintf(meta, sizeof meta, "%s/pools/p/pool.json", bf_root);
  pid_t keeper = (pid_t) file_int(meta, "keeper_pid");
  cr_assert_gt(keeper, 1);
  char ready[MAXIDS][16];
  for (int i = 0; i < 3; i++) {
    cr_assert(WAIT_FOR(dir_ids("p/ready", ready, MAXIDS) == 1), "no refill");
    cr_assert_eq(bf_an("run --pool p --pool-only -- true"), 0, "run --pool: %s", bf_err);
  }
  cr_expect(WAIT_FOR(zombies_of(keeper) == 0), "%d zombies of keeper %d after 3 pooled runs",
            zombies_of(keeper), (int) keeper);
  cr_assert_eq(bf_an("pool stop p"), 0, "%s", bf_err);
}
