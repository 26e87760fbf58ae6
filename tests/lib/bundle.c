/* tests/lib/bundle.c — temporary busybox bundles for engine tests (see
 * bundle.h). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <seccomp.h>
#include <unistd.h>
#include "bundle.h"
#include "agentnest/cgroup.h"
#include "rm_tree.h"
#include "util.h"

static int counter;

void an_test_bundle_make(struct an_test_bundle *b, const char *tag) {
  memset(b, 0, sizeof *b);
  snprintf(b->dir, sizeof b->dir, "/tmp/an-test-%s-%d-XXXXXX", tag, getpid());
  cr_assert(mkdtemp(b->dir), "mkdtemp: %s", strerror(errno));
  chmod(b->dir, 0755);
  snprintf(b->rootfs, sizeof b->rootfs, "%s/rootfs", b->dir);
  snprintf(b->state_root, sizeof b->state_root, "%s/state", b->dir);
  snprintf(b->id, sizeof b->id, "t-%s-%d-%d", tag, getpid(), ++counter);
  static const char *dirs[] = {"bin", "proc", "dev", "sys", "tmp", "etc", "root", "opt", NULL};
  char path[512];
  for (int i = 0; dirs[i]; i++) {
    snprintf(path, sizeof path, "%s/%s", b->rootfs, dirs[i]);
    an_test_mkdirs(path);
  }
  snprintf(path, sizeof path, "%s/bin/busybox", b->rootfs);
  an_test_copy_file("/bin/busybox", path, 0755);
  FILE *list = popen("/bin/busybox --list", "r");
  cr_assert(list);
  char name[128];
  while (fgets(name, sizeof name, list)) {
    name[strcspn(name, "\n")] = '\0';
    if (!*name || strcmp(name, "busybox") == 0) continue;
    snprintf(path, sizeof path, "%s/bin/%s", b->rootfs, name);
    cr_assert(symlink("busybox", path) == 0, "symlink %s", path);
  }
  int lst = pclose(list);
  cr_assert(lst == 0, "host /bin/busybox is not busybox-static (`busybox --list` failed): "
            "reinstall busybox-static");
  an_test_bundle_write(b, "etc/passwd", "root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000::/:/bin/sh\n", 0644);
  an_test_bundle_write(b, "etc/group", "root:x:0:\nagent:x:1000:\nsecret:x:2000:\n", 0644);
}

static char **argv_from(const char *arg0, va_list ap) {
  size_t n = 1, cap = 8;
  char **v = calloc(cap, sizeof *v);
  v[0] = strdup(arg0);
  const char *a;
  while ((a = va_arg(ap, const char *))) {
    if (n + 2 > cap) v = realloc(v, (cap *= 2) * sizeof *v);
    v[n++] = strdup(a);
  }
  v[n] = NULL;
  return v;
}

static void set_argv(struct an_spec *spec, char **v) {
  for (char **p = spec->process->args; p && *p; p++) free(*p);
  free(spec->process->args);
  spec->process->args = v;
}

void an_test_set_args(struct an_spec *spec, const char *arg0, ...) {
  va_list ap;
  va_start(ap, arg0);
  set_argv(spec, argv_from(arg0, ap));
  va_end(ap);
}

struct an_spec *an_test_bundle_spec(const struct an_test_bundle *b, const char *arg0, ...) {
  struct an_spec *spec = NULL;
  an_error_t err = NULL;
  cr_assert(an_spec_new_default(&spec, &err) == 0, "an_spec_new_default: %s",
            err ? err->msg : "");
  free(spec->root.path);
  spec->root.path = strdup(b->rootfs);
  va_list ap;
  va_start(ap, arg0);
  set_argv(spec, argv_from(arg0, ap));
  va_end(ap);
  return spec;
}

struct an_container_opts an_test_bundle_opts(const struct an_test_bundle *b) {
  struct an_container_opts o = {.state_root = b->state_root, .id = b->id, .bundle = b->dir,
                                .stdio = {-1, -1, -1}};
  return o;
}

void an_test_bundle_install_helper(const struct an_test_bundle *b, const char *name) {
  const char *build = getenv("AN_TEST_BUILD");
  char from[512], to[512];
  snprintf(from, sizeof from, "%s/tests/helpers/%s", build ? build : "build", name);
  snprintf(to, sizeof to, "%s/bin/%s", b->rootfs, name);
  an_test_copy_file(from, to, 0755);
}

void an_test_bundle_write(const struct an_test_bundle *b, const char *rel, const char *content,
                          unsigned mode) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", b->rootfs, rel);
  char *slash = strrchr(path, '/');
  *slash = '\0';
  an_test_mkdirs(path);
  *slash = '/';
  an_test_write_file(path, content, strlen(content), mode);
}

int an_test_run_capture(const struct an_spec *spec, const struct an_test_bundle *b, char **out,
                        an_error_t *err) {
  int mfd = memfd_create("an-test-out", MFD_CLOEXEC);
  int nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  cr_assert(mfd >= 0 && nullfd >= 0);
  struct an_container_opts o = an_test_bundle_opts(b);
  o.stdio[0] = nullfd;
  o.stdio[1] = mfd;
  o.stdio[2] = mfd;
  int r = an_container_run(spec, &o, err);
  if (out) {
    off_t len = lseek(mfd, 0, SEEK_END);
    char *buf = calloc(1, len + 1);
    cr_assert(pread(mfd, buf, len, 0) == len);
    *out = buf;
  }
  close(mfd);
  close(nullfd);
  return r;
}

bool an_test_cgroup_exists(const char *id) {
  static const char *h[] = {"pids", "memory", "cpu", "freezer", "devices", "unified", NULL};
  char path[512];
  struct stat st;
  for (int i = 0; h[i]; i++) {
    snprintf(path, sizeof path, "/sys/fs/cgroup/%s/agentnest/%s", h[i], id);
    if (stat(path, &st) == 0) return true;
  }
  snprintf(path, sizeof path, "/sys/fs/cgroup/agentnest/%s", id);
  return stat(path, &st) == 0;
}

bool an_test_state_exists(const struct an_test_bundle *b) {
  char path[512];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", b->state_root, b->id);
  return stat(path, &st) == 0;
}

void an_test_cgroup_remove(const char *path) {
  while (*path == '/') path++;
  an_error_t err = NULL;
  struct an_cgroup *cg = NULL;
  if (an_cgroup_open(path, &cg, &err) == 0) an_cgroup_destroy(cg, &err);
  an_cgroup_free(cg);
  an_error_free(&err);
  FILE *f = fopen("/proc/self/mountinfo", "re");
  char line[1024];
  while (f && fgets(line, sizeof line, f)) {
    char *sep = strstr(line, " - "), mnt[256], dir[600];
    if (!sep || (strncmp(sep + 3, "cgroup ", 7) && strncmp(sep + 3, "cgroup2 ", 8))) continue;
    if (sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1) continue;
    snprintf(dir, sizeof dir, "%s/%s", mnt, path);
    rmdir(dir);
    snprintf(dir, sizeof dir, "%s/agentnest", mnt);
    rmdir(dir);   /* only when empty */
  }
  if (f) fclose(f);
}

void an_test_bundle_remove(struct an_test_bundle *b) {
  if (!b->dir[0]) return;
  an_error_t err = NULL;
  if (an_test_state_exists(b)) an_container_delete(b->state_root, b->id, true, &err);
  an_error_free(&err);
  if (b->id[0]) {
    char path[300];
    snprintf(path, sizeof path, "agentnest/%s", b->id);
    an_test_cgroup_remove(path);
  }
  /* fd-relative, never through a symlink or mount point: a test may leave
   * a racer swapping a rootfs directory with a symlink to "/" */
  an_test_rm_tree(b->dir);
  b->dir[0] = '\0';
}

void an_test_assert_create_refused(const struct an_test_bundle *b, struct an_spec *spec, int want_errno,
                                   const char *want_msg) {
  struct an_container_opts o = an_test_bundle_opts(b);
  an_error_t err = NULL;
  int r = an_container_create(spec, &o, &err);
  cr_assert_eq(r, -want_errno, "create returned %d (%s)", r, err ? err->msg : "no error");
  cr_assert(err && strstr(err->msg, want_msg), "message \"%s\" lacks \"%s\"", err ? err->msg : "",
            want_msg);
  an_error_free(&err);
  cr_assert(!an_test_state_exists(b), "state directory left behind");
  cr_assert(!an_test_cgroup_exists(b->id), "cgroup left behind");
}

struct an_spec_seccomp *an_test_seccomp_one_rule(const char *name, uint32_t action) {
  struct an_spec_seccomp *s = calloc(1, sizeof *s);
  cr_assert_not_null(s);
  s->default_action = SCMP_ACT_ALLOW;
  s->architectures = calloc(1, sizeof *s->architectures);
  s->architectures[0] = SCMP_ARCH_X86_64;
  s->n_architectures = 1;
  s->syscalls = calloc(1, sizeof *s->syscalls);
  s->n_syscalls = 1;
  s->syscalls[0].names = calloc(2, sizeof(char *));
  s->syscalls[0].names[0] = strdup(name);
  s->syscalls[0].action = action;
  return s;
}
