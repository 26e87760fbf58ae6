/* tests/integration/cli_unborn_test.c — a create killed in its first steps,
 * through the built `agentnest` ($AN_TEST_BUILD/agentnest): SIGKILL injected
 * by strace(1) right after the mkdir of the sandbox's directory (at the
 * chmod that follows it) and at the rename that puts its record in place.
 * Never a sandboxes/<id> without a record (prune took such a directory for
 * a create in progress for 60 s, and a batch's --resume never removed it:
 * batch_crash::sigkill_at_random_points... failed on it), and `prune`
 * removes what the killed create left at once, reason "create killed",
 * while a directory whose creating process lives is kept (only --all
 * removes it).  And a create's last step: from the moment the record
 * names the sandbox's init, destroy works (options.json is in place).
 * Each test has its own store under its work directory. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "cli_fixture.h"
#include "util.h"

static char store[400];

static void setup(void) {
  an_cli_setup("cliunb", 0755);
  snprintf(store, sizeof store, "%s/store", an_cli.work);
  char layout[PATH_MAX];
  an_cli_image_layout("busybox", layout, sizeof layout);
  struct stat st;
  if (stat(layout, &st) != 0) cr_skip_test("no busybox image in the cache (make images)");
  cr_assert_eq(an_cli_run_with(NULL, store, "image import '%s' --name busybox", layout), 0, "%s", an_cli.err);
  /* as a store that made sandboxes before: the first chmod of a create is
   * then the one of the sandbox's own directory */
  char sd[450];
  snprintf(sd, sizeof sd, "%s/sandboxes", store);
  cr_assert(mkdir(sd, 0711) == 0, "mkdir %s", sd);
  cr_assert_eq(access("/usr/bin/strace", X_OK), 0, "strace(1) is needed (make deps installs it)");
}

static void teardown(void) {
  an_cli_run_with(NULL, store, "prune --all");
  an_cli_teardown();
}

TestSuite(cli_unborn, .init = setup, .fini = teardown, .timeout = 120);

ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
  (void) stats;
  an_cli_remove_root("cliunb");
}

/* The entries of <store>/sandboxes, space-separated, into buf. */
static const char *entries(char *buf, size_t len) {
  char sd[450];
  snprintf(sd, sizeof sd, "%s/sandboxes", store);
  buf[0] = '\0';
  DIR *d = opendir(sd);
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
      strncat(buf, de->d_name, len - strlen(buf) - 2);
      strcat(buf, " ");
    }
  if (d) closedir(d);
  return buf;
}

/* `create` with SIGKILL injected at the n-th call of `syscall`. */
static void create_killed_at(const char *syscall, int n) {
  int st = an_test_sh("strace -f -qq -o /dev/null -e trace=%s -e inject=%s:signal=SIGKILL:when=%d "
                      "'%s' --root '%s' create --image busybox >/dev/null 2>&1",
                      syscall, syscall, n, an_cli.bin, store);
  cr_assert_eq(st, 128 + 9, "create was not killed at %s #%d: exit %d", syscall, n, st);
}

/* No <id> without a record; prune removes everything, saying `reason`. */
static void check_then_prune(const char *reason) {
  char buf[2048];
  entries(buf, sizeof buf);
  cr_assert(buf[0], "the killed create left nothing to look at");
  char sd[450], rec[800];
  snprintf(sd, sizeof sd, "%s/sandboxes", store);
  DIR *d = opendir(sd);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    snprintf(rec, sizeof rec, "%s/%s/sandbox.json", sd, de->d_name);
    cr_expect_eq(access(rec, F_OK), 0, "sandboxes/%s has no record", de->d_name);
  }
  if (d) closedir(d);
  cr_assert_eq(an_cli_run_with(NULL, store, "prune"), 0, "%s", an_cli.err);
  cr_expect(strstr(an_cli.out, reason), "prune did not say \"%s\": %s", reason, an_cli.out);
  cr_expect(strstr(an_cli.out, "\"errors\":[]"), "%s", an_cli.out);
  cr_expect_str_empty(entries(buf, sizeof buf), "left after prune: %s", buf);
}

Test(cli_unborn, killed_right_after_its_directory_was_made) {
  create_killed_at("chmod", 1);
  check_then_prune("\"reason\":\"create killed\"");
}

Test(cli_unborn, killed_while_its_first_record_was_put_in_place) {
  create_killed_at("rename", 1);
  check_then_prune("\"reason\":\"create killed\"");
}

Test(cli_unborn, killed_just_after_its_directory_got_its_name) {
  create_killed_at("chmod", 2);   /* the 0710 of the named directory */
  check_then_prune("\"reason\":\"creator dead\"");
}

/* A directory whose creating process is alive (this test's own pid and
 * start time) is a create in progress: prune keeps it, --all removes it. */
Test(cli_unborn, a_create_in_progress_is_kept_by_prune) {
  char stat_text[1024] = "";
  FILE *f = fopen("/proc/self/stat", "re");
  cr_assert_not_null(f);
  cr_assert_not_null(fgets(stat_text, sizeof stat_text, f));
  fclose(f);
  char *p = strrchr(stat_text, ')');
  cr_assert_not_null(p);
  char *save = NULL, *tok = strtok_r(p + 2, " ", &save);
  for (int field = 3; tok && field < 22; field++) tok = strtok_r(NULL, " ", &save);
  cr_assert_not_null(tok);
  char dir[600];
  snprintf(dir, sizeof dir, "%s/sandboxes/.new-0123456789ab.%d.%s", store, (int) getpid(), tok);
  cr_assert_eq(mkdir(dir, 0711), 0);
  cr_assert_eq(an_cli_run_with(NULL, store, "prune"), 0, "%s", an_cli.err);
  cr_expect_eq(access(dir, F_OK), 0, "prune removed a create in progress: %s", an_cli.out);
  cr_expect(!strstr(an_cli.out, "0123456789ab"), "%s", an_cli.out);
  cr_assert_eq(an_cli_run_with(NULL, store, "prune --all"), 0, "%s", an_cli.err);
  cr_expect_neq(access(dir, F_OK), 0, "prune --all kept %s", dir);
  cr_expect(strstr(an_cli.out, "\"id\":\"0123456789ab\",\"reason\":\"create killed\""), "%s", an_cli.out);
}

/* The init_pid of the one sandbox record in the store, 0 while there is
 * none (or its init_pid is still 0); its id into id once there is one. */
static long record_init_pid(char *id, size_t idlen) {
  char sd[450], rec[800];
  snprintf(sd, sizeof sd, "%s/sandboxes", store);
  long pid = 0;
  DIR *d = opendir(sd);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    snprintf(rec, sizeof rec, "%s/%s/sandbox.json", sd, de->d_name);
    char text[8192] = "";
    FILE *f = fopen(rec, "re");
    if (!f) continue;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    yajl_val v = yajl_tree_parse(text, NULL, 0);
    const char *path[] = {"init_pid", NULL};
    yajl_val p = v ? yajl_tree_get(v, path, yajl_t_number) : NULL;
    if (v) snprintf(id, idlen, "%s", de->d_name);
    if (p && YAJL_IS_INTEGER(p) && YAJL_GET_INTEGER(p) > 0) pid = (long) YAJL_GET_INTEGER(p);
    yajl_tree_free(v);
  }
  if (d) closedir(d);
  return pid;
}

/* A process running `create`, held by strace(1) (create alone, no -f) for
 * 0.7 s after each rename(2): the record is put in place by one. */
static pid_t create_held_at_each_rename(void) {
  char log[600];
  snprintf(log, sizeof log, "%s/create.out", an_cli.work);
  pid_t c = fork();
  cr_assert_geq(c, 0);
  if (c == 0)
    /* LeakSanitizer cannot work under ptrace: it ends an ASan build's
     * create with status 1 (make check-asan) */
    _exit(an_test_sh("ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" "
                     "strace -qq -o /dev/null -e trace=rename -e inject=rename:delay_exit=700000 "
                     "'%s' --root '%s' create --image busybox --disk 16m >'%s' 2>&1",
                     an_cli.bin, store, log));
  return c;
}

/* From the moment its record names a live init, a sandbox serves destroy:
 * create wrote options.json (which exec, destroy, fork read back) only
 * after that record, so a destroy in between failed on the missing file
 * and left the sandbox running.  strace(1) (create alone, no -f) holds
 * create for 0.7 s after each rename(2): the record is put in place by
 * one. */
Test(cli_unborn, destroy_as_soon_as_the_record_names_its_init) {
  pid_t c = create_held_at_each_rename();
  char id[300] = "";
  long pid = 0;
  for (int i = 0; i < 30000 && !(pid = record_init_pid(id, sizeof id)); i++) usleep(1000);
  cr_assert_gt(pid, 0, "no record named an init in 30 s");
  int r = an_cli_run_with(NULL, store, "destroy %s", id);
  int ws = 0;
  while (waitpid(c, &ws, 0) < 0 && errno == EINTR) {}
  cr_expect_eq(r, 0, "destroy %s right after its record named init %ld: exit %d: %s", id, pid, r, an_cli.err);
  cr_expect(!strstr(an_cli.err, "options.json"), "%s", an_cli.err);
  char buf[2048];
  cr_expect(r != 0 || !entries(buf, sizeof buf)[0], "destroy left: %s", buf);
}

/* Between the record's rename into place and the one that names pid 1,
 * the sandbox is "creating" for ls, and exec refuses it as being created
 * (125); `ls` called it "dead" and exec said "is dead ... destroy it"
 * while its create was at work.  Once create has printed the id, exec
 * runs.  strace(1) holds create 0.7 s after each rename(2). */
Test(cli_unborn, a_sandbox_whose_create_is_at_work_is_creating) {
  pid_t c = create_held_at_each_rename();
  char id[300] = "";
  long pid = 0;
  for (int i = 0; i < 30000 && !id[0]; i++) {
    pid = record_init_pid(id, sizeof id);
    if (!id[0]) usleep(1000);
  }
  cr_assert(id[0], "no record in 30 s");
  cr_assert_eq(pid, 0, "the first record already names init %ld", pid);
  int ls = an_cli_run_with(NULL, store, "ls --json");
  char want[400];
  snprintf(want, sizeof want, "\"id\":\"%s\"", id);
  cr_expect(ls == 0 && strstr(an_cli.out, want) && strstr(an_cli.out, "\"status\":\"creating\""),
            "ls during create: %d %s %s", ls, an_cli.out, an_cli.err);
  int ex = an_cli_run_with(NULL, store, "exec %s -- true", id);
  cr_expect(ex == 125 && strstr(an_cli.err, "is being created"), "exec during create: %d %s", ex, an_cli.err);
  int ws = 0;
  while (waitpid(c, &ws, 0) < 0 && errno == EINTR) {}
  char log[600];
  snprintf(log, sizeof log, "%s/create.out", an_cli.work);
  char *out = an_test_read_file(log, NULL);
  cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "create: %#x: %s", ws, out ? out : "");
  free(out);
  cr_expect_eq(an_cli_run_with(NULL, store, "exec %s -- true", id), 0, "exec after create: %s", an_cli.err);
  cr_expect_eq(an_cli_run_with(NULL, store, "destroy %s", id), 0, "%s", an_cli.err);
}
