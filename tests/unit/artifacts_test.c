/* Tests for agentnest/artifacts.h (BL-26: globbing never follows symlinks)
 * and BL-24 (no host-side file operation runs or loads workspace code). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/artifacts.h"
#include "agentnest/files.h"
#include "agentnest/snapshot.h"
#include "ws_fixture.h"

static struct ws_fixture fx;
static void setup(void) { ws_fixture_setup(&fx); }
static void teardown(void) { ws_fixture_teardown(&fx); }
TestSuite(artifacts, .init = setup, .fini = teardown);

static void wsmk(const char *rel) {
  char p[PATH_MAX];
  ws_path(p, "%s/%s", fx.ws, rel);
  cr_assert_eq(mkdir(p, 0755), 0, "mkdir %s", p);
}
static void wsln(const char *target, const char *rel) {
  char p[PATH_MAX];
  ws_path(p, "%s/%s", fx.ws, rel);
  cr_assert_eq(symlink(target, p), 0, "symlink %s", p);
}
static void wsput(const char *rel, const char *content) {
  char p[PATH_MAX];
  ws_path(p, "%s/%s", fx.ws, rel);
  ws_write(p, content);
}

static const struct an_artifact *find(const struct an_artifact_list *l, const char *path) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->items[i].path, path)) return &l->items[i];
  return NULL;
}

static int warnings;
static void count_warn(void *d, const char *m) {
  (void) d;
  (void) m;
  warnings++;
}

Test(artifacts, glob_matching_follows_component_rules) {
  cr_assert(an_glob_match("out/**", "out/a.txt"));
  cr_assert(an_glob_match("out/**", "out/x/y/z"));
  cr_assert(an_glob_match("**/*.txt", "a.txt"));
  cr_assert(an_glob_match("**/*.txt", "out/deep/b.txt"));
  cr_assert_not(an_glob_match("**/*.txt", "out/b.txt.gz"));
  cr_assert_not(an_glob_match("out/*", "out/x/y"));
  cr_assert(an_glob_match("out/*", "out/x"));
  cr_assert(an_glob_match("./out//x", "out/x"));
  cr_assert(an_glob_match("a/**/b", "a/b"));
  cr_assert(an_glob_match("a/**/b", "a/x/y/b"));
  cr_assert_not(an_glob_match("*.txt", "out/a.txt"));
  an_error_t err = NULL;
  cr_assert_eq(an_glob_check("/etc/*", &err), -EXDEV);
  an_error_free(&err);
  cr_assert_eq(an_glob_check("out/../../*", &err), -EXDEV);
  an_error_free(&err);
  cr_assert_eq(an_glob_check("", &err), -EINVAL);
  an_error_free(&err);
}

Test(artifacts, bl_26_globbing_reports_symlinks_never_follows_them_and_terminates) {
  char canary_file[PATH_MAX], to[PATH_MAX];
  ws_path(canary_file, "%s/secret.txt", fx.canary);
  wsmk("out");
  wsput("out/a.txt", "ok\n");
  wsln("/etc/passwd", "out/b.txt");
  wsln(canary_file, "out/c.txt");
  wsln("/", "out/root");
  wsln(".", "out/loop");
  wsln("/proc/self/environ", "out/env.txt");
  wsln(fx.canary, "canarydir");
  int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  cr_assert_geq(in, 0);
  cr_assert_geq(inotify_add_watch(in, fx.canary, IN_OPEN | IN_ACCESS), 0);
  cr_assert_geq(inotify_add_watch(in, canary_file, IN_OPEN | IN_ACCESS), 0);

  const char *globs[] = {"out/**", "**/*.txt", "canarydir/**"};
  ws_path(to, "%s/exported", fx.root);
  struct an_artifact_opts o = {.to_dir = to, .warn = count_warn};
  struct an_artifact_list l;
  an_error_t err = NULL;
  alarm(20); /* a walk that loops would be killed */
  cr_assert_eq(an_artifacts_collect(fx.wsfd, globs, 3, &o, &l, &err), 0, "%s", err ? err->msg : "");
  alarm(0);

  char buf[4096];
  cr_assert_lt(read(in, buf, sizeof buf), 0, "a file outside the workspace was opened");
  cr_assert_eq(errno, EAGAIN);
  close(in);

  const struct an_artifact *a = find(&l, "out/a.txt");
  cr_assert_not_null(a);
  char want[65];
  ws_buf_sha256("ok\n", 3, want);
  cr_assert_eq(a->kind, AN_ARTIFACT_FILE);
  cr_assert_str_eq(a->sha256, want);
  cr_assert_eq(a->size, 3);
  cr_assert(a->copied);
  const char *links[][2] = {{"out/b.txt", "/etc/passwd"}, {"out/c.txt", canary_file},
                            {"out/root", "/"},             {"out/loop", "."},
                            {"out/env.txt", "/proc/self/environ"}};
  for (size_t i = 0; i < 5; i++) {
    const struct an_artifact *s = find(&l, links[i][0]);
    cr_assert_not_null(s, "%s not reported", links[i][0]);
    cr_assert_eq(s->kind, AN_ARTIFACT_SYMLINK, "%s", links[i][0]);
    cr_assert_str_eq(s->link_target, links[i][1]);
    cr_assert_str_eq(s->sha256, "", "symlink %s must not be hashed", links[i][0]);
    cr_assert_eq(s->size, 0);
    cr_assert_not(s->copied);
  }
  const struct an_artifact *cd = find(&l, "canarydir");
  cr_assert(cd && cd->kind == AN_ARTIFACT_SYMLINK, "canarydir/** reports the link itself");
  cr_assert_eq(l.n, 7, "exactly the 6 entries under out/ and the canarydir link, got %zu", l.n);
  for (size_t i = 0; i < l.n; i++) {
    cr_assert_null(strstr(l.items[i].path, "out/root/"), "walked through %s", l.items[i].path);
    cr_assert_null(strstr(l.items[i].path, "out/loop/"), "walked through %s", l.items[i].path);
    cr_assert_null(strstr(l.items[i].path, "canarydir/"), "walked through %s", l.items[i].path);
  }
  char p[PATH_MAX];
  struct stat st;
  ws_path(p, "%s/out/a.txt", to);
  char h[65];
  cr_assert(ws_file_sha256(p, h));
  cr_assert_str_eq(h, want);
  ws_path(p, "%s/out/b.txt", to);
  cr_assert_neq(lstat(p, &st), 0, "symlink exported");
  ws_path(p, "%s/out/c.txt", to);
  cr_assert_neq(lstat(p, &st), 0, "symlink exported");
  cr_assert(ws_canary_unchanged(&fx));
  an_artifact_list_free(&l);
}

Test(artifacts, fifos_are_skipped_with_warning_and_big_files_capped) {
  char p[PATH_MAX];
  wsmk("out");
  ws_path(p, "%s/out/pipe", fx.ws);
  cr_assert_eq(mkfifo(p, 0600), 0);
  wsput("out/big", "0123456789");
  wsput("out/small", "01234");
  const char *globs[] = {"out/*"};
  struct an_artifact_opts o = {.max_bytes = 5, .warn = count_warn};
  struct an_artifact_list l;
  an_error_t err = NULL;
  warnings = 0;
  alarm(10);
  cr_assert_eq(an_artifacts_collect(fx.wsfd, globs, 1, &o, &l, &err), 0, "%s", err ? err->msg : "");
  alarm(0);
  cr_assert_eq(l.n, 1);
  cr_assert_str_eq(l.items[0].path, "out/small");
  cr_assert_eq(warnings, 2);
  an_artifact_list_free(&l);
}

/* A program or library that leaves a marker if anyone runs or loads it. */
static void plant_trojans(const char *marker_dir) {
  char p[PATH_MAX], body[PATH_MAX * 2];
  wsmk("usr");
  wsmk("usr/bin");
  wsmk("bin");
  wsmk("lib");
  wsmk("lib/x86_64-linux-gnu");
  const char *progs[] = {"tar", "gzip", "xz", "zstd", "unpigz", "sha256sum", "getent", "id"};
  for (size_t i = 0; i < sizeof progs / sizeof *progs; i++) {
    ws_path(body, "#!/bin/sh\ntouch %s/marker-%s\n", marker_dir, progs[i]);
    ws_path(p, "%s/usr/bin/%s", fx.ws, progs[i]);
    ws_write(p, body);
    cr_assert_eq(chmod(p, 0755), 0);
    ws_path(p, "%s/bin/%s", fx.ws, progs[i]);
    ws_write(p, body);
    cr_assert_eq(chmod(p, 0755), 0);
  }
  char src[PATH_MAX];
  ws_path(src, "%s/trojan.c", fx.root);
  ws_path(body, "#include <fcntl.h>\n__attribute__((constructor)) static void m(void)"
                "{ open(\"%s/marker-libnss\", O_CREAT|O_WRONLY, 0644); }\n", marker_dir);
  ws_write(src, body);
  const char *libs[] = {"libnss_files.so.2", "libnss_dns.so.2", "libnss_compat.so.2"};
  for (size_t i = 0; i < 3; i++) {
    char cmd[PATH_MAX * 3];
    ws_path(cmd, "cc -shared -fPIC -o %s/lib/x86_64-linux-gnu/%s %s 2>/dev/null || "
                 "cp /bin/true %s/lib/x86_64-linux-gnu/%s", fx.ws, libs[i], src, fx.ws, libs[i]);
    cr_assert_eq(system(cmd), 0);
  }
}

Test(artifacts, bl_24_host_side_operations_never_run_or_load_workspace_code) {
  char markers[PATH_MAX], p[PATH_MAX];
  ws_path(markers, "%s/markers", fx.root);
  cr_assert_eq(mkdir(markers, 0777), 0);
  plant_trojans(markers);
  /* files owned by ids without names: tar headers must not look them up */
  wsput("owned.txt", "data\n");
  ws_path(p, "%s/owned.txt", fx.ws);
  cr_assert_eq(chown(p, 54321, 54321), 0);
  /* a process that looked programs or libraries up through the workspace
   * would find the trojans first */
  char path_env[PATH_MAX * 2], *saved_path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  ws_path(path_env, "%s/usr/bin:%s/bin:%s", fx.ws, fx.ws, getenv("PATH") ? getenv("PATH") : "/usr/bin");
  setenv("PATH", path_env, 1);
  ws_path(p, "%s/lib/x86_64-linux-gnu", fx.ws);
  setenv("LD_LIBRARY_PATH", p, 1);

  an_error_t err = NULL;
  cr_assert_eq(an_file_put(fx.wsfd, "in/file.txt", "x", 1, &(struct an_file_opts){.mkdir_parents = true}, &err), 0);
  void *data = NULL;
  size_t len;
  cr_assert_eq(an_file_get(fx.wsfd, "owned.txt", NULL, &data, &len, &err), 0);
  free(data);
  ws_path(p, "%s/out", fx.root);
  cr_assert_eq(an_dir_get(fx.wsfd, ".", p, NULL, &err), 0, "%s", err ? err->msg : "");
  char tar[PATH_MAX];
  ws_path(tar, "%s/snap.tar", fx.root);
  struct an_snapshot_info info;
  cr_assert_eq(an_workspace_snapshot(fx.wsfd, tar, NULL, &info, &err), 0, "%s", err ? err->msg : "");
  int rootfd = open(fx.root, O_RDONLY | O_DIRECTORY);
  cr_assert_eq(an_workspace_restore(rootfd, "ws", tar, info.sha256, &err), 0, "%s", err ? err->msg : "");
  close(rootfd);
  close(fx.wsfd);
  fx.wsfd = open(fx.ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct an_artifact_list l;
  ws_path(p, "%s/artifacts", fx.root);
  struct an_artifact_opts ao = {.to_dir = p};
  cr_assert_eq(an_artifacts_collect(fx.wsfd, NULL, 0, &ao, &l, &err), 0, "%s", err ? err->msg : "");
  cr_assert_gt(l.n, 10);
  an_artifact_list_free(&l);

  setenv("PATH", saved_path, 1);
  unsetenv("LD_LIBRARY_PATH");
  free(saved_path);
  cr_assert_eq(ws_count_named(markers, "marker-tar", NULL), 0);
  char cmd[PATH_MAX + 32];
  ws_path(cmd, "test -z \"$(ls -A %s)\"", markers);
  cr_assert_eq(system(cmd), 0, "a workspace program or library was run or loaded");
}

static char last_warning[4096];
static void keep_warn(void *d, const char *m) {
  (void) d;
  snprintf(last_warning, sizeof last_warning, "%s", m);
}

/* A sandbox chooses its file names: a warning about one may not carry its
 * escape sequences or newlines to the caller's terminal (a name forged an
 * "all artifacts verified OK" line). */
Test(artifacts, hostile_names_in_warnings_are_quoted) {
  char p[PATH_MAX];
  wsmk("out");
  ws_path(p, "%s/out/x\n\x1b]0;owned\x07" "all artifacts verified OK", fx.ws);
  cr_assert_eq(mkfifo(p, 0600), 0);
  const char *globs[] = {"out/**"};
  struct an_artifact_opts o = {.warn = keep_warn};
  struct an_artifact_list l;
  an_error_t err = NULL;
  last_warning[0] = '\0';
  cr_assert_eq(an_artifacts_collect(fx.wsfd, globs, 1, &o, &l, &err), 0, "%s", err ? err->msg : "");
  an_artifact_list_free(&l);
  cr_assert(strstr(last_warning, "artifact \"out/x\\x0a\\x1b]0;owned\\x07all artifacts verified OK\" "
                                 "skipped"), "%s", last_warning);
  for (const char *c = last_warning; *c; c++)
    cr_assert((unsigned char) *c >= 0x20 && *c != 0x7f, "raw control byte in: %s", last_warning);
}
