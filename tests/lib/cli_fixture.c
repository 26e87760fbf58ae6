/* tests/lib/cli_fixture.c — see cli_fixture.h. */
#include "cli_fixture.h"
#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "rm_tree.h"
#include "util.h"

struct an_cli_fixture an_cli;

static void find_bin(char *out) {
  const char *b = getenv("AN_TEST_BUILD");
  char rel[PATH_MAX];
  snprintf(rel, sizeof rel, "%s/agentnest", b && *b ? b : "./build");
  if (!realpath(rel, out)) out[0] = 0;
}

void an_cli_setup(const char *tag, mode_t work_mode) {
  find_bin(an_cli.bin);
  cr_assert(an_cli.bin[0], "agentnest not built (AN_TEST_BUILD=%s)", getenv("AN_TEST_BUILD"));
  const char *src = getenv("AN_TEST_SRC");
  char prof[PATH_MAX], real[PATH_MAX];
  snprintf(prof, sizeof prof, "%s/profiles", src && *src ? src : ".");
  if (realpath(prof, real)) setenv("AGENTNEST_PROFILES", real, 1);
  snprintf(an_cli.root, sizeof an_cli.root, "/tmp/an-%s-%d", tag, (int) getppid());
  mkdir(an_cli.root, 0755);
  snprintf(an_cli.work, sizeof an_cli.work, "/tmp/an-%s-%d-%d", tag, (int) getppid(), (int) getpid());
  cr_assert(mkdir(an_cli.work, work_mode) == 0 || errno == EEXIST, "mkdir %s: %s", an_cli.work,
            strerror(errno));
  cr_assert_eq(chmod(an_cli.work, work_mode), 0);
  snprintf(an_cli.out_path, sizeof an_cli.out_path, "%s/.out", an_cli.work);
  snprintf(an_cli.err_path, sizeof an_cli.err_path, "%s/.err", an_cli.work);
}

void an_cli_teardown(void) {
  free(an_cli.out);
  free(an_cli.err);
  an_cli.out = an_cli.err = NULL;
  if (an_cli.work[0]) an_test_rm_tree(an_cli.work);
}

void an_cli_remove_root(const char *tag) {
  char r[256], bin[PATH_MAX];
  snprintf(r, sizeof r, "/tmp/an-%s-%d", tag, (int) getpid());
  struct stat st;
  if (stat(r, &st) != 0) return;
  find_bin(bin);
  an_test_wait_reaped(r);
  if (bin[0]) an_test_sh("'%s' --root '%s' prune --all >/dev/null 2>&1", bin, r);
  an_test_rm_tree(r);
  /* the tests' work directories (an_cli_setup): a test's .fini removes its
   * own, but criterion runs no .fini for a test that skipped itself */
  an_test_sh("rm -rf /tmp/an-%s-%d-[0-9]*", tag, (int) getpid());
}

static char *slurp(const char *path) {
  char *s = an_test_read_file(path, NULL);
  return s ? s : strdup("");
}

static int run_v(int (*child_hook)(void), const char *store, const char *fmt, va_list ap) {
  char *args = NULL, *cmd = NULL;
  cr_assert_geq(vasprintf(&args, fmt, ap), 0);
  cr_assert_geq(asprintf(&cmd, "cd '%s' && '%s' --root '%s' %s >'%s' 2>'%s'", an_cli.work, an_cli.bin,
                         store ? store : an_cli.root, args, an_cli.out_path, an_cli.err_path), 0);
  an_test_write_file(an_cli.out_path, "", 0, 0666);
  an_test_write_file(an_cli.err_path, "", 0, 0666);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    if (child_hook && child_hook() != 0) _exit(99);
    execl("/bin/sh", "sh", "-c", cmd, (char *) NULL);
    _exit(97);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) cr_assert_eq(errno, EINTR);
  free(args);
  free(cmd);
  free(an_cli.out);
  free(an_cli.err);
  an_cli.out = slurp(an_cli.out_path);
  an_cli.err = slurp(an_cli.err_path);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int an_cli_run(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = run_v(NULL, NULL, fmt, ap);
  va_end(ap);
  return r;
}

int an_cli_run_with(int (*child_hook)(void), const char *store, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = run_v(child_hook, store, fmt, ap);
  va_end(ap);
  return r;
}

const char *an_cli_image_layout(const char *name, char *buf, size_t len) {
  const char *cache = getenv("AN_IMAGE_CACHE");
  snprintf(buf, len, "%s/%s/layout", cache && *cache ? cache : "/var/cache/agentnest/images", name);
  return buf;
}

void an_cli_import(const char *name) {
  char lay[512];
  an_cli_image_layout(name, lay, sizeof lay);
  struct stat st;
  if (stat(lay, &st) != 0) cr_skip_test("no %s image at %s (make images)", name, lay);
  char stamp[400];
  snprintf(stamp, sizeof stamp, "%s/.imported-%s", an_cli.root, name);
  if (stat(stamp, &st) == 0) return;
  cr_assert_eq(an_cli_run("image import '%s' --name %s", lay, name), 0, "import %s: %s", name, an_cli.err);
  an_test_write_file(stamp, "", 0, 0644);
}

yajl_val an_cli_json(const char *text) {
  char e[256] = "";
  yajl_val v = yajl_tree_parse(text, e, sizeof e);
  cr_assert_not_null(v, "not JSON (%s): %s", e, text);
  return v;
}

yajl_val an_cli_jget(yajl_val v, const char *key, yajl_type t) {
  const char *path[] = {key, NULL};
  return yajl_tree_get(v, path, t);
}

const char *an_cli_jstr(yajl_val v) {
  const char *s = YAJL_IS_STRING(v) ? v->u.string : NULL;
  return s ? s : "";
}

void an_cli_chomp(char *s) {
  size_t n = strlen(s);
  while (n && s[n - 1] == '\n') s[--n] = 0;
}
