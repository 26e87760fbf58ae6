/* tests/integration/audit_test.c — the per-store audit log and approval
 * hooks on the real kernel (agentnest/audit.h, agentnest/approval.h):
 * records of every operation with their members, secret values never in
 * the log or in a hook's request, rotation, whole lines from concurrent
 * appending processes, and approval allow / deny with reason / timeout /
 * garbage / crash (all deny, fail closed), checked from a second CLI and
 * after fork, out of reach of the sandbox.
 *
 * Each test has its own store /tmp/an-audit-<pid> (the audit log is per
 * store) with the busybox image imported from the `make images` cache
 * (tests that need a sandbox skip without it); hooks are shell scripts
 * written into the store.  Run as root from the worktree root. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "agentnest.h"
#include "agentnest/approval.h"
#include "agentnest/audit.h"
#include "agentnest/sandbox.h"
#include "rm_tree.h"
#include "util.h"

#define CACHE "/var/cache/agentnest/images"
#define SECRET "Zq9-audit-secret-4711"

static char g_root[128];
static char g_bin[PATH_MAX];
static char g_log[PATH_MAX + 32];

static void setup(void) {
  const char *bdir = getenv("AN_TEST_BUILD"), *sdir = getenv("AN_TEST_SRC");
  char p[PATH_MAX], q[PATH_MAX + 32];
  snprintf(q, sizeof q, "%s/agentnest-init", bdir && *bdir ? bdir : "build");
  if (realpath(q, p)) setenv("AGENTNEST_INIT", p, 1);
  snprintf(q, sizeof q, "%s/agentnest", bdir && *bdir ? bdir : "build");
  if (!realpath(q, g_bin)) g_bin[0] = 0;
  snprintf(q, sizeof q, "%s/profiles", sdir && *sdir ? sdir : ".");
  if (realpath(q, p)) setenv("AGENTNEST_PROFILES", p, 1);
  snprintf(g_root, sizeof g_root, "/tmp/an-audit-%d", (int) getpid());
  an_test_rm_tree(g_root);
  cr_assert(mkdir(g_root, 0711) == 0, "mkdir %s: %s", g_root, strerror(errno));
  snprintf(g_log, sizeof g_log, "%s/audit/audit.jsonl", g_root);
}

static void teardown(void) {
  an_test_store_remove(g_root);
}

TestSuite(audit, .init = setup, .fini = teardown, .timeout = 240);
TestSuite(approval, .init = setup, .fini = teardown, .timeout = 240);

static void need_image(void) {
  if (access(CACHE "/busybox/layout", F_OK) != 0) cr_skip_test("image cache absent: run `make images`");
  if (!g_bin[0]) cr_skip_test("agentnest not built");
  an_error_t err = NULL;
  cr_assert(an_image_import(g_root, CACHE "/busybox/layout", "busybox", NULL, NULL, &err) == 0,
            "import busybox: %s", err ? err->msg : "");
}

/* ---- reading the log ---------------------------------------------------------------------- */

struct recs {
  yajl_val v[4096];
  size_t n;
};

static int collect(void *data, const char *json) {
  struct recs *r = data;
  char e[256] = "";
  yajl_val v = yajl_tree_parse(json, e, sizeof e);
  cr_assert_not_null(v, "record not JSON (%s): %s", e, json);
  cr_assert(r->n < 4096);
  r->v[r->n++] = v;
  return 0;
}

static void read_all(struct recs *r, const struct an_audit_filter *f) {
  r->n = 0;
  an_error_t err = NULL;
  cr_assert(an_audit_read(g_root, f, collect, r, &err) == 0, "read: %s", err ? err->msg : "");
}

static void recs_free(struct recs *r) {
  for (size_t i = 0; i < r->n; i++) yajl_tree_free(r->v[i]);
  r->n = 0;
}

static yajl_val member(yajl_val v, const char *k) {
  const char *path[] = {k, NULL};
  return yajl_tree_get(v, path, yajl_t_any);
}

static const char *mstr(yajl_val v, const char *k) {
  yajl_val m = member(v, k);
  return m && YAJL_IS_STRING(m) ? m->u.string : NULL;
}

/* The first record of `op` (and of `operation`, for approvals, when not
 * NULL) at or after index *from; NULL if none. */
static yajl_val find_op(struct recs *r, const char *op, const char *operation) {
  for (size_t i = 0; i < r->n; i++) {
    const char *o = mstr(r->v[i], "op");
    if (!o || strcmp(o, op)) continue;
    if (operation && (!mstr(r->v[i], "operation") || strcmp(mstr(r->v[i], "operation"), operation))) continue;
    return r->v[i];
  }
  return NULL;
}

static bool strv_has(yajl_val arr, const char *s) {
  if (!arr || !YAJL_IS_ARRAY(arr)) return false;
  for (size_t i = 0; i < arr->u.array.len; i++)
    if (YAJL_IS_STRING(arr->u.array.values[i]) && strstr(arr->u.array.values[i]->u.string, s)) return true;
  return false;
}

static bool file_contains(const char *path, const char *needle) {
  size_t len = 0;
  char *t = an_test_read_file(path, &len);
  if (!t) return false;
  bool found = memmem(t, len, needle, strlen(needle)) != NULL;
  free(t);
  return found;
}

/* ---- the CLI -------------------------------------------------------------------------------- */

static char g_out[65536], g_err[65536];

static int cli(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int cli(const char *fmt, ...) {
  char *args = NULL, *cmd = NULL;
  va_list ap;
  va_start(ap, fmt);
  cr_assert(vasprintf(&args, fmt, ap) >= 0);
  va_end(ap);
  cr_assert(asprintf(&cmd, "'%s' --root '%s' %s >'%s/out' 2>'%s/err'", g_bin, g_root, args, g_root,
                     g_root) >= 0);
  int st = system(cmd);
  free(args);
  free(cmd);
  char p[PATH_MAX + 8];
  snprintf(p, sizeof p, "%s/out", g_root);
  char *t = an_test_read_file(p, NULL);
  snprintf(g_out, sizeof g_out, "%s", t ? t : "");
  free(t);
  snprintf(p, sizeof p, "%s/err", g_root);
  t = an_test_read_file(p, NULL);
  snprintf(g_err, sizeof g_err, "%s", t ? t : "");
  free(t);
  cr_assert(WIFEXITED(st));
  return WEXITSTATUS(st);
}

/* Write the hook script `name` in the store; returns its path (static). */
static const char *hook(const char *name, const char *body) {
  static char path[4][256];
  static int k;
  char *p = path[k++ % 4];
  snprintf(p, 256, "%s/%.64s", g_root, name);
  char *text = NULL;
  cr_assert(asprintf(&text, "#!/bin/sh\n%s\n", body) >= 0);
  an_test_write_file(p, text, strlen(text), 0755);
  free(text);
  return p;
}

static void chomp(char *s) {
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == ' ')) s[--n] = 0;
}

/* ---- the log itself ---------------------------------------------------------------------------- */

Test(audit, record_has_time_op_sandbox_caller_and_fields) {
  char *argv[] = {"sh", "-c", "echo hi", NULL};
  char *env[] = {"DEBUG=1", "TOKEN=" SECRET, NULL};
  struct an_secret sec[] = {{"TOKEN", SECRET}};
  an_error_t err = NULL;
  cr_assert(an_audit_record(g_root, "exec", "0123456789ab", &err, AN_AUDIT_STRV("argv", argv),
                            AN_AUDIT_ENV_NAMES("env", env), AN_AUDIT_INT("status", 3),
                            AN_AUDIT_BOOL("timed_out", false), AN_AUDIT_STR("note", "x " SECRET " y"),
                            AN_AUDIT_SECRETS(sec, 1), AN_AUDIT_END) == 0,
            "record: %s", err ? err->msg : "");
  struct recs r;
  read_all(&r, NULL);
  cr_assert_eq(r.n, 1);
  yajl_val v = r.v[0];
  cr_expect_str_eq(mstr(v, "op"), "exec");
  cr_expect_str_eq(mstr(v, "sandbox"), "0123456789ab");
  const char *t = mstr(v, "time");
  cr_assert_not_null(t);
  cr_expect(strlen(t) == 24 && t[10] == 'T' && t[23] == 'Z', "time %s is not RFC 3339 UTC with ms", t);
  yajl_val caller = member(v, "caller");
  cr_assert(caller && YAJL_IS_OBJECT(caller));
  const char *pid_path[] = {"pid", NULL}, *uid_path[] = {"uid", NULL};
  cr_expect_eq(YAJL_GET_INTEGER(yajl_tree_get(caller, pid_path, yajl_t_number)), getpid());
  cr_expect_eq(YAJL_GET_INTEGER(yajl_tree_get(caller, uid_path, yajl_t_number)), (long long) getuid());
  cr_expect(strv_has(member(v, "argv"), "echo hi"));
  yajl_val ev = member(v, "env");
  cr_assert(ev && YAJL_IS_ARRAY(ev) && ev->u.array.len == 2);
  cr_expect_str_eq(ev->u.array.values[0]->u.string, "DEBUG", "env holds names only");
  cr_expect_str_eq(ev->u.array.values[1]->u.string, "TOKEN");
  cr_expect_eq(YAJL_GET_INTEGER(member(v, "status")), 3);
  cr_expect(YAJL_IS_FALSE(member(v, "timed_out")));
  cr_expect(strstr(mstr(v, "note"), "[REDACTED:TOKEN]"), "note: %s", mstr(v, "note"));
  recs_free(&r);
  cr_expect(!file_contains(g_log, SECRET), "the secret value is in %s", g_log);
  cr_expect(!file_contains(g_log, "DEBUG=1"), "an env value is in %s", g_log);
  struct stat st;
  cr_assert(stat(g_log, &st) == 0);
  cr_expect_eq(st.st_mode & 07777, 0600, "audit.jsonl mode %o", st.st_mode & 07777);
  char dir[PATH_MAX + 8];
  snprintf(dir, sizeof dir, "%s/audit", g_root);
  cr_assert(stat(dir, &st) == 0);
  cr_expect_eq(st.st_mode & 07777, 0700, "audit/ mode %o", st.st_mode & 07777);
}

Test(audit, reserved_keys_and_bad_ops_are_refused) {
  an_error_t err = NULL;
  cr_expect(an_audit_record(g_root, "exec", NULL, &err, AN_AUDIT_STR("op", "x"), AN_AUDIT_END) == -EINVAL);
  an_error_free(&err);
  cr_expect(an_audit_record(g_root, "Exec!", NULL, &err, AN_AUDIT_END) == -EINVAL);
  an_error_free(&err);
  struct recs r;
  read_all(&r, NULL);
  cr_expect_eq(r.n, 0, "a refused record was written");
}

Test(audit, rotation_keeps_the_configured_files_and_reads_across_them) {
  an_error_t err = NULL;
  cr_assert(an_audit_configure(g_root, 4096, 3, &err) == 0, "%s", err ? err->msg : "");
  char pad[300];
  memset(pad, 'p', sizeof pad - 1);
  pad[sizeof pad - 1] = 0;
  for (int i = 0; i < 200; i++)
    cr_assert(an_audit_record(g_root, "exec", NULL, &err, AN_AUDIT_INT("seq", i), AN_AUDIT_STR("pad", pad),
                              AN_AUDIT_END) == 0, "%s", err ? err->msg : "");
  char p[PATH_MAX + 64];
  struct stat st;
  for (int i = 1; i <= 3; i++) {
    snprintf(p, sizeof p, "%s.%d", g_log, i);
    cr_assert(stat(p, &st) == 0, "%s missing", p);
    cr_expect_leq(st.st_size, 4096, "%s has %lld bytes", p, (long long) st.st_size);
    cr_expect_eq(st.st_mode & 07777, 0600);
  }
  snprintf(p, sizeof p, "%s.4", g_log);
  cr_expect(stat(p, &st) != 0, "%s kept beyond keep=3", p);
  struct recs r;
  read_all(&r, NULL);
  /* oldest first, consecutive, ending with the last record written */
  cr_assert_gt(r.n, 10);
  for (size_t i = 0; i < r.n; i++)
    cr_expect_eq(YAJL_GET_INTEGER(member(r.v[i], "seq")), 200 - (long long) r.n + (long long) i);
  recs_free(&r);
  uint64_t mb = 0;
  unsigned keep = 0;
  cr_assert(an_audit_config(g_root, &mb, &keep, &err) == 0);
  cr_expect(mb == 4096 && keep == 3);
  cr_expect(an_audit_configure(g_root, 10, 3, &err) == -EINVAL);
  an_error_free(&err);
}

Test(audit, concurrent_appending_processes_write_only_whole_lines) {
  an_error_t err = NULL;
  /* lines well over PIPE_BUF, and rotation while they are written */
  cr_assert(an_audit_configure(g_root, 256 << 10, 40, &err) == 0);
  enum { PROCS = 6, EACH = 150 };
  char *pad = malloc(6000);
  memset(pad, 'q', 5999);
  pad[5999] = 0;
  pid_t kids[PROCS];
  for (int k = 0; k < PROCS; k++) {
    kids[k] = fork();
    cr_assert(kids[k] >= 0);
    if (kids[k] == 0) {
      for (int i = 0; i < EACH; i++) {
        an_error_t e = NULL;
        if (an_audit_record(g_root, "exec", NULL, &e, AN_AUDIT_INT("writer", k), AN_AUDIT_INT("seq", i),
                            AN_AUDIT_STR("pad", pad), AN_AUDIT_END) < 0)
          _exit(1);
      }
      _exit(0);
    }
  }
  for (int k = 0; k < PROCS; k++) {
    int st = 0;
    cr_assert(waitpid(kids[k], &st, 0) == kids[k]);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer %d failed", k);
  }
  /* every line of every file is one whole record */
  int per[PROCS] = {0};
  size_t total = 0;
  for (int i = 0; i <= 40; i++) {
    char p[PATH_MAX + 64];
    if (i) snprintf(p, sizeof p, "%s.%d", g_log, i);
    else snprintf(p, sizeof p, "%s", g_log);
    size_t len = 0;
    char *t = an_test_read_file(p, &len);
    if (!t) continue;
    cr_expect(len == 0 || t[len - 1] == '\n', "%s does not end in a newline", p);
    for (char *line = t, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
      *nl = 0;
      char e[128] = "";
      yajl_val v = yajl_tree_parse(line, e, sizeof e);
      cr_assert_not_null(v, "%s: a line is not one JSON record (%s): %.80s", p, e, line);
      long long w = YAJL_GET_INTEGER(member(v, "writer"));
      cr_assert(w >= 0 && w < PROCS);
      cr_expect_eq(strlen(mstr(v, "pad")), 5999, "a record lost bytes");
      per[w]++;
      total++;
      yajl_tree_free(v);
    }
    free(t);
  }
  cr_expect_eq(total, PROCS * EACH, "%zu records for %d written", total, PROCS * EACH);
  for (int k = 0; k < PROCS; k++) cr_expect_eq(per[k], EACH, "writer %d: %d records", k, per[k]);
  free(pad);
}

Test(audit, since_accepts_rfc3339_dates_and_durations) {
  uint64_t ms = 0;
  an_error_t err = NULL;
  cr_assert(an_audit_parse_since("2026-12-01T12:00:00.250Z", 0, &ms, &err) == 0);
  cr_expect_eq(ms, 1796126400250ull);
  cr_assert(an_audit_parse_since("2026-12-01", 0, &ms, &err) == 0);
  cr_expect_eq(ms, 1796083200000ull);
  cr_assert(an_audit_parse_since("10m", 1000000000, &ms, &err) == 0);
  cr_expect_eq(ms, 1000000000 - 600000);
  cr_expect(an_audit_parse_since("yesterday", 0, &ms, &err) == -EINVAL);
  an_error_free(&err);
  /* the filter: a record of the past is left out */
  cr_assert(an_audit_record(g_root, "exec", "aaaaaaaaaaaa", &err, AN_AUDIT_END) == 0);
  cr_assert(an_audit_record(g_root, "destroy", "bbbbbbbbbbbb", &err, AN_AUDIT_END) == 0);
  struct recs r;
  struct an_audit_filter f = {.since_ms = 4102444800000ull};   /* 2100-01-01 */
  read_all(&r, &f);
  cr_expect_eq(r.n, 0);
  f = (struct an_audit_filter){.sandbox = "bbbbbbbbbbbb"};
  read_all(&r, &f);
  cr_expect_eq(r.n, 1);
  recs_free(&r);
  f = (struct an_audit_filter){.op = "exec"};
  read_all(&r, &f);
  cr_expect_eq(r.n, 1);
  recs_free(&r);
}

/* ---- the operations ------------------------------------------------------------------------ */

static struct an_sandbox_opts *opts_busybox(void) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_new(&o, &err) == 0);
  cr_assert(an_sandbox_opts_set_image(o, "busybox", &err) == 0);
  return o;
}

Test(audit, every_operation_is_recorded_without_secret_values) {
  need_image();
  struct an_sandbox_opts *o = opts_busybox();
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_add_secret(o, "TOKEN", SECRET, &err) == 0);
  cr_assert(an_sandbox_opts_add_env(o, "PLAIN=plainvalue42", &err) == 0);
  struct an_sandbox *sb = NULL;
  cr_assert(an_sandbox_create(g_root, o, &sb, &err) == 0, "create: %s", err ? err->msg : "");
  an_sandbox_opts_free(o);
  char id[32];
  snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
  char *argv[] = {"sh", "-c", "echo " SECRET " $TOKEN", NULL};
  char *env[] = {"EXTRA=" SECRET, NULL};
  struct an_exec_opts eo = {.env = env};
  struct an_exec_result res;
  cr_assert(an_sandbox_exec(sb, argv, &eo, &res, &err) == 0, "exec: %s", err ? err->msg : "");
  an_exec_result_release(&res);
  cr_assert(an_sandbox_put_data(sb, "f.txt", "data", 4, 0644, &err) == 0);
  void *data = NULL;
  size_t len = 0;
  cr_assert(an_sandbox_get_data(sb, "f.txt", &data, &len, &err) == 0);
  free(data);
  char tar[PATH_MAX + 16];
  snprintf(tar, sizeof tar, "%s/snap.tar", g_root);
  struct an_snapshot_info info;
  cr_assert(an_sandbox_snapshot(sb, tar, &info, &err) == 0, "snapshot: %s", err ? err->msg : "");
  cr_assert(an_sandbox_restore(sb, tar, info.sha256, &err) == 0, "restore: %s", err ? err->msg : "");
  struct an_sandbox *child = NULL;
  cr_assert(an_sandbox_fork(sb, &child, &err) == 0, "fork: %s", err ? err->msg : "");
  char cid[32];
  snprintf(cid, sizeof cid, "%s", an_sandbox_id(child));
  cr_assert(an_sandbox_destroy(child, 0, &err) == 0);
  an_sandbox_close(child);
  cr_assert(an_sandbox_destroy(sb, 0, &err) == 0);
  an_sandbox_close(sb);
  char *report = NULL;
  cr_assert(an_sandbox_prune(g_root, false, &report, &err) == 0);
  free(report);

  struct recs r;
  struct an_audit_filter f = {.sandbox = id};
  read_all(&r, &f);
  yajl_val v = find_op(&r, "create", NULL);
  cr_assert_not_null(v, "no create record");
  cr_expect_str_eq(mstr(v, "image"), "busybox");
  cr_expect(strv_has(member(v, "env"), "PLAIN") && !strv_has(member(v, "env"), "plainvalue42"));
  cr_expect(strv_has(member(v, "secrets"), "TOKEN"));
  cr_expect_str_eq(mstr(v, "result"), "ok");
  v = find_op(&r, "exec", NULL);
  cr_assert_not_null(v, "no exec record");
  cr_expect(strv_has(member(v, "argv"), "[REDACTED:TOKEN] $TOKEN"), "argv not redacted");
  cr_expect(strv_has(member(v, "env"), "EXTRA"));
  cr_expect_eq(YAJL_GET_INTEGER(member(v, "status")), 0);
  cr_expect_str_eq(mstr(v, "result"), "ok");
  v = find_op(&r, "put", NULL);
  cr_assert_not_null(v, "no put record");
  cr_expect_str_eq(mstr(v, "path"), "f.txt");
  v = find_op(&r, "get", NULL);
  cr_assert_not_null(v, "no get record");
  cr_expect_str_eq(mstr(v, "path"), "f.txt");
  v = find_op(&r, "snapshot", NULL);
  cr_assert_not_null(v, "no snapshot record");
  cr_expect_str_eq(mstr(v, "tar_path"), tar);
  cr_expect_str_eq(mstr(v, "sha256"), info.sha256);
  v = find_op(&r, "restore", NULL);
  cr_assert_not_null(v, "no restore record");
  cr_expect_str_eq(mstr(v, "sha256"), info.sha256);
  v = find_op(&r, "fork", NULL);
  cr_assert_not_null(v, "no fork record");
  cr_expect_str_eq(mstr(v, "child"), cid);
  v = find_op(&r, "destroy", NULL);
  cr_assert_not_null(v, "no destroy record");
  cr_expect_str_eq(mstr(v, "reason"), "destroy");
  recs_free(&r);
  f = (struct an_audit_filter){.sandbox = cid, .op = "create"};
  read_all(&r, &f);
  cr_expect_eq(r.n, 1, "the fork's child has no create record");
  recs_free(&r);
  f = (struct an_audit_filter){.op = "prune"};
  read_all(&r, &f);
  cr_expect_eq(r.n, 1, "no prune record");
  recs_free(&r);
  /* the log outlives the sandboxes; the secret never reached it */
  cr_expect(!file_contains(g_log, SECRET), "secret value in %s", g_log);
  cr_expect(!file_contains(g_log, "plainvalue42"), "env value in %s", g_log);
}

Test(audit, expiry_is_recorded_by_the_monitor) {
  need_image();
  struct an_sandbox_opts *o = opts_busybox();
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_set_lifetime(o, 1000, &err) == 0);
  struct an_sandbox *sb = NULL;
  cr_assert(an_sandbox_create(g_root, o, &sb, &err) == 0, "create: %s", err ? err->msg : "");
  an_sandbox_opts_free(o);
  char id[32];
  snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
  an_sandbox_close(sb);
  struct recs r;
  struct an_audit_filter f = {.sandbox = id, .op = "destroy"};
  /* wait (bounded) for the monitor's teardown */
  for (int i = 0; i < 600; i++) {
    read_all(&r, &f);
    if (r.n) break;
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
  }
  cr_assert_eq(r.n, 1, "no destroy record after expiry");
  cr_expect_str_eq(mstr(r.v[0], "reason"), "expired");
  recs_free(&r);
  f = (struct an_audit_filter){.sandbox = id, .op = "expire"};
  read_all(&r, &f);
  cr_expect_eq(r.n, 1, "no expire record");
  recs_free(&r);
}

Test(audit, cli_prints_records_and_filters) {
  need_image();
  cr_assert_eq(cli("create --image busybox"), 0, "%s", g_err);
  char id[64];
  snprintf(id, sizeof id, "%.63s", g_out);
  chomp(id);
  cr_assert_eq(cli("exec %s -- true", id), 0, "%s", g_err);
  cr_assert_eq(cli("destroy %s", id), 0, "%s", g_err);
  cr_assert_eq(cli("audit --sandbox %s", id), 0, "%s", g_err);
  cr_expect(strstr(g_out, " create ") && strstr(g_out, " exec ") && strstr(g_out, " destroy "), "%s", g_out);
  cr_expect(strstr(g_out, "argv=[\"true\"]"), "%s", g_out);
  cr_assert_eq(cli("audit --json --op exec"), 0, "%s", g_err);
  cr_expect(g_out[0] == '{' && strstr(g_out, "\"op\":\"exec\"") && !strstr(g_out, "\"op\":\"create\""), "%s", g_out);
  cr_assert_eq(cli("audit --since 2100-01-01"), 0, "%s", g_err);
  cr_expect_str_eq(g_out, "");
  cr_expect_eq(cli("audit --since nonsense"), 125);
  cr_assert_eq(cli("audit config --max-size 64k --keep 7"), 0, "%s", g_err);
  cr_expect(strstr(g_out, "\"max_bytes\":65536") && strstr(g_out, "\"keep\":7"), "%s", g_out);
}

/* ---- approvals ------------------------------------------------------------------------------- */

static char *create_with_hook(const char *hook_path, const char *extra) {
  int st = cli("create --image busybox --approve-with '%s' %s", hook_path, extra ? extra : "");
  cr_assert_eq(st, 0, "create: %s", g_err);
  static char id[64];
  snprintf(id, sizeof id, "%.63s", g_out);
  chomp(id);
  return id;
}

#define DENY_ON_FORBIDDEN                                                            \
  "req=$(cat)\n"                                                                     \
  "printf '%s\\n' \"$req\" >> \"$(dirname \"$0\")/requests.log\"\n"                 \
  "case \"$req\" in *forbidden*) echo '{\"decision\":\"deny\",\"reason\":\"no forbidden words\"}';;\n" \
  "*) echo '{\"decision\":\"allow\"}';; esac"

Test(approval, allow_runs_and_deny_is_exit_125_with_the_reason) {
  need_image();
  const char *h = hook("hook.sh", DENY_ON_FORBIDDEN);
  char *id = create_with_hook(h, NULL);
  cr_assert_eq(cli("exec %s -- echo fine", id), 0, "%s", g_err);
  cr_expect_str_eq(g_out, "fine\n");
  cr_assert_eq(cli("exec %s -- echo forbidden", id), 125);
  cr_expect(strstr(g_err, "denied by approval hook: no forbidden words\n"), "stderr: %s", g_err);
  cr_expect_str_eq(g_out, "", "a denied command ran");
  struct recs r;
  struct an_audit_filter f = {.sandbox = id, .op = "approval"};
  read_all(&r, &f);
  cr_assert_eq(r.n, 2);
  cr_expect_str_eq(mstr(r.v[0], "decision"), "allow");
  cr_expect_str_eq(mstr(r.v[1], "decision"), "deny");
  cr_expect_str_eq(mstr(r.v[1], "reason"), "no forbidden words");
  cr_expect_str_eq(mstr(r.v[1], "operation"), "exec");
  cr_expect(strv_has(member(r.v[1], "argv"), "forbidden"));
  recs_free(&r);
  /* the request as documented */
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/requests.log", g_root);
  char *t = an_test_read_file(p, NULL);
  cr_assert_not_null(t);
  char *line = strtok(t, "\n");
  cr_assert_not_null(line);
  yajl_val v = yajl_tree_parse(line, NULL, 0);
  cr_assert_not_null(v, "request not JSON: %s", line);
  cr_expect_str_eq(mstr(v, "operation"), "exec");
  const char *idp[] = {"sandbox", "id", NULL}, *argvp[] = {"arguments", "argv", NULL},
             *uidp[] = {"caller", "uid", NULL}, *pidp[] = {"caller", "pid", NULL};
  cr_expect_str_eq(YAJL_GET_STRING(yajl_tree_get(v, idp, yajl_t_string)), id);
  cr_expect(strv_has(yajl_tree_get(v, argvp, yajl_t_array), "fine"));
  cr_expect_not_null(yajl_tree_get(v, uidp, yajl_t_number));
  cr_expect_not_null(yajl_tree_get(v, pidp, yajl_t_number));
  yajl_tree_free(v);
  free(t);
}

Test(approval, every_file_snapshot_and_fork_call_is_asked) {
  need_image();
  const char *h = hook("hook.sh",
                       "req=$(cat)\n"
                       "case \"$req\" in *'\"operation\":\"exec\"'*) echo '{\"decision\":\"allow\"}';;\n"
                       "*) echo '{\"decision\":\"deny\",\"reason\":\"only exec\"}';; esac");
  char *id = create_with_hook(h, NULL);
  char in[PATH_MAX + 16];
  snprintf(in, sizeof in, "%s/in.txt", g_root);
  an_test_write_file(in, "x\n", 2, 0644);
  cr_expect_eq(cli("cp '%s' %s:in.txt", in, id), 125, "put was not asked");
  cr_expect(strstr(g_err, "denied by approval hook: only exec"), "%s", g_err);
  cr_assert_eq(cli("exec %s -- sh -c 'echo y > /workspace/y.txt'", id), 0, "%s", g_err);
  cr_expect_eq(cli("cp %s:y.txt '%s/y.txt'", id, g_root), 125, "get was not asked");
  cr_expect_eq(cli("snapshot %s '%s/s.tar'", id, g_root), 125, "snapshot was not asked");
  cr_expect_eq(cli("fork %s", id), 125, "fork was not asked");
  cr_expect(strstr(g_err, "denied by approval hook"), "%s", g_err);
  struct recs r;
  struct an_audit_filter f = {.sandbox = id, .op = "approval"};
  read_all(&r, &f);
  cr_expect_not_null(find_op(&r, "approval", "put"));
  cr_expect_not_null(find_op(&r, "approval", "get"));
  cr_expect_not_null(find_op(&r, "approval", "snapshot"));
  cr_expect_not_null(find_op(&r, "approval", "fork"));
  recs_free(&r);
}

Test(approval, restore_is_asked) {
  need_image();
  const char *h = hook("hook.sh",
                       "req=$(cat)\n"
                       "case \"$req\" in *'\"operation\":\"restore\"'*) echo '{\"decision\":\"deny\",\"reason\":\"no restore\"}';;\n"
                       "*) echo '{\"decision\":\"allow\"}';; esac");
  char *id = create_with_hook(h, NULL);
  cr_assert_eq(cli("snapshot %s '%s/s.tar'", id, g_root), 0, "%s", g_err);
  cr_expect_eq(cli("restore %s '%s/s.tar'", id, g_root), 125);
  cr_expect(strstr(g_err, "denied by approval hook: no restore"), "%s", g_err);
}

/* The profile key, with a program relative to the profile's directory. */
Test(approval, a_profile_key_sets_the_hook) {
  need_image();
  hook("hook.sh", DENY_ON_FORBIDDEN);
  char prof[PATH_MAX];
  snprintf(prof, sizeof prof, "%s/approving.json", g_root);
  const char *doc = "{\"image\":\"busybox\",\"approve_with\":\"hook.sh\",\"approval_timeout\":\"2s\"}";
  an_test_write_file(prof, doc, strlen(doc), 0644);
  cr_assert_eq(cli("create --profile '%s'", prof), 0, "%s", g_err);
  char id[64];
  snprintf(id, sizeof id, "%.63s", g_out);
  chomp(id);
  cr_expect_eq(cli("exec %s -- echo forbidden", id), 125);
  cr_expect(strstr(g_err, "denied by approval hook: no forbidden words"), "%s", g_err);
  cr_assert_eq(cli("inspect %s", id), 0);
  cr_expect(strstr(g_out, "\"approval_timeout\": \"2000ms\"") || strstr(g_out, "\"approval_timeout\":\"2000ms\""),
            "%s", g_out);
}

Test(approval, no_answer_in_time_is_a_denial) {
  need_image();
  const char *h = hook("hook.sh", "cat >/dev/null; exec sleep 60");
  char *id = create_with_hook(h, "--approval-timeout 300ms");
  cr_assert_eq(cli("exec %s -- echo hi", id), 125);
  cr_expect(strstr(g_err, "denied by approval hook: "), "%s", g_err);
  cr_expect(strstr(g_err, "timeout"), "%s", g_err);
  cr_expect_str_eq(g_out, "");
}

Test(approval, a_garbage_answer_is_a_denial) {
  need_image();
  const char *h = hook("hook.sh", "cat >/dev/null; echo 'yes, go ahead'");
  char *id = create_with_hook(h, NULL);
  cr_assert_eq(cli("exec %s -- echo hi", id), 125);
  cr_expect(strstr(g_err, "denied by approval hook: invalid answer"), "%s", g_err);
  const char *h2 = hook("hook2.sh", "cat >/dev/null; echo '{\"decision\":\"maybe\"}'");
  id = create_with_hook(h2, NULL);
  cr_assert_eq(cli("exec %s -- echo hi", id), 125);
  cr_expect(strstr(g_err, "denied by approval hook: invalid answer"), "%s", g_err);
  const char *h3 = hook("hook3.sh", "cat >/dev/null");
  id = create_with_hook(h3, NULL);
  cr_assert_eq(cli("exec %s -- echo hi", id), 125, "an empty answer allowed");
}

Test(approval, a_crashing_hook_is_a_denial) {
  need_image();
  /* an "allow" written before the crash does not count */
  const char *h = hook("hook.sh", "cat >/dev/null; echo '{\"decision\":\"allow\"}'; kill -SEGV $$");
  char *id = create_with_hook(h, NULL);
  cr_assert_eq(cli("exec %s -- echo hi", id), 125);
  cr_expect(strstr(g_err, "denied by approval hook: the hook was killed by signal 11"), "%s", g_err);
  const char *h2 = hook("hook2.sh", "cat >/dev/null; echo '{\"decision\":\"allow\"}'; exit 3");
  id = create_with_hook(h2, NULL);
  cr_assert_eq(cli("exec %s -- echo hi", id), 125);
  cr_expect(strstr(g_err, "exited with status 3"), "%s", g_err);
  /* removed after create: fail closed */
  const char *h3 = hook("hook3.sh", "cat >/dev/null; echo '{\"decision\":\"allow\"}'");
  id = create_with_hook(h3, NULL);
  cr_assert(unlink(h3) == 0);
  cr_assert_eq(cli("exec %s -- echo hi", id), 125);
  cr_expect(strstr(g_err, "denied by approval hook"), "%s", g_err);
}

Test(approval, create_refuses_a_missing_hook_and_leaves_nothing) {
  need_image();
  cr_expect_eq(cli("create --image busybox --approve-with /nonexistent/hook"), 125);
  cr_expect(strstr(g_err, "/nonexistent/hook"), "%s", g_err);
  cr_expect_eq(cli("create --image busybox --approve-with unix:relative.sock"), 125);
  cr_assert_eq(cli("ls --json"), 0);
  cr_expect(!strstr(g_out, "\"id\""), "a sandbox was left: %s", g_out);
}

Test(approval, a_one_shot_run_is_asked_before_its_sandbox_exists) {
  need_image();
  const char *h = hook("hook.sh", DENY_ON_FORBIDDEN);
  cr_expect_eq(cli("run --image busybox --approve-with '%s' -- echo forbidden", h), 125);
  cr_expect(strstr(g_err, "denied by approval hook: no forbidden words"), "%s", g_err);
  cr_expect_str_eq(g_out, "");
  cr_assert_eq(cli("run --image busybox --approve-with '%s' -- echo ok", h), 0, "%s", g_err);
  cr_expect_str_eq(g_out, "ok\n");
}

/* Bypass attempts: another CLI without the option, a profile, a fork, the
 * library from a fresh handle, and the sandbox itself. */
Test(approval, bypass_attempts_are_still_checked) {
  need_image();
  const char *h = hook("hook.sh", DENY_ON_FORBIDDEN);
  char *id = create_with_hook(h, NULL);
  /* exec has no option to drop the hook; a second process is checked */
  cr_expect_eq(cli("exec --approve-with /bin/true %s -- echo forbidden", id), 125);
  cr_expect_eq(cli("exec %s -- echo forbidden", id), 125);
  /* a fresh library handle */
  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_open(g_root, id, &sb, &err) == 0, "open: %s", err ? err->msg : "");
  char *argv[] = {"echo", "forbidden", NULL};
  struct an_exec_result res;
  cr_expect_eq(an_sandbox_exec(sb, argv, NULL, &res, &err), -EACCES);
  cr_expect(err && strstr(err->msg, "denied by approval hook"), "%s", err ? err->msg : "");
  an_error_free(&err);
  /* the one function other operations call */
  cr_expect_eq(an_approval_check(sb, "session_run", &err, AN_AUDIT_STR("code", "forbidden"), AN_AUDIT_END),
               -EACCES);
  an_error_free(&err);
  cr_expect_eq(an_approval_check(sb, "network_change", &err, AN_AUDIT_STR("mode", "full"), AN_AUDIT_END), 0);
  /* a fork keeps the hook */
  struct an_sandbox *child = NULL;
  cr_assert(an_sandbox_fork(sb, &child, &err) == 0, "fork: %s", err ? err->msg : "");
  cr_expect_eq(an_sandbox_exec(child, argv, NULL, &res, &err), -EACCES, "the fork lost the hook");
  an_error_free(&err);
  cr_assert(an_sandbox_destroy(child, 0, &err) == 0);
  an_sandbox_close(child);
  an_sandbox_close(sb);
  /* inside the sandbox: the hook, the store and the state are out of reach */
  cr_assert_eq(cli("exec %s -- sh -c 'ls %s; ls %s/sandboxes; echo end'", id, h, g_root), 0, "%s", g_err);
  cr_expect_str_eq(g_out, "end\n", "the sandbox sees the host: %s", g_out);
  /* inspect shows the hook; no option changed it */
  cr_assert_eq(cli("inspect %s", id), 0);
  cr_expect(strstr(g_out, h), "inspect does not show the hook: %s", g_out);
}

/* redteam: exec --detach and session start/run ran code without asking the hook (and
 * left no audit record): a hook denying an argv was bypassed by --detach or a session. */
Test(approval, detached_exec_and_session_calls_are_asked) {
  need_image();
  const char *h = hook("hook.sh", DENY_ON_FORBIDDEN);
  char *id = create_with_hook(h, NULL);
  cr_expect_eq(cli("exec --detach %s -- sh -c 'echo forbidden > /workspace/d.txt'", id), 125,
               "exec --detach was not asked: %s", g_out);
  cr_expect(strstr(g_err, "denied by approval hook: no forbidden words"), "%s", g_err);
  cr_expect_eq(cli("session start %s --kind shell --name forbidden", id), 125, "session start was not asked");
  cr_assert_eq(cli("session start %s --kind shell --name s1", id), 0, "%s", g_err);
  cr_expect_eq(cli("session run %s s1 'echo forbidden > /workspace/s.txt'", id), 125,
               "session run was not asked: %s", g_out);
  cr_expect(strstr(g_err, "denied by approval hook: no forbidden words"), "%s", g_err);
  /* nothing of the denied calls ran */
  cr_assert_eq(cli("exec %s -- sh -c 'sleep 1; ls /workspace; echo end'", id), 0, "%s", g_err);
  cr_expect_str_eq(g_out, "end\n", "a denied call ran: %s", g_out);
  /* the allowed ones are audited */
  cr_assert_eq(cli("exec --detach %s -- true", id), 0, "%s", g_err);
  cr_assert_eq(cli("session run %s s1 'echo fine'", id), 0, "%s", g_err);
  struct recs r;
  struct an_audit_filter f = {.sandbox = id};
  read_all(&r, &f);
  cr_expect_not_null(find_op(&r, "approval", "session_start"));
  cr_expect_not_null(find_op(&r, "approval", "session_run"));
  bool detached = false, ran = false;
  for (size_t i = 0; i < r.n; i++) {
    const char *op = mstr(r.v[i], "op");
    yajl_val d = member(r.v[i], "detach");
    if (op && !strcmp(op, "exec") && d && YAJL_IS_TRUE(d)) detached = true;
    if (op && !strcmp(op, "session_run")) ran = true;
  }
  cr_expect(detached, "no exec record of the detached command");
  cr_expect(ran, "no session_run record");
  recs_free(&r);
}

Test(approval, the_hook_runs_as_the_caller_with_a_clean_env_and_no_other_fds) {
  need_image();
  char p[256];
  snprintf(p, sizeof p, "%s/hookenv", g_root);
  char body[2048];
  snprintf(body, sizeof body,
           "cat > '%s.req'; id -u > '%s.uid'; env > '%s.env'; ls -l /proc/$$/fd > '%s.fds'; "
           "echo '{\"decision\":\"allow\"}'", p, p, p, p);
  const char *h = hook("hook.sh", body);
  struct an_sandbox_opts *o = opts_busybox();
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_set_approve_with(o, h, &err) == 0);
  cr_assert(an_sandbox_opts_add_secret(o, "TOKEN", SECRET, &err) == 0);
  struct an_sandbox *sb = NULL;
  cr_assert(an_sandbox_create(g_root, o, &sb, &err) == 0, "create: %s", err ? err->msg : "");
  an_sandbox_opts_free(o);
  /* a caller's fd without O_CLOEXEC, and an env variable of the caller */
  char marker[PATH_MAX + 16];
  snprintf(marker, sizeof marker, "%s/caller-marker", g_root);
  int mfd = open(marker, O_RDWR | O_CREAT, 0600);
  cr_assert(mfd >= 0);
  setenv("CALLER_ONLY_VAR", "callervalue", 1);
  char *argv[] = {"echo", SECRET, NULL};
  char *env[] = {"X=" SECRET, NULL};
  struct an_exec_opts eo = {.env = env};
  struct an_exec_result res;
  cr_assert(an_sandbox_exec(sb, argv, &eo, &res, &err) == 0, "exec: %s", err ? err->msg : "");
  an_exec_result_release(&res);
  close(mfd);
  char q[PATH_MAX + 64];
  snprintf(q, sizeof q, "%s.uid", p);
  char *t = an_test_read_file(q, NULL);
  cr_assert_not_null(t);
  cr_expect_eq(atoi(t), (int) getuid(), "hook uid %s", t);
  free(t);
  snprintf(q, sizeof q, "%s.env", p);
  cr_expect(!file_contains(q, "CALLER_ONLY_VAR"), "the caller's environment reached the hook");
  cr_expect(!file_contains(q, "AGENTNEST_"), "the caller's environment reached the hook");
  cr_expect(file_contains(q, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
  snprintf(q, sizeof q, "%s.fds", p);
  cr_expect(!file_contains(q, "caller-marker"), "the caller's fd reached the hook");
  snprintf(q, sizeof q, "%s.req", p);
  cr_expect(file_contains(q, "\"operation\":\"exec\""));
  cr_expect(!file_contains(q, SECRET), "a secret value is in the request");
  cr_expect(file_contains(q, "[REDACTED:TOKEN]"));
  /* the one-call record other operations write */
  an_audit_sandbox(sb, "session_run", 0, NULL, AN_AUDIT_STR("code", "print('" SECRET "')"), AN_AUDIT_END);
  struct recs r;
  struct an_audit_filter f = {.sandbox = an_sandbox_id(sb), .op = "session_run"};
  read_all(&r, &f);
  cr_assert_eq(r.n, 1, "no session_run record");
  cr_expect_str_eq(mstr(r.v[0], "code"), "print('[REDACTED:TOKEN]')");
  cr_expect_str_eq(mstr(r.v[0], "result"), "ok");
  recs_free(&r);
  cr_assert(an_sandbox_destroy(sb, 0, &err) == 0);
  an_sandbox_close(sb);
  cr_expect(!file_contains(g_log, SECRET), "a secret value is in the audit log");
}

/* From inside: neither the hook program nor an approver's socket on the
 * host can be reached (the probe's connect_unix gets ENOENT: the path is
 * not in the sandbox's mount namespace), and the sandbox's processes hold
 * no fd of the hook. */
Test(approval, the_sandbox_cannot_reach_the_hook_or_its_socket) {
  need_image();
  const char *bdir = getenv("AN_TEST_BUILD");
  char probe[PATH_MAX];
  char rel[PATH_MAX];
  snprintf(rel, sizeof rel, "%s/tests/helpers/probe", bdir && *bdir ? bdir : "build");
  if (!realpath(rel, probe)) cr_skip_test("probe helper not built (%s)", rel);
  char sock[100];
  snprintf(sock, sizeof sock, "%.80s/approver.sock", g_root);
  int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
  cr_assert(bind(ls, (struct sockaddr *) &sa, sizeof sa) == 0 && listen(ls, 8) == 0);
  const char *h = hook("hook.sh", DENY_ON_FORBIDDEN);
  char *id = create_with_hook(h, NULL);
  cr_assert_eq(cli("cp '%s' %s:probe", probe, id), 0, "%s", g_err);
  cr_assert_eq(cli("exec %s -- /workspace/probe connect_unix:%s", id, sock), 0, "%s", g_err);
  cr_expect(strstr(g_out, "connect_unix ENOENT"), "the sandbox reached the host socket: %s", g_out);
  /* negative control: the same probe on the host connects */
  char cmd[PATH_MAX * 2];
  snprintf(cmd, sizeof cmd, "'%s' connect_unix:%s", probe, sock);
  FILE *p = popen(cmd, "r");
  char line[256] = "";
  cr_assert_not_null(p);
  if (!fgets(line, sizeof line, p)) line[0] = 0;
  pclose(p);
  cr_expect(strstr(line, "connect_unix OK"), "control: %s", line);
  cr_assert_eq(cli("exec %s -- sh -c 'ls -l /proc/self/fd/ | grep -c hook; cat %s 2>&1 | head -c 0; "
                   "test -e %s || echo no-hook'", id, h, h), 0, "%s", g_err);
  cr_expect(strstr(g_out, "no-hook"), "the hook program is visible inside: %s", g_out);
  close(ls);
}

/* A unix socket hook: a server process of the test answers one request. */
Test(approval, a_unix_socket_hook_allows_and_denies) {
  need_image();
  char sock[100];
  snprintf(sock, sizeof sock, "%.80s/hook.sock", g_root);
  int ls = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
  cr_assert(bind(ls, (struct sockaddr *) &sa, sizeof sa) == 0 && listen(ls, 8) == 0);
  pid_t srv = fork();
  cr_assert(srv >= 0);
  if (srv == 0) {
    alarm(60);   /* never outlive a failed test (it holds criterion's output pipe) */
    for (int i = 0; i < 3; i++) {
      int c = accept(ls, NULL, NULL);
      if (c < 0) _exit(1);
      char buf[65536];
      size_t got = 0;
      ssize_t n;
      while ((n = read(c, buf + got, sizeof buf - 1 - got)) > 0) got += (size_t) n;
      buf[got] = 0;
      const char *ans = strstr(buf, "forbidden") ? "{\"decision\":\"deny\",\"reason\":\"socket says no\"}"
                                                  : "{\"decision\":\"allow\"}";
      if (write(c, ans, strlen(ans)) < 0) _exit(1);
      close(c);
    }
    _exit(0);
  }
  close(ls);
  char hk[PATH_MAX + 32];
  snprintf(hk, sizeof hk, "unix:%s", sock);
  char *id = create_with_hook(hk, NULL);
  cr_expect_eq(cli("exec %s -- echo ok", id), 0, "%s", g_err);
  cr_expect_eq(cli("exec %s -- echo forbidden", id), 125);
  cr_expect(strstr(g_err, "denied by approval hook: socket says no"), "%s", g_err);
  cr_expect_eq(cli("exec %s -- echo ok", id), 0, "%s", g_err);
  int st = 0;
  /* bounded: the server's alarm */
  cr_assert_eq(waitpid(srv, &st, 0), srv);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the socket hook was not asked three times");
  /* the server is gone: fail closed */
  cr_expect_eq(cli("exec %s -- echo ok", id), 125);
  cr_expect(strstr(g_err, "denied by approval hook: connect"), "%s", g_err);
}

/* New-user trial: a deny-all hook did not stop `exec --detach`, `session start` or `session run`,
 * and none of them (nor proc kill, extend) reached the audit log.  Now each is asked (detach as
 * an exec with "detach": true) and recorded. */
Test(approval, detach_sessions_and_extend_are_asked_and_audited) {
  need_image();
  const char *h = hook("hook.sh", DENY_ON_FORBIDDEN);
  char *id = create_with_hook(h, NULL);
  cr_expect_eq(cli("exec --detach %s -- sh -c 'echo forbidden > /workspace/x'", id), 125, "%s", g_err);
  cr_expect(strstr(g_err, "denied by approval hook: no forbidden words"), "%s", g_err);
  cr_expect_eq(cli("session start %s --kind shell --name forbidden", id), 125, "%s", g_err);
  cr_assert_eq(cli("session start %s --kind shell --name s", id), 0, "%s", g_err);
  cr_expect_eq(cli("session run %s s 'echo forbidden > /workspace/y'", id), 125, "%s", g_err);
  cr_expect(strstr(g_err, "denied by approval hook"), "%s", g_err);
  cr_assert_eq(cli("session run %s s 'echo fine'", id), 0, "%s", g_err);
  cr_expect_str_eq(g_out, "fine\n");
  cr_assert_eq(cli("exec %s -- ls /workspace", id), 0, "%s", g_err);
  cr_expect_str_eq(g_out, "", "a denied detach or session call ran");
  cr_assert_eq(cli("exec --detach %s -- sleep 30", id), 0, "%s", g_err);
  char handle[64];
  snprintf(handle, sizeof handle, "%.63s", g_out);
  chomp(handle);
  cr_expect_eq(cli("proc kill %s %s", id, handle), 0, "%s", g_err);
  cr_expect_eq(cli("extend %s 1m", id), 0, "%s", g_err);
  cr_expect_eq(cli("session stop %s s", id), 0, "%s", g_err);
  struct recs r;
  struct an_audit_filter f = {.sandbox = id};
  read_all(&r, &f);
  cr_expect_not_null(find_op(&r, "approval", "session_start"));
  cr_expect_not_null(find_op(&r, "approval", "session_run"));
  cr_expect_not_null(find_op(&r, "approval", "extend"));
  yajl_val sr = find_op(&r, "session_run", NULL);
  cr_expect(sr && !strcmp(mstr(sr, "code") ?: "", "echo fine") && !strcmp(mstr(sr, "session") ?: "", "s"),
            "session_run record");
  cr_expect_not_null(find_op(&r, "session_start", NULL));
  cr_expect_not_null(find_op(&r, "session_stop", NULL));
  bool detached = false;
  for (size_t i = 0; i < r.n; i++)
    if (!strcmp(mstr(r.v[i], "op") ?: "", "exec") && YAJL_IS_TRUE(member(r.v[i], "detach")) &&
        strv_has(member(r.v[i], "argv"), "sleep"))
      detached = true;
  cr_expect(detached, "no exec record with detach: true");
  cr_expect_not_null(find_op(&r, "proc_kill", NULL));
  cr_expect_not_null(find_op(&r, "extend", NULL));
  recs_free(&r);
  cli("destroy %s", id);
}

/* A live egress change is asked of the hook and recorded. */
Test(approval, a_network_change_is_asked_and_audited) {
  need_image();
  const char *h = hook("hook.sh", DENY_ON_FORBIDDEN);
  char *id = create_with_hook(h, "--network allowlist --allow pkg.example");
  cr_expect_eq(cli("network %s --allow forbidden.example", id), 125, "%s", g_err);
  cr_expect(strstr(g_err, "denied by approval hook: no forbidden words"), "%s", g_err);
  cr_assert_eq(cli("network %s --allow ok.example", id), 0, "%s", g_err);
  cr_assert_eq(cli("network %s", id), 0, "%s", g_err);
  cr_expect(strstr(g_out, "ok.example") && !strstr(g_out, "forbidden.example"), "%s", g_out);
  struct recs r;
  struct an_audit_filter f = {.sandbox = id};
  read_all(&r, &f);
  cr_expect_not_null(find_op(&r, "approval", "network_change"));
  yajl_val nc = find_op(&r, "network_change", NULL);
  cr_expect(nc && strv_has(member(nc, "allow"), "ok.example"), "network_change record");
  recs_free(&r);
  cli("destroy %s", id);
}

/* New-user trial: `audit --sandbox NAME` printed nothing (records name sandboxes by id). */
Test(audit, sandbox_filter_takes_a_live_sandboxs_name) {
  need_image();
  cr_assert_eq(cli("create --image busybox --name auditjob"), 0, "%s", g_err);
  cr_assert_eq(cli("exec auditjob -- true"), 0, "%s", g_err);
  cr_assert_eq(cli("audit --sandbox auditjob --op exec --json"), 0, "%s", g_err);
  cr_expect(strstr(g_out, "\"op\":\"exec\""), "no exec record for the name: %s", g_out);
  cli("destroy auditjob");
}
