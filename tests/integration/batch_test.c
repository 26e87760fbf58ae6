/* tests/integration/batch_test.c — black-box tests of `agentnest batch`
 * through the built binary ($AN_TEST_BUILD/agentnest): a 200-job file
 * mixing Python, shell, failures, timeouts, an OOM kill, a fork bomb,
 * artifacts and a malformed line, checked record by record and through the
 * JUnit report parsed by a real XML parser (python3's xml.etree); SIGKILL
 * at random points then --resume, repeated, giving exactly one record per
 * job (a record cut short by the kill is repaired; the killed run's
 * sandboxes removed by prune or by the resume); shards 1/3, 2/3, 3/3
 * covering every job once; SIGTERM ending running jobs; and after each
 * test, nothing left on the host from its store: no sandbox state, no
 * agentnest cgroup of its sandboxes, no process, no mount.
 *
 * Each test has its own store /tmp/an-batch-<runner>-<test pid> with the
 * busybox image (and python where needed) imported from the `make images`
 * cache (skipped when the cache is missing). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <openssl/evp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "rm_tree.h"
#include "util.h"

#define CACHE "/var/cache/agentnest/images"
#define MAX_IDS 4096

extern char **environ;

static char an_bin[4096];
static char root[256];   /* this test's store */
static char work[300];   /* this test's scratch dir */
static char *out_text, *err_text;
/* every sandbox id this test's store held, for the host check */
static char *sb_ids[MAX_IDS];
static size_t nsb;

static char *slurp(const char *path) {
  char *s = an_test_read_file(path, NULL);
  return s ? s : strdup("");
}

/* Run `agentnest --root ROOT <args>` through sh in the scratch dir. */
static int an(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int an(const char *fmt, ...) {
  char *args = NULL;
  va_list ap;
  va_start(ap, fmt);
  cr_assert_geq(vasprintf(&args, fmt, ap), 0);
  va_end(ap);
  int st = an_test_sh("cd '%s' && '%s' --root '%s' %s >'%s/.out' 2>'%s/.err'", work, an_bin, root,
                      args, work, work);
  free(args);
  char p[700];
  free(out_text);
  free(err_text);
  snprintf(p, sizeof p, "%s/.out", work);
  out_text = slurp(p);
  snprintf(p, sizeof p, "%s/.err", work);
  err_text = slurp(p);
  return st;
}

static void remember_sandbox(const char *id) {
  if (!id || !*id || nsb >= MAX_IDS) return;
  for (size_t i = 0; i < nsb; i++)
    if (!strcmp(sb_ids[i], id)) return;
  sb_ids[nsb++] = strdup(id);
}

/* Remember the sandboxes the store holds now (before a prune removes them). */
static void remember_store_sandboxes(void) {
  char p[700];
  snprintf(p, sizeof p, "%s/sandboxes", root);
  DIR *d = opendir(p);
  if (!d) return;
  struct dirent *de;
  while ((de = readdir(d)))
    if (de->d_name[0] != '.') remember_sandbox(de->d_name);
  closedir(d);
}

static void import_image(const char *name) {
  char lay[300];
  struct stat st;
  snprintf(lay, sizeof lay, CACHE "/%s/layout", name);
  if (stat(lay, &st) != 0) cr_skip_test("no %s image in " CACHE " (make images)", name);
  cr_assert_eq(an("image import '%s' --name %s", lay, name), 0, "import %s: %s", name, err_text);
}

/* busybox for every test; python where a test needs it */
static void setup(void) {
  const char *b = getenv("AN_TEST_BUILD");
  char rel[4096];
  snprintf(rel, sizeof rel, "%s/agentnest", b && *b ? b : "./build");
  cr_assert_not_null(realpath(rel, an_bin), "agentnest not built at %s", rel);
  const char *src = getenv("AN_TEST_SRC");
  char prof[4096], real[4096];
  snprintf(prof, sizeof prof, "%s/profiles", src && *src ? src : ".");
  if (realpath(prof, real)) setenv("AGENTNEST_PROFILES", real, 1);
  snprintf(root, sizeof root, "/tmp/an-batch-%d-%d", (int) getppid(), (int) getpid());
  snprintf(work, sizeof work, "%s-work", root);
  cr_assert(mkdir(root, 0755) == 0 || errno == EEXIST);
  cr_assert(mkdir(work, 0700) == 0 || errno == EEXIST);
  import_image("busybox");
}

static void teardown(void) {
  an_test_store_remove(root);
  an_test_rm_tree(work);
  for (size_t i = 0; i < nsb; i++) free(sb_ids[i]);
  nsb = 0;
  free(out_text);
  free(err_text);
  out_text = err_text = NULL;
}

TestSuite(batch, .init = setup, .fini = teardown, .timeout = 300);

/* ---- helpers ------------------------------------------------------------------------------ */

static void write_text(const char *name, const char *text) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", work, name);
  an_test_write_file(p, text, strlen(text), 0644);
}

static char *read_work(const char *name) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", work, name);
  return slurp(p);
}

static const char *jstr(yajl_val v, const char *k) {
  const char *path[] = {k, NULL};
  yajl_val s = yajl_tree_get(v, path, yajl_t_string);
  return s ? s->u.string : NULL;
}

static long long jint(yajl_val v, const char *k, long long dflt) {
  const char *path[] = {k, NULL};
  yajl_val n = yajl_tree_get(v, path, yajl_t_number);
  return n && YAJL_IS_INTEGER(n) ? YAJL_GET_INTEGER(n) : dflt;
}

static bool jtrue(yajl_val v, const char *k) {
  const char *path[] = {k, NULL};
  return YAJL_IS_TRUE(yajl_tree_get(v, path, yajl_t_any));
}

/* The records of a results text: every line must be a JSON object. */
static size_t parse_records(const char *text, yajl_val *recs, size_t max) {
  size_t n = 0;
  const char *p = text;
  while (*p) {
    const char *nl = strchr(p, '\n');
    cr_assert_not_null(nl, "a record without its newline: %.200s", p);
    char *line = strndup(p, (size_t) (nl - p));
    char e[256] = "";
    yajl_val v = yajl_tree_parse(line, e, sizeof e);
    cr_assert(v && YAJL_IS_OBJECT(v), "record %zu is not a JSON object (%s): %.300s", n + 1, e, line);
    free(line);
    cr_assert_lt(n, max);
    recs[n++] = v;
    remember_sandbox(jstr(v, "sandbox"));
    p = nl + 1;
  }
  return n;
}

static void free_records(yajl_val *recs, size_t n) {
  for (size_t i = 0; i < n; i++) yajl_tree_free(recs[i]);
}

static yajl_val find_record(yajl_val *recs, size_t n, const char *id) {
  yajl_val found = NULL;
  for (size_t i = 0; i < n; i++)
    if (jstr(recs[i], "id") && !strcmp(jstr(recs[i], "id"), id)) {
      cr_assert_null(found, "job %s recorded twice", id);
      found = recs[i];
    }
  return found;
}

static void sha256_hex(const char *s, char out[65]) {
  unsigned char md[32];
  unsigned int l = 0;
  EVP_Digest(s, strlen(s), md, &l, EVP_sha256(), NULL);
  for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", md[i]);
}

/* Nothing of this test's store is left on the host: no sandbox state, no
 * cgroup of any of its sandboxes in any hierarchy, no process started with
 * its --root, no mount under it. */
static void assert_nothing_left(void) {
  remember_store_sandboxes();
  char p[700];
  snprintf(p, sizeof p, "%s/sandboxes", root);
  DIR *d = opendir(p);
  if (d) {
    struct dirent *de;
    while ((de = readdir(d))) {
      if (de->d_name[0] == '.') continue;
      char rp[1100];
      snprintf(rp, sizeof rp, "%s/%s/sandbox.json", p, de->d_name);
      char *rec = an_test_read_file(rp, NULL);
      cr_expect_fail("sandbox %s left in the store; its record: %.400s", de->d_name, rec ? rec : "(none)");
      free(rec);
    }
    closedir(d);
  }
  for (size_t i = 0; i < nsb; i++) {
    char pat[200];
    snprintf(pat, sizeof pat, "/sys/fs/cgroup/*/agentnest/sb-%s", sb_ids[i]);
    glob_t g;
    int r = glob(pat, 0, NULL, &g);
    cr_expect(r == GLOB_NOMATCH, "cgroup of sandbox %s left: %s", sb_ids[i], r == 0 ? g.gl_pathv[0] : "?");
    if (r == 0) globfree(&g);
    snprintf(pat, sizeof pat, "/sys/fs/cgroup/agentnest/sb-%s", sb_ids[i]);
    struct stat st;
    cr_expect(stat(pat, &st) != 0, "cgroup %s left", pat);
  }
  /* processes: the batch and its job processes carry --root ROOT in argv */
  DIR *pd = opendir("/proc");
  cr_assert_not_null(pd);
  struct dirent *de;
  while ((de = readdir(pd))) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
    char cp[300];
    snprintf(cp, sizeof cp, "/proc/%s/cmdline", de->d_name);
    size_t len = 0;
    char *cmd = an_test_read_file(cp, &len);
    if (!cmd) continue;
    bool ours = false;
    for (size_t k = 0; k < len; k += strlen(cmd + k) + 1)
      if (!strcmp(cmd + k, root)) ours = true;
    free(cmd);
    cr_expect(!ours, "process %s of this store is left", de->d_name);
  }
  closedir(pd);
  char *mi = an_test_read_file("/proc/self/mountinfo", NULL);
  cr_assert_not_null(mi);
  cr_expect(strstr(mi, root) == NULL, "a mount under %s is left", root);
  free(mi);
}

/* ---- the 200-job file --------------------------------------------------------------------- */

enum kind { K_SHELL, K_PYTHON, K_FAIL, K_TIMEOUT, K_OOM, K_BOMB, K_GET, K_BAD, K_XML };

static enum kind kind_of(int i) {
  if (i == 100) return K_BAD;
  if (i == 7) return K_OOM;
  if (i == 9) return K_BOMB;
  if (i == 2) return K_XML;
  if (i % 10 == 3) return K_FAIL;
  if (i % 40 == 5) return K_TIMEOUT;
  if (i % 40 == 11) return K_GET;
  if (i % 4 == 0) return K_PYTHON;
  return K_SHELL;
}

static void write_200(const char *name) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", work, name);
  FILE *f = fopen(p, "we");
  cr_assert_not_null(f);
  for (int i = 0; i < 200; i++) {
    switch (kind_of(i)) {
    case K_BAD: fprintf(f, "{\"id\":\"j%d\",\"cmd\":\"not-an-array\"}\n", i); break;
    case K_OOM:
      fprintf(f, "{\"id\":\"j%d\",\"python\":\"a = bytearray(400 << 20); print(len(a))\",\"memory\":\"64m\"}\n", i);
      break;
    case K_BOMB:
      fprintf(f, "{\"id\":\"j%d\",\"image\":\"busybox\",\"shell\":\"b() { b | b & }; b; sleep 30\",\"pids\":32,\"timeout\":\"2s\"}\n", i);
      break;
    case K_XML:
      fprintf(f, "{\"id\":\"j%d\",\"image\":\"busybox\",\"shell\":\"printf '<a&b>\\\\001\\\"\\\\n'\"}\n", i);
      break;
    case K_FAIL:
      fprintf(f, "{\"id\":\"j%d\",\"image\":\"busybox\",\"shell\":\"echo failing >&2; exit %d\"}\n", i, i % 7 + 1);
      break;
    case K_TIMEOUT:
      fprintf(f, "{\"id\":\"j%d\",\"image\":\"busybox\",\"cmd\":[\"sleep\",\"30\"],\"timeout\":\"1s\"}\n", i);
      break;
    case K_GET:
      fprintf(f, "{\"id\":\"j%d\",\"image\":\"busybox\",\"shell\":\"mkdir -p out; printf art-%d > out/a%d.txt\",\"get\":[\"out/*.txt\"]}\n", i, i, i);
      break;
    case K_PYTHON: fprintf(f, "{\"id\":\"j%d\",\"python\":\"print(%d * %d)\"}\n", i, i, i); break;
    case K_SHELL: fprintf(f, "{\"id\":\"j%d\",\"image\":\"busybox\",\"shell\":\"echo line-%d\"}\n", i, i); break;
    }
    if (i == 50) fputs("\n", f);   /* a blank line is no job */
  }
  fclose(f);
}

static const char junit_py[] =
    "import json, sys, xml.etree.ElementTree as ET\n"
    "top = ET.parse(sys.argv[1]).getroot()\n"
    "s = top.find('testsuite')\n"
    "o = {'top': top.tag, 'tests': int(s.get('tests')), 'failures': int(s.get('failures')),\n"
    "     'errors': int(s.get('errors')), 'cases': {}, 'out': {}}\n"
    "for c in s.findall('testcase'):\n"
    "    f, e = c.find('failure'), c.find('error')\n"
    "    o['cases'][c.get('name')] = 'failure:' + f.get('type') if f is not None else ('error' if e is not None else 'passed')\n"
    "    so = c.find('system-out')\n"
    "    o['out'][c.get('name')] = so.text if so is not None else ''\n"
    "print(json.dumps(o))\n";

Test(batch, two_hundred_jobs_results_and_junit_line_by_line) {
  import_image("python");
  write_200("jobs.jsonl");
  /* strict (the default): the malformed line refuses the file before anything runs */
  cr_assert_eq(an("batch -j2 --results strict.jsonl jobs.jsonl"), 125, "%s", err_text);
  cr_expect(strstr(err_text, "line 102") && strstr(err_text, "member \"cmd\""), "%s", err_text);
  char *strict = read_work("strict.jsonl");
  cr_expect_str_eq(strict, "", "records were written although the file was refused");
  free(strict);

  int st = an("batch -j2 --lenient --results res.jsonl --junit junit.xml --output-dir outd jobs.jsonl");
  cr_assert_eq(st, 1, "exit %d: %s", st, err_text);
  /* off a terminal: a line per finished job, then the summary table */
  cr_expect(strstr(err_text, "batch: [200/200] "), "%.2000s", err_text);
  cr_expect(strstr(err_text, "\n  failed             20\n") && strstr(err_text, "\n  timed_out"), "%s",
            strstr(err_text, "batch summary") ? strstr(err_text, "batch summary") : err_text);
  cr_expect(strstr(err_text, "\n  total             200") && strstr(err_text, "slowest: "), "summary table");
  char *text = read_work("res.jsonl");
  static yajl_val recs[400];
  size_t n = parse_records(text, recs, 400);
  free(text);
  cr_assert_eq(n, 200, "%zu records", n);
  int counts[8] = {0};
  for (int i = 0; i < 200; i++) {
    char id[16];
    snprintf(id, sizeof id, "j%d", i);
    yajl_val r = find_record(recs, n, id);
    cr_assert_not_null(r, "no record of %s", id);
    const char *res = jstr(r, "result");
    cr_assert_not_null(res, "%s: no result", id);
    cr_expect_eq(jint(r, "attempt", 0), 1, "%s attempt", id);
    cr_expect_eq(jint(r, "line", 0), i < 51 ? i + 1 : i + 2, "%s line", id);
    cr_expect(jstr(r, "started") && jstr(r, "ended"), "%s: times", id);
    const char *out = jstr(r, "stdout");
    char want[64];
    switch (kind_of(i)) {
    case K_SHELL:
      cr_expect_str_eq(res, "passed", "%s", id);
      snprintf(want, sizeof want, "line-%d\n", i);
      cr_expect_str_eq(out ? out : "", want, "%s stdout", id);
      counts[0]++;
      break;
    case K_PYTHON:
      cr_expect_str_eq(res, "passed", "%s: %s", id, jstr(r, "reason"));
      snprintf(want, sizeof want, "%d\n", i * i);
      cr_expect_str_eq(out ? out : "", want, "%s stdout", id);
      counts[1]++;
      break;
    case K_XML: cr_expect_str_eq(res, "passed", "%s", id); break;
    case K_FAIL:
      cr_expect_str_eq(res, "failed", "%s", id);
      cr_expect_eq(jint(r, "exit_code", -1), i % 7 + 1, "%s exit code", id);
      cr_expect_str_eq(jstr(r, "stderr"), "failing\n", "%s stderr", id);
      snprintf(want, sizeof want, "exit code %d", i % 7 + 1);
      cr_expect_str_eq(jstr(r, "reason"), want, "%s reason", id);
      counts[2]++;
      break;
    case K_TIMEOUT:
      cr_expect_str_eq(res, "timed_out", "%s", id);
      cr_expect(jtrue(r, "timed_out"), "%s", id);
      cr_expect_eq(jint(r, "status", 0), 124, "%s", id);
      counts[3]++;
      break;
    case K_OOM:
      cr_expect_str_eq(res, "oom_killed", "%s: %s", id, jstr(r, "reason"));
      cr_expect(jtrue(r, "oom_killed"), "%s", id);
      break;
    case K_BOMB:
      /* contained by pids: it cannot pass, and its sandbox is gone (checked below) */
      cr_expect(!strcmp(res, "timed_out") || !strcmp(res, "failed"), "%s: %s", id, res);
      break;
    case K_GET: {
      cr_expect_str_eq(res, "passed", "%s: %s", id, jstr(r, "reason"));
      const char *ap[] = {"artifacts", NULL};
      yajl_val arts = yajl_tree_get(r, ap, yajl_t_array);
      cr_assert(arts && arts->u.array.len == 1, "%s: artifacts", id);
      yajl_val a = arts->u.array.values[0];
      char path[64], content[64], sha[65];
      snprintf(path, sizeof path, "out/a%d.txt", i);
      snprintf(content, sizeof content, "art-%d", i);
      sha256_hex(content, sha);
      cr_expect_str_eq(jstr(a, "path"), path);
      cr_expect_eq(jint(a, "size", -1), (long long) strlen(content));
      cr_expect_str_eq(jstr(a, "sha256"), sha, "%s sha256", id);
      cr_expect(jtrue(a, "copied"));
      char rel[128];
      snprintf(rel, sizeof rel, "outd/%s/artifacts/%s", id, path);
      char *copy = read_work(rel);
      cr_expect_str_eq(copy, content, "%s: the copied artifact", rel);
      free(copy);
      counts[4]++;
      break;
    }
    case K_BAD:
      cr_expect_str_eq(res, "error", "%s", id);
      cr_expect(jstr(r, "reason") && strstr(jstr(r, "reason"), "line 102") &&
                strstr(jstr(r, "reason"), "member \"cmd\""), "%s reason: %s", id, jstr(r, "reason"));
      cr_expect_eq(jint(r, "status", 0), 125);
      break;
    }
    /* the output directory has the full streams */
    if (kind_of(i) == K_SHELL && i < 20) {
      char rel[64];
      snprintf(rel, sizeof rel, "outd/%s/stdout", id);
      char *o = read_work(rel);
      snprintf(want, sizeof want, "line-%d\n", i);
      cr_expect_str_eq(o, want, "%s", rel);
      free(o);
    }
  }
  cr_expect_eq(counts[2], 20);
  cr_expect_eq(counts[3], 5);
  cr_expect_eq(counts[4], 5);

  /* JUnit through a real XML parser: one test case per job, failures typed */
  write_text("junit.py", junit_py);
  cr_assert_eq(an_test_sh("cd '%s' && python3 junit.py junit.xml > junit.json 2> junit.err", work), 0,
               "JUnit does not parse: %s", read_work("junit.err"));
  char *jt = read_work("junit.json");
  char e[256] = "";
  yajl_val j = yajl_tree_parse(jt, e, sizeof e);
  cr_assert_not_null(j, "%s", jt);
  free(jt);
  cr_expect_str_eq(jstr(j, "top"), "testsuites");
  cr_expect_eq(jint(j, "tests", 0), 200);
  /* failures: 20 failed + 5 timed out + OOM + the fork bomb; errors: the bad line */
  cr_expect_eq(jint(j, "failures", 0), 27);
  cr_expect_eq(jint(j, "errors", 0), 1);
  const char *cp[] = {"cases", NULL};
  yajl_val cases = yajl_tree_get(j, cp, yajl_t_object);
  cr_assert(cases && cases->u.object.len == 200, "JUnit test cases");
  for (int i = 0; i < 200; i++) {
    char id[16];
    snprintf(id, sizeof id, "j%d", i);
    const char *c = jstr(cases, id);
    const char *res = jstr(find_record(recs, n, id), "result");
    cr_assert(c && res, "%s", id);
    if (!strcmp(res, "passed")) cr_expect_str_eq(c, "passed", "%s", id);
    else if (!strcmp(res, "error")) cr_expect_str_eq(c, "error", "%s", id);
    else {
      char want[64];
      snprintf(want, sizeof want, "failure:%s", res);
      cr_expect_str_eq(c, want, "%s", id);
    }
  }
  /* XML-hostile output is escaped (a control character becomes U+FFFD) */
  const char *op[] = {"out", "j2", NULL};
  yajl_val o2 = yajl_tree_get(j, op, yajl_t_string);
  cr_expect(o2 && !strcmp(o2->u.string, "<a&b>\xEF\xBF\xBD\"\n"), "j2 system-out: %s", o2 ? o2->u.string : "none");
  yajl_tree_free(j);
  free_records(recs, n);
  assert_nothing_left();
}

/* ---- crash safety -------------------------------------------------------------------------- */

static void write_sleepers(const char *name, int njobs) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", work, name);
  FILE *f = fopen(p, "we");
  cr_assert_not_null(f);
  for (int i = 0; i < njobs; i++)
    fprintf(f, "{\"id\":\"k%d\",\"image\":\"busybox\",\"shell\":\"sleep 0.2; echo k%d; exit %d\"}\n", i, i,
            i % 9 == 0);
  fclose(f);
}

/* Start `agentnest --root ROOT batch ARGS...` (stdout/stderr to files). */
static pid_t start_batch(const char *const *args) {
  const char *argv[32] = {an_bin, "--root", root, "batch"};
  size_t n = 4;
  for (; *args && n < 31; args++) argv[n++] = *args;
  argv[n] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  char o[700], e[700];
  snprintf(o, sizeof o, "%s/.bout", work);
  snprintf(e, sizeof e, "%s/.berr", work);
  posix_spawn_file_actions_addopen(&fa, 1, o, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, e, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  char cwd[512];
  cr_assert_not_null(getcwd(cwd, sizeof cwd));
  cr_assert_eq(chdir(work), 0);
  int r = posix_spawn(&pid, an_bin, &fa, NULL, (char *const *) argv, environ);
  cr_assert_eq(chdir(cwd), 0);
  posix_spawn_file_actions_destroy(&fa);
  cr_assert_eq(r, 0, "spawn: %s", strerror(r));
  return pid;
}

static int wait_status(pid_t pid) {
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(batch, sigkill_at_random_points_then_resume_records_each_job_once) {
  const int njobs = 60;
  write_sleepers("jobs.jsonl", njobs);
  srand((unsigned) time(NULL) ^ (unsigned) getpid());
  const char *first[] = {"-j2", "--results", "res.jsonl", "jobs.jsonl", NULL};
  const char *again[] = {"-j2", "--results", "res.jsonl", "--resume", "jobs.jsonl", NULL};
  for (int round = 0; round < 4; round++) {
    pid_t pid = start_batch(round ? again : first);
    usleep(400000 + (useconds_t) (rand() % 900) * 1000);
    kill(pid, SIGKILL);
    /* on a fast host a late round may have finished the batch before the kill */
    int st = wait_status(pid);
    cr_assert(st == 128 + SIGKILL || st == 0 || st == 1, "round %d: exit %d: %s", round, st, read_work(".berr"));
    if (round == 1) {
      /* a record the kill cut short: resume must drop it, not fail or keep it */
      char p[400];
      snprintf(p, sizeof p, "%s/res.jsonl", work);
      int fd = open(p, O_WRONLY | O_APPEND);
      cr_assert_geq(fd, 0);
      cr_assert_eq(write(fd, "{\"id\":\"k39\",\"line\":40,\"res", 26), 26);
      close(fd);
    }
    /* the killed batch's sandboxes are dead ones: prune removes them (rounds
     * 0 and 1); else the next --resume does, from its journal (rounds 2, 3) */
    usleep(100000);
    remember_store_sandboxes();
    if (round < 2) cr_assert_eq(an("prune"), 0, "%s", err_text);
  }
  int fin = wait_status(start_batch(again));
  cr_assert_eq(fin, 1, "final run: exit %d: %s", fin, read_work(".berr"));   /* k0, k9, ... fail */
  char *text = read_work("res.jsonl");
  static yajl_val recs[200];
  size_t n = parse_records(text, recs, 200);
  free(text);
  cr_expect_eq(n, (size_t) njobs, "%zu records for %d jobs", n, njobs);
  int retried = 0;
  for (int i = 0; i < njobs; i++) {
    char id[16];
    snprintf(id, sizeof id, "k%d", i);
    yajl_val r = find_record(recs, n, id);   /* asserts: never twice */
    cr_assert_not_null(r, "no record of %s", id);
    cr_expect_str_eq(jstr(r, "result"), i % 9 == 0 ? "failed" : "passed", "%s", id);
    if (jint(r, "attempt", 0) > 1) retried++;
  }
  cr_expect_gt(retried, 0, "no job was interrupted and rerun (attempt 2)");
  free_records(recs, n);
  assert_nothing_left();
}

Test(batch, sigterm_ends_running_jobs_and_leaves_nothing) {
  char jobs[2048] = "";
  for (int i = 0; i < 6; i++) {
    char l[160];
    snprintf(l, sizeof l, "{\"id\":\"t%d\",\"image\":\"busybox\",\"cmd\":[\"sleep\",\"60\"]}\n", i);
    strcat(jobs, l);
  }
  write_text("jobs.jsonl", jobs);
  const char *args[] = {"-j2", "--results", "res.jsonl", "jobs.jsonl", NULL};
  pid_t pid = start_batch(args);
  /* wait until both jobs run (their starts are journaled) */
  for (int k = 0; k < 300; k++) {
    char *jn = read_work("res.jsonl.journal");
    int lines = 0;
    for (char *p = jn; *p; p++) lines += *p == '\n';
    free(jn);
    if (lines >= 2) break;
    usleep(50000);
  }
  usleep(500000);
  remember_store_sandboxes();
  kill(pid, SIGTERM);
  cr_assert_eq(wait_status(pid), 143, "%s", read_work(".berr"));
  char *res = read_work("res.jsonl");
  cr_expect_str_eq(res, "", "an interrupted job was recorded");
  free(res);
  /* no prune: the batch removed its sandboxes itself */
  assert_nothing_left();
  /* and a resume runs them again as attempt 2 */
}

/* ---- sharding and refusals ----------------------------------------------------------------- */

Test(batch, shards_1_2_3_of_3_cover_every_job_once) {
  char p[700];
  snprintf(p, sizeof p, "%s/jobs.jsonl", work);
  FILE *f = fopen(p, "we");
  cr_assert_not_null(f);
  for (int i = 0; i < 31; i++) fprintf(f, "{\"id\":\"s%d\",\"image\":\"busybox\",\"cmd\":[\"true\"]}\n", i);
  fclose(f);
  for (int k = 1; k <= 3; k++)
    cr_assert_eq(an("batch -j2 --shard %d/3 --results shard%d.jsonl jobs.jsonl", k, k), 0, "%s", err_text);
  /* shard result files merge by concatenation */
  cr_assert_eq(an_test_sh("cd '%s' && cat shard1.jsonl shard2.jsonl shard3.jsonl > all.jsonl", work), 0);
  char *text = read_work("all.jsonl");
  static yajl_val recs[100];
  size_t n = parse_records(text, recs, 100);
  free(text);
  cr_expect_eq(n, 31);
  for (int i = 0; i < 31; i++) {
    char id[16];
    snprintf(id, sizeof id, "s%d", i);
    cr_expect_not_null(find_record(recs, n, id), "%s in no shard", id);
  }
  free_records(recs, n);
  char *s1 = read_work("shard1.jsonl");
  int lines = 0;
  for (char *q = s1; *q; q++) lines += *q == '\n';
  free(s1);
  cr_expect_eq(lines, 11, "shard 1/3 of 31 jobs");
  cr_expect_eq(an("batch --shard 4/3 jobs.jsonl"), 125);
  cr_expect(strstr(err_text, "--shard 4/3"), "%s", err_text);
  assert_nothing_left();
}

Test(batch, duplicate_id_and_unknown_member_refuse_the_file) {
  write_text("dup.jsonl", "{\"id\":\"a\",\"cmd\":[\"true\"]}\n{\"id\":\"b\",\"cmd\":[\"true\"],\"memroy\":\"1g\"}\n"
                          "{\"id\":\"a\",\"cmd\":[\"true\"]}\n");
  cr_assert_eq(an("batch --image busybox --results r.jsonl dup.jsonl"), 125);
  cr_expect(strstr(err_text, "line 2: member \"memroy\": unknown"), "%s", err_text);
  cr_expect(strstr(err_text, "line 3: member \"id\": \"a\" repeats the id of line 1"), "%s", err_text);
  char *r = read_work("r.jsonl");
  cr_expect_str_eq(r, "");
  free(r);
  cr_expect_eq(an("batch --help"), 0);
  cr_expect(strstr(out_text, "Usage: agentnest batch"), "%s", out_text);
  cr_expect_eq(an("batch --resume jobs.jsonl"), 125);
  cr_expect(strstr(err_text, "--resume needs --results"), "%s", err_text);
  assert_nothing_left();
}

/* `cat jobs.jsonl | agentnest --root ROOT ARGS` (a pipe, not a file, on stdin). */
static int an_pipe(const char *args) {
  int st = an_test_sh("cd '%s' && cat jobs.jsonl | '%s' --root '%s' %s >'%s/.out' 2>'%s/.err'", work, an_bin,
                      root, args, work, work);
  free(err_text);
  err_text = read_work(".err");
  return st;
}

/* JOBS from a pipe (spooled, then streamed twice); --fail-fast stops
 * starting jobs after the first failure, and --resume later runs the rest. */
Test(batch, jobs_from_standard_input_fail_fast_then_resume) {
  write_text("jobs.jsonl", "{\"id\":\"a\",\"cmd\":[\"true\"]}\n{\"id\":\"b\",\"cmd\":[\"false\"]}\n"
                           "{\"id\":\"c\",\"cmd\":[\"true\"]}\n{\"id\":\"d\",\"cmd\":[\"true\"]}\n");
  cr_assert_eq(an_pipe("batch -j1 --image busybox --fail-fast --results r.jsonl -"), 1, "%s", err_text);
  cr_expect(strstr(err_text, "--fail-fast"), "%s", err_text);
  /* the summary counts the 4 jobs of the pipe (validated from the spool), 2 not run */
  cr_expect(strstr(err_text, "\n  total               4") && strstr(err_text, "\n  not run             2"),
            "%s", err_text);
  char *text = read_work("r.jsonl");
  static yajl_val recs[10];
  size_t n = parse_records(text, recs, 10);
  free(text);
  cr_assert_eq(n, 2, "records after fail-fast: %zu", n);
  cr_expect_str_eq(jstr(find_record(recs, n, "b"), "result"), "failed");
  free_records(recs, n);
  cr_assert_eq(an_pipe("batch -j1 --image busybox --results r.jsonl --resume -"), 1, "%s", err_text);
  text = read_work("r.jsonl");
  n = parse_records(text, recs, 10);
  free(text);
  cr_expect_eq(n, 4, "records after resume: %zu", n);
  /* a malformed line on a pipe refuses the batch before anything runs */
  write_text("jobs.jsonl", "{\"id\":\"e\",\"cmd\":[\"true\"]}\n{\"id\":\"x\"}\n");
  cr_expect_eq(an_pipe("batch -j1 --image busybox --results r2.jsonl -"), 125, "%s", err_text);
  cr_expect(strstr(err_text, "line 2: no command"), "%s", err_text);
  char *r2 = read_work("r2.jsonl");
  cr_expect_str_eq(r2, "", "a job ran although the file was refused");
  free(r2);
  const char *ids[] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; i++) cr_expect_not_null(find_record(recs, n, ids[i]), "%s", ids[i]);
  free_records(recs, n);
  assert_nothing_left();
}

/* --max-memory admits a job only while the running jobs' memory limits fit:
 * 512m jobs under 1g run two at once even with -j4 (each job's interval,
 * started..ended, is taken by its own process before and after its sandbox,
 * and the next job forks only after a job process has ended, so this is an
 * order of events, not a measure of time); a limit above it alone is an
 * "error" record. */
Test(batch, max_memory_admits_jobs_by_their_memory_limits) {
  char jobs[4096] = "";
  for (int i = 0; i < 6; i++) {
    char l[200];
    snprintf(l, sizeof l, "{\"id\":\"m%d\",\"image\":\"busybox\",\"memory\":\"512m\",\"cmd\":[\"sleep\",\"0.2\"]}\n", i);
    strcat(jobs, l);
  }
  strcat(jobs, "{\"id\":\"huge\",\"image\":\"busybox\",\"memory\":\"2g\",\"cmd\":[\"true\"]}\n");
  write_text("jobs.jsonl", jobs);
  cr_assert_eq(an("batch -j4 --max-memory 1g --results r.jsonl jobs.jsonl"), 1, "%s", err_text);
  char *text = read_work("r.jsonl");
  static yajl_val recs[20];
  size_t n = parse_records(text, recs, 20);
  free(text);
  cr_assert_eq(n, 7);
  yajl_val h = find_record(recs, n, "huge");
  cr_assert_not_null(h);
  cr_expect_str_eq(jstr(h, "result"), "error");
  cr_expect(jstr(h, "reason") && strstr(jstr(h, "reason"), "exceeds --max-memory 1GiB"), "%s", jstr(h, "reason"));
  int most = 0;
  for (size_t i = 0; i < n; i++) {
    if (!strcmp(jstr(recs[i], "id"), "huge")) continue;
    cr_expect_str_eq(jstr(recs[i], "result"), "passed");
    const char *t = jstr(recs[i], "started");
    int at = 0;   /* jobs running when job i started (itself included) */
    for (size_t k = 0; k < n; k++)
      if (strcmp(jstr(recs[k], "id"), "huge") && strcmp(jstr(recs[k], "started"), t) <= 0 &&
          strcmp(t, jstr(recs[k], "ended")) < 0)
        at++;
    if (at > most) most = at;
  }
  cr_expect_leq(most, 2, "%d jobs of 512m ran at once under --max-memory 1g", most);
  free_records(recs, n);
  assert_nothing_left();
}

/* --drain: on SIGTERM no job starts, the running ones finish and are
 * recorded; the exit status is still 143. */
Test(batch, drain_lets_running_jobs_finish_on_sigterm) {
  char jobs[2048] = "";
  for (int i = 0; i < 6; i++) {
    char l[160];
    snprintf(l, sizeof l, "{\"id\":\"d%d\",\"image\":\"busybox\",\"shell\":\"sleep 1; echo d%d\"}\n", i, i);
    strcat(jobs, l);
  }
  write_text("jobs.jsonl", jobs);
  const char *args[] = {"-j2", "--drain", "--results", "res.jsonl", "jobs.jsonl", NULL};
  pid_t pid = start_batch(args);
  for (int k = 0; k < 300; k++) {   /* until both jobs have started */
    char *jn = read_work("res.jsonl.journal");
    int lines = 0;
    for (char *p = jn; *p; p++) lines += *p == '\n';
    free(jn);
    if (lines >= 2) break;
    usleep(50000);
  }
  kill(pid, SIGTERM);
  cr_assert_eq(wait_status(pid), 143, "%s", read_work(".berr"));
  char *text = read_work("res.jsonl");
  static yajl_val recs[10];
  size_t n = parse_records(text, recs, 10);
  free(text);
  cr_expect_eq(n, 2, "the 2 running jobs are recorded, no other starts: %zu", n);
  for (size_t i = 0; i < n; i++) cr_expect_str_eq(jstr(recs[i], "result"), "passed", "%s", jstr(recs[i], "id"));
  free_records(recs, n);
  assert_nothing_left();
}

/* The JOBS file is streamed: a 100 MB file (25,000 jobs of 4 KB) is
 * validated and sharded with the batch's peak RSS far below its size. */
Test(batch, memory_stays_bounded_on_a_100_mb_file) {
  char p[700];
  snprintf(p, sizeof p, "%s/big.jsonl", work);
  FILE *f = fopen(p, "we");
  cr_assert_not_null(f);
  static char pad[4001];
  memset(pad, 'x', 4000);
  for (int i = 0; i < 25000; i++)
    fprintf(f, "{\"id\":\"b%d\",\"image\":\"busybox\",\"cmd\":[\"true\"],\"env\":{\"PAD\":\"%s\"}}\n", i, pad);
  cr_assert_eq(fclose(f), 0);
  const char *args[] = {"--shard", "1/12500", "--results", "r.jsonl", "big.jsonl", NULL};
#ifdef __SANITIZE_ADDRESS__
  /* an ASan build keeps freed memory in quarantine (256 MB by default) */
  const char *ao = getenv("ASAN_OPTIONS");
  char opts[512];
  snprintf(opts, sizeof opts, "%s%squarantine_size_mb=0", ao ? ao : "", ao && *ao ? ":" : "");
  setenv("ASAN_OPTIONS", opts, 1);
#endif
  pid_t pid = start_batch(args);
  int st;
  struct rusage ru;
  cr_assert_eq(wait4(pid, &st, 0, &ru), pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, read_work(".berr"));
  char *text = read_work("r.jsonl");
  static yajl_val recs[4];
  size_t n = parse_records(text, recs, 4);
  free(text);
  cr_expect_eq(n, 2, "shard 1/12500 of 25000 jobs: %zu records", n);
  free_records(recs, n);
  cr_expect_lt(ru.ru_maxrss, 48 * 1024, "peak RSS %ld KiB for a 100 MB file", ru.ru_maxrss);
  unlink(p);
  assert_nothing_left();
}
