/* tests/lib/batch_fixture.c — see batch_fixture.h. */
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
#include <sys/wait.h>
#include <unistd.h>
#include "batch_fixture.h"
#include "rm_tree.h"
#include "util.h"

#define CACHE "/var/cache/agentnest/images"
#define MAX_IDS 4096

extern char **environ;

char bf_an_bin[4096];
char bf_root[256];   /* this test's store */
char bf_work[300];   /* this test's scratch dir */
char *bf_out, *bf_err;
/* every sandbox id this test's store held, for the host check */
static char *sb_ids[MAX_IDS];
static size_t nsb;

static char *slurp(const char *path) {
  char *s = an_test_read_file(path, NULL);
  return s ? s : strdup("");
}

/* Run `agentnest --root ROOT <args>` through sh in the scratch dir. */
int bf_an(const char *fmt, ...) {
  char *args = NULL;
  va_list ap;
  va_start(ap, fmt);
  cr_assert_geq(vasprintf(&args, fmt, ap), 0);
  va_end(ap);
  int st = an_test_sh("cd '%s' && '%s' --root '%s' %s >'%s/.out' 2>'%s/.err'", bf_work, bf_an_bin, bf_root,
                      args, bf_work, bf_work);
  free(args);
  char p[700];
  free(bf_out);
  free(bf_err);
  snprintf(p, sizeof p, "%s/.out", bf_work);
  bf_out = slurp(p);
  snprintf(p, sizeof p, "%s/.err", bf_work);
  bf_err = slurp(p);
  return st;
}

static void remember_sandbox(const char *id) {
  if (!id || !*id || nsb >= MAX_IDS) return;
  for (size_t i = 0; i < nsb; i++)
    if (!strcmp(sb_ids[i], id)) return;
  sb_ids[nsb++] = strdup(id);
}

/* Remember the sandboxes the store holds now (before a prune removes them),
 * the destroyed ones whose reaper is at work too. */
void bf_remember_store_sandboxes(void) {
  static const char *const areas[] = {"sandboxes", "sandbox-reaping"};
  for (size_t a = 0; a < 2; a++) {
    char p[700];
    snprintf(p, sizeof p, "%s/%s", bf_root, areas[a]);
    DIR *d = opendir(p);
    if (!d) continue;
    struct dirent *de;
    while ((de = readdir(d)))
      if (de->d_name[0] != '.') remember_sandbox(de->d_name);
    closedir(d);
  }
}


void bf_import_image(const char *name) {
  char lay[300];
  struct stat st;
  snprintf(lay, sizeof lay, CACHE "/%s/layout", name);
  if (stat(lay, &st) != 0) {
    bf_teardown();   /* criterion runs no .fini after a skip: the store and work dir go now */
    cr_skip_test("no %s image in " CACHE " (make images)", name);
  }
  cr_assert_eq(bf_an("image import '%s' --name %s", lay, name), 0, "import %s: %s", name, bf_err);
}

/* busybox for every test; python where a test needs it */
void bf_setup(void) {
  const char *b = getenv("AN_TEST_BUILD");
  char rel[4096];
  snprintf(rel, sizeof rel, "%s/agentnest", b && *b ? b : "./build");
  cr_assert_not_null(realpath(rel, bf_an_bin), "agentnest not built at %s", rel);
  const char *src = getenv("AN_TEST_SRC");
  char prof[4096], real[4096];
  snprintf(prof, sizeof prof, "%s/profiles", src && *src ? src : ".");
  if (realpath(prof, real)) setenv("AGENTNEST_PROFILES", real, 1);
  snprintf(bf_root, sizeof bf_root, "/tmp/an-batch-%d-%d", (int) getppid(), (int) getpid());
  snprintf(bf_work, sizeof bf_work, "%s-work", bf_root);
  cr_assert(mkdir(bf_root, 0755) == 0 || errno == EEXIST);
  cr_assert(mkdir(bf_work, 0700) == 0 || errno == EEXIST);
  bf_import_image("busybox");
}

void bf_teardown(void) {
  an_test_store_remove(bf_root);
  an_test_rm_tree(bf_work);
  for (size_t i = 0; i < nsb; i++) free(sb_ids[i]);
  nsb = 0;
  free(bf_out);
  free(bf_err);
  bf_out = bf_err = NULL;
}

/* ---- helpers ------------------------------------------------------------------------------ */

void bf_write_text(const char *name, const char *text) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", bf_work, name);
  an_test_write_file(p, text, strlen(text), 0644);
}

char *bf_read_work(const char *name) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", bf_work, name);
  return slurp(p);
}

const char *bf_jstr(yajl_val v, const char *k) {
  const char *path[] = {k, NULL};
  yajl_val s = yajl_tree_get(v, path, yajl_t_string);
  return s ? s->u.string : NULL;
}

long long bf_jint(yajl_val v, const char *k, long long dflt) {
  const char *path[] = {k, NULL};
  yajl_val n = yajl_tree_get(v, path, yajl_t_number);
  return n && YAJL_IS_INTEGER(n) ? YAJL_GET_INTEGER(n) : dflt;
}

bool bf_jtrue(yajl_val v, const char *k) {
  const char *path[] = {k, NULL};
  return YAJL_IS_TRUE(yajl_tree_get(v, path, yajl_t_any));
}

/* The records of a results text: every line must be a JSON object. */
size_t bf_parse_records(const char *text, yajl_val *recs, size_t max) {
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
    remember_sandbox(bf_jstr(v, "sandbox"));
    p = nl + 1;
  }
  return n;
}

void bf_free_records(yajl_val *recs, size_t n) {
  for (size_t i = 0; i < n; i++) yajl_tree_free(recs[i]);
}

yajl_val bf_find_record(yajl_val *recs, size_t n, const char *id) {
  yajl_val found = NULL;
  for (size_t i = 0; i < n; i++)
    if (bf_jstr(recs[i], "id") && !strcmp(bf_jstr(recs[i], "id"), id)) {
      cr_assert_null(found, "job %s recorded twice", id);
      found = recs[i];
    }
  return found;
}

void bf_sha256_hex(const char *s, char out[65]) {
  unsigned char md[32];
  unsigned int l = 0;
  EVP_Digest(s, strlen(s), md, &l, EVP_sha256(), NULL);
  for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", md[i]);
}

/* Nothing of this test's store is left on the host once the reapers of its
 * destroyed sandboxes are done: no sandbox state, no
 * cgroup of any of its sandboxes in any hierarchy, no process started with
 * its --root, no mount under it. */
void bf_assert_nothing_left(void) {
  bf_remember_store_sandboxes();
  /* teardown after the result: the reapers of the last sandboxes may still
   * be at work (bounded wait, polling; the time is not asserted) */
  cr_expect(an_test_wait_reaped(bf_root), "a destroyed sandbox's reaper did not finish");
  char p[700];
  snprintf(p, sizeof p, "%s/sandboxes", bf_root);
  DIR *d = opendir(p);
  if (d) {
    struct dirent *de;
    while ((de = readdir(d))) {
      /* a create killed before its directory got its name (.new-*) counts */
      if (de->d_name[0] == '.' && strncmp(de->d_name, ".new-", 5)) continue;
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
      if (!strcmp(cmd + k, bf_root)) ours = true;
    free(cmd);
    cr_expect(!ours, "process %s of this store is left", de->d_name);
  }
  closedir(pd);
  char *mi = an_test_read_file("/proc/self/mountinfo", NULL);
  cr_assert_not_null(mi);
  cr_expect(strstr(mi, bf_root) == NULL, "a mount under %s is left", bf_root);
  free(mi);
}

pid_t bf_start_batch(const char *const *args) {
  const char *argv[32] = {bf_an_bin, "--root", bf_root, "batch"};
  size_t n = 4;
  for (; *args && n < 31; args++) argv[n++] = *args;
  argv[n] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  char o[700], e[700];
  snprintf(o, sizeof o, "%s/.bout", bf_work);
  snprintf(e, sizeof e, "%s/.berr", bf_work);
  posix_spawn_file_actions_addopen(&fa, 1, o, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, e, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  char cwd[512];
  cr_assert_not_null(getcwd(cwd, sizeof cwd));
  cr_assert_eq(chdir(bf_work), 0);
  int r = posix_spawn(&pid, bf_an_bin, &fa, NULL, (char *const *) argv, environ);
  cr_assert_eq(chdir(cwd), 0);
  posix_spawn_file_actions_destroy(&fa);
  cr_assert_eq(r, 0, "spawn: %s", strerror(r));
  return pid;
}

int bf_wait_status(pid_t pid) {
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int bf_an_pipe(const char *args) {
  int st = an_test_sh("cd '%s' && cat jobs.jsonl | '%s' --root '%s' %s >'%s/.out' 2>'%s/.err'", bf_work, bf_an_bin,
                      bf_root, args, bf_work, bf_work);
  free(bf_err);
  bf_err = bf_read_work(".err");
  return st;
}
