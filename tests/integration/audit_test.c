/* tests/integration/audit_test.c — the per-store audit log on the real
 * kernel (agentnest/audit.h): records of every operation with their
 * members, secret values never in the log, rotation, whole lines from
 * concurrent appending processes, --since dates and durations, the CLI's
 * `audit` command and its filters.  The approval hooks are
 * approval_test.c; the shared store, log readers and CLI driver are
 * audit_common.h.
 *
 * Each test has its own store /tmp/an-audit-<pid> with the busybox image
 * imported from the `make images` cache (tests that need a sandbox skip
 * without it).  Run as root from the worktree root. */
#include "audit_common.h"

TestSuite(audit, .init = setup, .fini = teardown, .timeout = 240);

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
  cr_assert(an_sandbox_prune_ctx(an_test_ctx(), g_root, false, &report, &err) == 0);
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

/* The prune record lists the ids it removed (and its errors) and counts
 * the rest; it held the whole report as one JSON string, which the
 * record's string limit cut unreadable past 1 KiB. */
Test(audit, prune_records_the_ids_it_removed_as_a_list) {
  need_image();
  struct an_sandbox_opts *o = opts_busybox();
  an_error_t err = NULL;
  struct an_sandbox *sb = NULL;
  cr_assert(an_sandbox_create(g_root, o, &sb, &err) == 0, "create: %s", err ? err->msg : "");
  an_sandbox_opts_free(o);
  char id[32];
  snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
  pid_t mon = an_sandbox_monitor_pid(sb);
  an_sandbox_close(sb);
  cr_assert_gt(mon, 0);
  cr_assert_eq(kill(mon, SIGKILL), 0);
  for (int i = 0; i < 100 && kill(mon, 0) == 0; i++) {
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  char *report = NULL;
  cr_assert(an_sandbox_prune_ctx(an_test_ctx(), g_root, false, &report, &err) == 0, "%s", err ? err->msg : "");
  cr_expect(strstr(report, id), "report: %s", report);
  free(report);
  struct recs r;
  struct an_audit_filter f = {.op = "prune"};
  read_all(&r, &f);
  cr_assert_eq(r.n, 1, "prune records: %zu", r.n);
  yajl_val rm = member(r.v[0], "removed");
  cr_expect(YAJL_IS_ARRAY(rm) && strv_has(rm, id), "\"removed\" does not list %s", id);
  cr_expect(YAJL_IS_ARRAY(member(r.v[0], "errors")), "no \"errors\" list");
  cr_expect(YAJL_IS_INTEGER(member(r.v[0], "orphan_cgroups")), "no \"orphan_cgroups\" count");
  cr_expect_null(member(r.v[0], "report"), "the report as one string is still there");
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

/* New-user trial: `audit --sandbox NAME` printed nothing (records name sandboxes by id). */
Test(audit, sandbox_filter_takes_a_live_sandboxs_name) {
  need_image();
  cr_assert_eq(cli("create --image busybox --name auditjob"), 0, "%s", g_err);
  cr_assert_eq(cli("exec auditjob -- true"), 0, "%s", g_err);
  cr_assert_eq(cli("audit --sandbox auditjob --op exec --json"), 0, "%s", g_err);
  cr_expect(strstr(g_out, "\"op\":\"exec\""), "no exec record for the name: %s", g_out);
  cli("destroy auditjob");
}

/* New-user trial: `audit --op NAME` with a name no version writes printed
 * nothing and exited 0, leaving a typo unexplained.  Ops are open-ended (a
 * log outlives versions), so it still matches nothing with status 0, but
 * says so on stderr and lists the ops this version writes; a name that
 * cannot be an op at all is a usage error. */
Test(audit, unknown_op_matches_nothing_with_a_note_and_a_malformed_one_is_refused) {
  an_error_t err = NULL;
  cr_assert_eq(an_audit_record(g_root, "exec", NULL, &err, AN_AUDIT_STR("path", "x"), AN_AUDIT_END), 0);
  cr_assert_eq(an_audit_record(g_root, "other_versions_op", NULL, &err, AN_AUDIT_END), 0);
  cr_assert_eq(cli("audit --op exce"), 0, "%s", g_err);
  cr_expect_str_eq(g_out, "");
  cr_expect(strstr(g_err, "no record has op 'exce'") && strstr(g_err, "exec") && strstr(g_err, "session_run"),
            "no note naming the op and the known ones: '%s'", g_err);
  /* an op of another version is matched, and a known op without records is quiet */
  cr_assert_eq(cli("audit --op other_versions_op --json"), 0, "%s", g_err);
  cr_expect(strstr(g_out, "\"op\":\"other_versions_op\""), "%s", g_out);
  cr_expect_str_eq(g_err, "");
  cr_assert_eq(cli("audit --op restore"), 0, "%s", g_err);
  cr_expect_str_eq(g_err, "");
  cr_expect_eq(cli("audit --op EXEC"), 125);
  cr_expect(strstr(g_err, "--op 'EXEC'") && strstr(g_err, "Try 'agentnest audit --help'"), "%s", g_err);
  cr_assert_eq(cli("audit --help"), 0);
  cr_expect(strstr(g_out, "matches nothing"), "--help does not say what an unknown op does: %s", g_out);
}
