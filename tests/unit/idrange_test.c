/* Unit tests for the host id range allocator (an_idrange_alloc/free). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "agentnest/sandbox.h"
#include "agentnest/sandbox_opts.h"
#include "ctx_fixture.h"

static char dir[256], state[300];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/an-idrange-test-%d", (int) getpid());
  snprintf(state, sizeof state, "%s/state", dir);
  cr_assert_eq(mkdir(dir, 0700), 0);
}

static void teardown(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  (void) !system(cmd);
}

TestSuite(idrange, .init = setup, .fini = teardown);

static const char *write_file(const char *name, const char *text) {
  static char paths[8][400];
  static int next;
  char *p = paths[next++ % 8];
  snprintf(p, 400, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  return p;
}

/* A config confined to `slots` slots from 0x10000000, with empty host id
 * files and a full uid/gid map unless given. */
static struct an_idrange_config small_config(uint32_t slots) {
  const char *empty = write_file("empty", "");
  const char *map = write_file("map", "0 0 4294967295\n");
  return (struct an_idrange_config){.base = 0x10000000u, .slots = slots, .passwd = empty,
                                    .group = empty, .subuid = empty, .subgid = empty,
                                    .uid_map = map, .gid_map = map};
}

Test(idrange, two_allocations_differ_and_are_reserved_by_files) {
  struct an_sandbox_ids a = {0}, b = {0};
  an_error_t err = NULL;
  cr_assert_eq(an_idrange_alloc(state, NULL, &a, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(an_idrange_alloc(state, NULL, &b, &err), 0, "%s", err ? err->msg : "");
  cr_assert_neq(a.host_uid_base, b.host_uid_base);
  cr_assert_eq(a.size, 65536);
  cr_assert_eq(b.size, 65536);
  cr_assert_eq(a.host_uid_base % 65536, 0);
  cr_assert_geq(a.host_uid_base, AN_IDRANGE_BASE);
  cr_assert_lt(a.host_uid_base, AN_IDRANGE_BASE + AN_IDRANGE_SLOTS * 65536u);
  char path[400];
  snprintf(path, sizeof path, "%s/idranges/%u.lock", state, a.host_uid_base);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "no lock file %s", path);
  int pid = 0;
  cr_assert_eq(fscanf(f, "%d", &pid), 1);
  cr_assert_eq(pid, getpid(), "lock file does not name the allocating pid");
  fclose(f);
  struct stat st;
  cr_assert_eq(stat(state, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0700);
  cr_assert_eq(an_idrange_free(state, &a, &err), 0);
  cr_assert_eq(an_idrange_free(state, &b, &err), 0);
  cr_assert_neq(access(path, F_OK), 0, "lock file left after free");
}

Test(idrange, exhausted_then_free_then_realloc_gets_the_range_back) {
  struct an_idrange_config c = small_config(1);
  struct an_sandbox_ids a = {0}, b = {0};
  an_error_t err = NULL;
  cr_assert_eq(an_idrange_alloc_config(state, &c, NULL, &a, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(a.host_uid_base, 0x10000000u);
  cr_assert_eq(an_idrange_alloc_config(state, &c, NULL, &b, &err), -ENOSPC);
  cr_assert(strstr(err->msg, "all 1 ranges of 65536 ids from 268435456 are taken"), "%s", err->msg);
  an_error_free(&err);
  cr_assert_eq(an_idrange_free(state, &a, &err), 0);
  cr_assert_eq(an_idrange_alloc_config(state, &c, NULL, &b, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(b.host_uid_base, 0x10000000u);
  cr_assert_eq(an_idrange_free(state, &b, &err), 0);
}

Test(idrange, ranges_avoid_subuid_subgid_users_and_groups) {
  struct an_idrange_config c = small_config(5);
  /* slot 0 and 1: a subuid range spanning both; slot 2: a subgid range;
   * slot 3: a user's uid; slot 4 is the only free one. */
  c.subuid = write_file("subuid", "alice:268435456:100000\n#junk\n\n");
  c.subgid = write_file("subgid", "bob:268566528:1\n");
  c.passwd = write_file("passwd", "root:x:0:0::/root:/bin/sh\nweird:x:268632064:1::/:/bin/sh\n");
  c.group = write_file("group", "root:x:0:\n");
  struct an_sandbox_ids a = {0}, b = {0};
  an_error_t err = NULL;
  cr_assert_eq(an_idrange_alloc_config(state, &c, NULL, &a, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(a.host_uid_base, 0x10000000u + 4 * 65536u);
  cr_assert_eq(an_idrange_alloc_config(state, &c, NULL, &b, &err), -ENOSPC);
  an_error_free(&err);
  cr_assert_eq(an_idrange_free(state, &a, &err), 0);
}

Test(idrange, group_ids_are_avoided_too) {
  struct an_idrange_config c = small_config(2);
  c.group = write_file("group", "big:x:268435457:\n");
  struct an_sandbox_ids a = {0};
  an_error_t err = NULL;
  cr_assert_eq(an_idrange_alloc_config(state, &c, NULL, &a, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(a.host_uid_base, 0x10010000u);
  cr_assert_eq(an_idrange_free(state, &a, &err), 0);
}

Test(idrange, ranges_stay_inside_our_own_uid_and_gid_map) {
  struct an_idrange_config c = small_config(2);
  /* uid_map covers slot 0 fully and slot 1 only partly; gid_map both. */
  c.uid_map = write_file("uid_map", "0 0 268435456\n268435456 1000000 100000\n");
  struct an_sandbox_ids a = {0}, b = {0};
  an_error_t err = NULL;
  cr_assert_eq(an_idrange_alloc_config(state, &c, NULL, &a, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(a.host_uid_base, 0x10000000u);
  cr_assert_eq(an_idrange_alloc_config(state, &c, NULL, &b, &err), -ENOSPC);
  an_error_free(&err);
  cr_assert_eq(an_idrange_free(state, &a, &err), 0);
}

/* Every range the real allocator hands out on this host is clear of the real
 * /etc/subuid, /etc/subgid, passwd and group entries. */
Test(idrange, real_allocation_avoids_this_hosts_subordinate_ids_and_users) {
  struct an_sandbox_ids a = {0};
  an_error_t err = NULL;
  cr_assert_eq(an_idrange_alloc(state, NULL, &a, &err), 0, "%s", err ? err->msg : "");
  uint64_t lo = a.host_uid_base, hi = lo + a.size;
  const char *files[] = {"/etc/subuid", "/etc/subgid", "/etc/passwd", "/etc/group"};
  for (int i = 0; i < 4; i++) {
    FILE *f = fopen(files[i], "r");
    if (!f) continue;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
      char *f1 = strchr(line, ':'), *f2 = f1 ? strchr(f1 + 1, ':') : NULL;
      if (!f2) continue;
      unsigned long long start, count = 1;
      if (i < 2) {
        if (sscanf(f1 + 1, "%llu:%llu", &start, &count) != 2) continue;
      } else if (sscanf(f2 + 1, "%llu", &start) != 1)
        continue;
      cr_assert(start + count <= lo || start >= hi, "%s line %s overlaps %llu..%llu", files[i],
                line, (unsigned long long) lo, (unsigned long long) hi);
    }
    fclose(f);
  }
  cr_assert_eq(an_idrange_free(state, &a, &err), 0);
}

Test(idrange, free_refuses_foreign_or_unreserved_ranges) {
  an_error_t err = NULL;
  struct an_sandbox_ids odd = {0x10000001u, 65536}, small = {0x10000000u, 10}, free_one = {0x10000000u, 65536};
  cr_assert_eq(an_idrange_free(state, &odd, &err), -EINVAL);
  an_error_free(&err);
  cr_assert_eq(an_idrange_free(state, &small, &err), -EINVAL);
  an_error_free(&err);
  cr_assert_eq(an_idrange_free(state, &free_one, &err), -ENOENT);
  cr_assert(strstr(err->msg, "idranges/268435456.lock"), "%s", err->msg);
  an_error_free(&err);
}

Test(idrange, bad_config_is_einval) {
  struct an_idrange_config c = small_config(1);
  c.base = 12345;
  struct an_sandbox_ids a = {0};
  an_error_t err = NULL;
  cr_assert_eq(an_idrange_alloc_config(state, &c, NULL, &a, &err), -EINVAL);
  an_error_free(&err);
  c.base = 0xffff0000u;
  c.slots = 2;
  cr_assert_eq(an_idrange_alloc_config(state, &c, NULL, &a, &err), -EINVAL);
  an_error_free(&err);
  cr_assert_eq(a.host_uid_base, 0);
}

Test(idrange, list_shows_reservations_with_their_pid_for_prune) {
  an_error_t err = NULL;
  struct an_idrange_reservation *list = NULL;
  size_t n = 99;
  cr_assert_eq(an_idrange_list(state, &list, &n, &err), 0, "missing dir: %s", err ? err->msg : "");
  cr_assert_eq(n, 0);
  struct an_idrange_config c = small_config(3);
  struct an_sandbox_ids a = {0}, b = {0};
  cr_assert_eq(an_idrange_alloc_config(state, &c, NULL, &a, &err), 0);
  cr_assert_eq(an_idrange_alloc_config(state, &c, NULL, &b, &err), 0);
  char junk[400];
  snprintf(junk, sizeof junk, "%s/idranges/notes.txt", state);
  FILE *f = fopen(junk, "w");
  fclose(f);
  cr_assert_eq(an_idrange_list(state, &list, &n, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(n, 2);
  bool seen_a = false, seen_b = false;
  for (size_t i = 0; i < n; i++) {
    cr_assert_eq(list[i].pid, getpid());
    cr_assert_eq(list[i].ids.size, 65536);
    seen_a |= list[i].ids.host_uid_base == a.host_uid_base;
    seen_b |= list[i].ids.host_uid_base == b.host_uid_base;
  }
  cr_assert(seen_a && seen_b);
  an_idrange_list_free(list, n);
  cr_assert_eq(an_idrange_free(state, &a, &err), 0);
  cr_assert_eq(an_idrange_list(state, &list, &n, &err), 0);
  cr_assert_eq(n, 1);
  cr_assert_eq(list[0].ids.host_uid_base, b.host_uid_base);
  an_idrange_list_free(list, n);
  cr_assert_eq(an_idrange_free(state, &b, &err), 0);
}

/* Host uids are machine-wide, so reservations are too: two store roots
 * share one reservation root, and prune of one store releases only a range
 * whose allocator and owner are both gone — never another store's live
 * sandbox's range (its state directory, the owner, exists). */
Test(idrange, prune_of_one_store_keeps_another_stores_live_range) {
  char shared[400], store_a[400], owner_b[400], gone[400];
  snprintf(shared, sizeof shared, "%s/shared", dir);
  snprintf(store_a, sizeof store_a, "%s/store-a", dir);
  snprintf(owner_b, sizeof owner_b, "%s/store-b-sandbox", dir);
  snprintf(gone, sizeof gone, "%s/removed-sandbox", dir);
  cr_assert_eq(mkdir(store_a, 0700), 0);
  cr_assert_eq(mkdir(owner_b, 0700), 0);
  /* the library reads no AGENTNEST_IDRANGE_ROOT: the context's root decides */
  setenv("AGENTNEST_IDRANGE_ROOT", "/nonexistent/bogus-idranges", 1);
  cr_assert_str_eq(an_idrange_root(), AN_IDRANGE_ROOT_DEFAULT);
  struct an_ctx *ctx = NULL;
  an_error_t cerr = NULL;
  cr_assert_eq(an_ctx_new(&(struct an_ctx_config){.idrange_root = shared}, &ctx, &cerr), 0);
  cr_assert_str_eq(an_ctx_idrange_root(ctx), shared);
  struct an_idrange_config c = small_config(2);
  /* reserve from a process that then exits, as the creating CLI does */
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child == 0) {
    struct an_sandbox_ids x = {0};
    an_error_t e = NULL;
    int r1 = an_idrange_alloc_config(shared, &c, owner_b, &x, &e);
    int r2 = an_idrange_alloc_config(shared, &c, gone, &x, &e);
    _exit(r1 == 0 && r2 == 0 ? 0 : 1);
  }
  int status = -1;
  cr_assert_eq(waitpid(child, &status, 0), child);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  struct an_idrange_reservation *list = NULL;
  size_t n = 0;
  an_error_t err = NULL;
  cr_assert_eq(an_idrange_list(shared, &list, &n, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(n, 2);
  uint32_t live_base = 0;
  for (size_t i = 0; i < n; i++) {
    cr_assert_eq(list[i].pid, child);
    cr_assert_not_null(list[i].owner);
    bool is_live = !strcmp(list[i].owner, owner_b);
    cr_assert(is_live || !strcmp(list[i].owner, gone), "owner %s", list[i].owner);
    cr_assert_eq(an_idrange_stale(&list[i]), !is_live, "%s", list[i].owner);
    if (is_live) live_base = list[i].ids.host_uid_base;
  }
  an_idrange_list_free(list, n);

  char *report = NULL;
  cr_assert_eq(an_sandbox_prune_ctx(ctx, store_a, false, &report, &err), 0, "%s", err ? err->msg : "");
  free(report);
  cr_assert_eq(an_idrange_list(shared, &list, &n, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(n, 1, "prune left %zu reservations", n);
  cr_assert_eq(list[0].ids.host_uid_base, live_base);
  cr_assert_str_eq(list[0].owner, owner_b);
  cr_assert_eq(an_idrange_free(shared, &list[0].ids, &err), 0);
  an_idrange_list_free(list, n);
  an_ctx_free(ctx);
  unsetenv("AGENTNEST_IDRANGE_ROOT");
}

/* DESIGN.md: 5,000 idle sandboxes alive at once.  Each holds one range, so
 * the default slots (base and slot count left 0) must hand out 5,000
 * distinct ranges; with 4096 slots the 4097th create failed with ENOSPC. */
Test(idrange, default_slots_hold_5000_sandboxes, .timeout = 120) {
  struct an_idrange_config c = small_config(0);
  c.base = 0;
  enum { N = 5000 };
  static struct an_sandbox_ids got[N];
  an_error_t err = NULL;
  for (int i = 0; i < N; i++)
    cr_assert_eq(an_idrange_alloc_config(state, &c, NULL, &got[i], &err), 0, "range %d: %s", i + 1,
                 err ? err->msg : "");
  char path[400];
  for (int i = 0; i < N; i++) {
    cr_assert_eq(got[i].size, 65536);
    cr_assert_geq(got[i].host_uid_base, AN_IDRANGE_BASE);
    cr_assert_leq((uint64_t) got[i].host_uid_base + 65536, (uint64_t) AN_IDRANGE_BASE + AN_IDRANGE_SLOTS * 65536ull);
    snprintf(path, sizeof path, "%s/idranges/%u.lock", state, got[i].host_uid_base);
    cr_assert_eq(access(path, F_OK), 0, "range %d: no lock file %s", i + 1, path);
  }
  struct an_idrange_reservation *list = NULL;
  size_t n = 0;
  cr_assert_eq(an_idrange_list(state, &list, &n, &err), 0);
  cr_assert_eq(n, (size_t) N, "%zu distinct reservations for %d allocations", n, N);
  an_idrange_list_free(list, n);
  for (int i = 0; i < N; i++) cr_assert_eq(an_idrange_free(state, &got[i], &err), 0);
}

/* s4-red: an_idrange_alloc creates the reservation (O_EXCL) and writes its
 * pid and owner next; a prune listing it in between saw an empty file, no
 * pid and no owner, called it stale and removed it, so another create (of
 * any store) could get the same host uids as the create in progress.  An
 * empty reservation is kept while young (and goes once old: a create
 * killed between the two steps). */
Test(idrange, an_empty_reservation_is_stale_only_once_old) {
  char idr[400], young[500], old[500];
  snprintf(idr, sizeof idr, "%s/idranges", state);
  cr_assert_eq(mkdir(state, 0700), 0);
  cr_assert_eq(mkdir(idr, 0700), 0);
  snprintf(young, sizeof young, "%s/%u.lock", idr, 0x10000000u);
  snprintf(old, sizeof old, "%s/%u.lock", idr, 0x10010000u);
  FILE *f = fopen(young, "wx");
  cr_assert_not_null(f);
  fclose(f);
  cr_assert_not_null((f = fopen(old, "wx")));
  fclose(f);
  const struct timespec hour_ago[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
  cr_assert_eq(utimensat(AT_FDCWD, old, hour_ago, 0), 0);
  struct an_idrange_reservation *res = NULL;
  size_t n = 0;
  an_error_t err = NULL;
  cr_assert_eq(an_idrange_list(state, &res, &n, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(n, 2);
  for (size_t i = 0; i < n; i++) {
    if (res[i].ids.host_uid_base == 0x10000000u)
      cr_expect(!an_idrange_stale(&res[i]), "a reservation being written (empty, just made) counts as stale");
    else
      cr_expect(an_idrange_stale(&res[i]), "an empty reservation an hour old is kept for ever");
  }
  an_idrange_list_free(res, n);
}
