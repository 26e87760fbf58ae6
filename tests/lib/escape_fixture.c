/* tests/lib/escape_fixture.c — sandboxes and host evidence for the escape
 * suite (see escape_fixture.h). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "agentnest/container.h"
#include "escape_fixture.h"
#include "util.h"
#include "ws_fixture.h"
#include "rm_tree.h"
#include "ctx_fixture.h"

static const char *image_cache(void) {
  const char *c = getenv("AN_IMAGE_CACHE");
  return c && *c ? c : "/var/cache/agentnest/images";
}

bool esc_image_available(const char *image) {
  char p[PATH_MAX];
  struct stat st;
  snprintf(p, sizeof p, "%s/%s/rootfs/bin/sh", image_cache(), image);
  return stat(p, &st) == 0;
}

void esc_require_image(const char *image) {
  if (!esc_image_available(image))
    cr_skip_test("image %s not built under %s (make images)", image, image_cache());
}

void esc_helper_path(const char *name, char *buf, size_t len) {
  const char *b = getenv("AN_TEST_BUILD");
  snprintf(buf, len, "%s/tests/helpers/%s", b && *b ? b : "build", name);
}

bool esc_read_file(const char *path, char *buf, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, buf, len - 1);
  close(fd);
  if (n < 0) return false;
  buf[n] = '\0';
  while (n > 0 && buf[n - 1] == '\n') buf[--n] = '\0';
  return true;
}

int esc_count_lines(const char *s, const char *needle) {
  int n = 0;
  for (const char *line = s; line && *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t) (nl - line) : strlen(line);
    char *copy = strndup(line, len);
    if (strstr(copy, needle)) n++;
    free(copy);
    line = nl ? nl + 1 : NULL;
  }
  return n;
}

/* A directory of a killed escape test: delete the containers its state
 * keeps (their cgroups and processes are host-wide). */
static void delete_stale_containers(const char *dir) {
  char state[PATH_MAX];
  snprintf(state, sizeof state, "%s/state", dir);
  DIR *d = opendir(state);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    an_error_t err = NULL;
    an_container_delete(state, de->d_name, true, &err);
    an_error_free(&err);
  }
  if (d) closedir(d);
}

void esc_sandbox_init(struct esc_sandbox *s, const char *image) {
  static bool swept;   /* once per test process */
  if (!swept) {
    swept = true;
    an_test_sweep_stale("an-esc-canary-", NULL);
    an_test_sweep_stale("an-join-mark-", NULL);
    an_test_sweep_stale("an-esc-", delete_stale_containers);
  }
  memset(s, 0, sizeof *s);
  s->stdin_fd = -1;
  /* criterion may start a test with 0-2 closed: keep them taken, so that no
   * capture fd of ours is ever one of the stdio numbers */
  for (int fd = 0; fd < 3; fd++)
    if (fcntl(fd, F_GETFD) < 0) cr_assert_eq(open("/dev/null", O_RDWR), fd);
  esc_require_image(image);
  snprintf(s->image, sizeof s->image, "%s", image);
  snprintf(s->rootfs, sizeof s->rootfs, "%s/%s/rootfs", image_cache(), image);
  snprintf(s->dir, sizeof s->dir, "/tmp/an-esc-%d-XXXXXX", getpid());
  cr_assert(mkdtemp(s->dir), "mkdtemp: %s", strerror(errno));
  cr_assert(chmod(s->dir, 0711) == 0);
  snprintf(s->ws, sizeof s->ws, "%s/ws", s->dir);
  snprintf(s->bundle, sizeof s->bundle, "%s/bundle", s->dir);
  snprintf(s->state, sizeof s->state, "%s/state", s->dir);
  cr_assert(mkdir(s->ws, 0755) == 0 && mkdir(s->bundle, 0755) == 0 && mkdir(s->state, 0700) == 0);
  snprintf(s->id, sizeof s->id, "esc%dx%d", getpid(), (int) (random() % 100000));

  an_error_t err = NULL;
  cr_assert(an_idrange_alloc(NULL, s->dir, &s->ids, &err) == 0, "an_idrange_alloc: %s",
            err ? err->msg : "?");
  s->have_ids = true;
  uid_t owner = s->ids.host_uid_base + ESC_SANDBOX_UID;
  cr_assert(chown(s->ws, owner, owner) == 0, "chown workspace: %s", strerror(errno));

  char probes[PATH_MAX + 16], from[PATH_MAX], to[PATH_MAX + 32];
  snprintf(probes, sizeof probes, "%s/probes", s->ws);
  cr_assert(mkdir(probes, 0755) == 0);
  esc_helper_path("probe", from, sizeof from);
  snprintf(to, sizeof to, "%s/probe", probes);
  an_test_copy_file(from, to, 0755);  /* new file: never through a planted link */

  /* The source tree's profiles are the defaults (a profile other than the
   * default is checked against the default, which must be there). */
  const char *src = getenv("AN_TEST_SRC");
  char dir[PATH_MAX], profile[PATH_MAX + 32];
  snprintf(dir, sizeof dir, "%s/profiles", src && *src ? src : ".");
  setenv("AGENTNEST_PROFILES", dir, 1);
  cr_assert(an_sandbox_opts_new_ctx(an_test_ctx(), &s->opts, &err) == 0, "opts: %s", err ? err->msg : "?");
  snprintf(profile, sizeof profile, "%s/seccomp/default.json", dir);
  cr_assert(an_sandbox_opts_set_seccomp_profile(s->opts, profile, &err) == 0, "seccomp profile: %s",
            err ? err->msg : "?");
  cr_assert(an_sandbox_opts_set_image(s->opts, image, &err) == 0);
}

void esc_stop(struct esc_sandbox *s) {
  if (!s->detached) return;
  an_error_t err = NULL;
  an_container_delete(s->state, s->id, true, &err);
  an_error_free(&err);
  s->detached = false;
  s->init_pid = 0;
}

void esc_sandbox_fini(struct esc_sandbox *s) {
  if (!s->dir[0]) return;
  esc_stop(s);
  an_error_t err = NULL;
  if (s->have_ids) an_idrange_free(NULL, &s->ids, &err);
  an_error_free(&err);
  s->have_ids = false;
  an_sandbox_opts_free(s->opts);
  s->opts = NULL;
  an_test_rm_tree(s->dir);
  s->dir[0] = '\0';
}

struct an_spec *esc_build_spec(struct esc_sandbox *s, char **argv) {
  struct an_sandbox_image img = {.rootfs = s->rootfs};
  struct an_spec *spec = NULL;
  an_error_t err = NULL;
  char sid[40];
  snprintf(sid, sizeof sid, "e%d", getpid());
  cr_assert(an_sandbox_build_spec(s->opts, &img, &s->ids, sid, s->ws, argv, &spec, &err) == 0,
            "an_sandbox_build_spec: %s", err ? err->msg : "?");
  return spec;
}

static char *read_memfd(int fd) {
  off_t len = lseek(fd, 0, SEEK_END);
  cr_assert(len >= 0, "lseek output fd %d: %s", fd, strerror(errno));
  char *buf = calloc(1, (size_t) len + 1);
  cr_assert(buf);
  cr_assert(pread(fd, buf, (size_t) len, 0) == len);
  return buf;
}

int esc_try_run_spec(struct esc_sandbox *s, const struct an_spec *spec, struct esc_result *res) {
  int out = memfd_create("esc-out", MFD_CLOEXEC), errfd = memfd_create("esc-err", MFD_CLOEXEC);
  int nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  cr_assert(out >= 0 && errfd >= 0 && nullfd >= 0);
  char id[96];
  snprintf(id, sizeof id, "%s-%d", s->id, ++s->run_count);
  struct an_container_opts o = {.state_root = s->state, .id = id, .bundle = s->bundle,
                                .stdio = {s->stdin_fd >= 0 ? s->stdin_fd : nullfd, out, errfd}};
  an_error_t err = NULL;
  int r = an_container_run(spec, &o, &err);
  /* Record (for a dedicated test) and repair a closed caller fd 0-2, so
   * that the test can go on checking what it is about. */
  for (int fd = 0; fd < 3; fd++)
    if (fcntl(fd, F_GETFD) < 0) {
      s->closed_caller_fd = true;
      cr_assert_eq(open("/dev/null", O_RDWR), fd);
    }
  res->status = r;
  res->out = read_memfd(out);
  res->err = read_memfd(errfd);
  if (r < 0) {
    free(res->err);
    res->err = strdup(err ? err->msg : "(no message)");
  }
  an_error_free(&err);
  close(out);
  close(errfd);
  close(nullfd);
  return r;
}

int esc_run_spec(struct esc_sandbox *s, const struct an_spec *spec, int stdin_fd,
                 struct esc_result *res) {
  s->stdin_fd = stdin_fd;
  int r = esc_try_run_spec(s, spec, res);
  s->stdin_fd = -1;
  cr_assert(r >= 0, "an_container_run: %s", res->err);
  return r;
}

const char *esc_copy_rootfs(struct esc_sandbox *s) {
  char dst[PATH_MAX];
  snprintf(dst, sizeof dst, "%s/rootfs", s->dir);
  /* dst does not exist yet: cp creates every entry, never writes through one */
  cr_assert_eq(an_test_sh("cp -a '%s' '%s'", s->rootfs, dst), 0, "cp -a %s %s", s->rootfs, dst);
  snprintf(s->rootfs, sizeof s->rootfs, "%s", dst);
  return s->rootfs;
}

bool esc_wait_file(const struct esc_sandbox *s, const char *name) {
  char p[PATH_MAX * 2];
  snprintf(p, sizeof p, "%s/%s", s->ws, name);
  struct stat st;
  for (int i = 0; i < 3000 && lstat(p, &st) < 0; i++) nanosleep(&(struct timespec){0, 10000000}, NULL);
  return lstat(p, &st) == 0;
}

int esc_runv(struct esc_sandbox *s, char **argv, struct esc_result *res) {
  struct an_spec *spec = esc_build_spec(s, argv);
  int r = esc_run_spec(s, spec, -1, res);
  an_spec_free(spec);
  return r;
}

int esc_sh(struct esc_sandbox *s, struct esc_result *res, const char *fmt, ...) {
  char *script = NULL;
  va_list ap;
  va_start(ap, fmt);
  cr_assert(vasprintf(&script, fmt, ap) >= 0);
  va_end(ap);
  char *argv[] = {"/bin/sh", "-c", script, NULL};
  int r = esc_runv(s, argv, res);
  free(script);
  return r;
}

char *esc_probe(struct esc_sandbox *s, const char *actions) {
  struct esc_result res = {0};
  int st = esc_sh(s, &res, ESC_PROBE " %s", actions);
  cr_assert_eq(st, 0, "probe %s exited %d: %s%s", actions, st, res.out, res.err);
  free(res.err);
  return res.out;
}

void esc_result_free(struct esc_result *res) {
  free(res->out);
  free(res->err);
  res->out = res->err = NULL;
}

void esc_start(struct esc_sandbox *s, const char *script, const char *ready_file) {
  cr_assert(!s->detached, "sandbox already started");
  char *argv[] = {"/bin/sh", "-c", (char *) script, NULL};
  struct an_spec *spec = esc_build_spec(s, argv);
  int nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
  char pidfile[PATH_MAX + 16];
  snprintf(pidfile, sizeof pidfile, "%s/init.pid", s->dir);
  struct an_container_opts o = {.state_root = s->state, .id = s->id, .bundle = s->bundle,
                                .pid_file = pidfile, .detach = true,
                                .stdio = {nullfd, nullfd, nullfd}};
  an_error_t err = NULL;
  int r = an_container_run(spec, &o, &err);
  an_spec_free(spec);
  close(nullfd);
  cr_assert(r == 0, "an_container_run (detached): %s", err ? err->msg : "?");
  s->detached = true;
  char buf[32];
  cr_assert(esc_read_file(pidfile, buf, sizeof buf), "read %s", pidfile);
  s->init_pid = (pid_t) atoi(buf);
  cr_assert(s->init_pid > 0);
  if (!ready_file) return;
  char ready[PATH_MAX * 2];
  snprintf(ready, sizeof ready, "%s/%s", s->ws, ready_file);
  struct stat st;
  for (int i = 0; i < 2000 && lstat(ready, &st) < 0; i++) nanosleep(&(struct timespec){0, 10000000}, NULL);
  cr_assert(lstat(ready, &st) == 0, "sandbox %s never wrote %s", s->id, ready_file);
}

const char *esc_probe_result(const char *out, const char *action, char *buf, size_t len) {
  size_t alen = strlen(action);
  for (const char *line = out; line && *line;) {
    const char *nl = strchr(line, '\n');
    if (strncmp(line, action, alen) == 0 && line[alen] == ' ') {
      size_t n = (nl ? (size_t) (nl - line) : strlen(line)) - alen - 1;
      if (n >= len) n = len - 1;
      memcpy(buf, line + alen + 1, n);
      buf[n] = '\0';
      return buf;
    }
    line = nl ? nl + 1 : NULL;
  }
  cr_assert_fail("probe printed no result for %s:\n%s", action, out);
  return NULL;
}

void esc_assert_probe(const char *out, const char *action, const char *allowed) {
  char got[64], words[256];
  esc_probe_result(out, action, got, sizeof got);
  snprintf(words, sizeof words, " %s ", allowed);
  char needle[70];
  snprintf(needle, sizeof needle, " %s ", got);
  cr_assert(strstr(words, needle), "%s: got %s, expected one of: %s", action, got, allowed);
}

void esc_assert_probe_all(const char *out, const char *actions, const char *allowed) {
  char *copy = strdup(actions), *save = NULL;
  cr_assert_not_null(copy);
  for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
    char *colon = strchr(t, ':');
    if (colon) *colon = '\0';
    esc_assert_probe(out, t, allowed);
  }
  free(copy);
}

char *esc_host_exec_unprivileged(const char *path, const char *arg, int *status) {
  int out = memfd_create("esc-host-exec", MFD_CLOEXEC);
  cr_assert(out >= 0, "memfd_create: %s", strerror(errno));
  pid_t pid = fork();
  cr_assert(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0) _exit(90);
    if (dup2(out, 1) < 0) _exit(92);
    execl(path, path, arg, (char *) NULL);
    _exit(91);
  }
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {}
  char *res = read_memfd(out);
  close(out);
  return res;
}

char *esc_host_probe(const char *mount_dir, const char *actions) {
  char probe[PATH_MAX];
  esc_helper_path("probe", probe, sizeof probe);
  int out = memfd_create("esc-host", MFD_CLOEXEC);
  cr_assert(out >= 0);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) _exit(90);
    if (mount_dir && mount("esc", mount_dir, "tmpfs", 0, "size=1m") < 0) _exit(91);
    if (dup2(out, 1) < 0) _exit(92);
    char *copy = strdup(actions), *argv[64] = {probe};
    int n = 1;
    for (char *t = strtok(copy, " "); t && n < 63; t = strtok(NULL, " ")) argv[n++] = t;
    argv[n] = NULL;
    execv(probe, argv);
    _exit(93);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "host probe %s: status %d", actions, st);
  char *res = read_memfd(out);
  close(out);
  return res;
}

void esc_evidence_record(struct esc_host_evidence *e) {
  memset(e, 0, sizeof *e);
  snprintf(e->canary, sizeof e->canary, "/tmp/an-esc-canary-%d-XXXXXX", getpid());
  cr_assert(mkdtemp(e->canary));
  char p[PATH_MAX + 16];
  snprintf(p, sizeof p, "%s/secret.txt", e->canary);
  ws_write(p, WS_CANARY_SECRET);
  ws_tree_digest(e->canary, e->canary_digest);
  /* kernel.sysrq exists only with CONFIG_MAGIC_SYSRQ */
  if (!esc_read_file("/proc/sys/kernel/sysrq", e->sysrq, sizeof e->sysrq))
    snprintf(e->sysrq, sizeof e->sysrq, "(absent)");
  cr_assert(esc_read_file("/proc/sys/kernel/core_pattern", e->core_pattern, sizeof e->core_pattern));
  cr_assert(gethostname(e->hostname, sizeof e->hostname) == 0);
  cr_assert(ws_file_sha256("/bin/busybox", e->busybox_sha));
}

void esc_evidence_assert_unchanged(const struct esc_host_evidence *e) {
  char d[65], buf[256];
  ws_tree_digest(e->canary, d);
  cr_assert_str_eq(d, e->canary_digest, "host CANARY %s changed", e->canary);
  if (!esc_read_file("/proc/sys/kernel/sysrq", buf, sizeof buf)) snprintf(buf, sizeof buf, "(absent)");
  cr_assert_str_eq(buf, e->sysrq, "host kernel.sysrq changed");
  cr_assert(esc_read_file("/proc/sys/kernel/core_pattern", buf, sizeof buf));
  cr_assert_str_eq(buf, e->core_pattern, "host kernel.core_pattern changed");
  cr_assert(gethostname(buf, sizeof buf) == 0);
  cr_assert_str_eq(buf, e->hostname, "host hostname changed");
  cr_assert(ws_file_sha256("/bin/busybox", d));
  cr_assert_str_eq(d, e->busybox_sha, "host /bin/busybox changed");
}

void esc_evidence_fini(struct esc_host_evidence *e) {
  if (e->canary[0]) an_test_rm_tree(e->canary);
  e->canary[0] = '\0';
}

int esc_exec(struct esc_sandbox *s, char **argv, struct esc_result *res) {
  cr_assert(s->detached, "esc_exec: sandbox not started");
  struct an_spec *spec = esc_build_spec(s, argv);
  int out = memfd_create("esc-exec-out", MFD_CLOEXEC), errfd = memfd_create("esc-exec-err", MFD_CLOEXEC);
  cr_assert(out >= 0 && errfd >= 0);
  /* the engine's exec hands the caller's 0-2 to the process: swap them */
  fflush(stdout);
  fflush(stderr);
  int saved[3] = {dup(0), dup(1), dup(2)};
  int nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  cr_assert(saved[0] >= 0 && saved[1] >= 0 && saved[2] >= 0 && nullfd >= 0);
  dup2(nullfd, 0);
  dup2(out, 1);
  dup2(errfd, 2);
  an_error_t err = NULL;
  pid_t pid = 0;
  int r = an_container_exec(s->state, s->id, spec->process, false, NULL, NULL, &pid, &err);
  for (int i = 0; i < 3; i++) {
    dup2(saved[i], i);
    close(saved[i]);
  }
  close(nullfd);
  an_spec_free(spec);
  res->status = r;
  res->out = read_memfd(out);
  res->err = read_memfd(errfd);
  if (r < 0 && err) {
    free(res->err);
    res->err = strdup(err->msg);
  }
  an_error_free(&err);
  close(out);
  close(errfd);
  return r;
}

static void cgroup_file(const struct esc_sandbox *s, const char *controller, const char *file,
                        char *buf, size_t len) {
  snprintf(buf, len, "/sys/fs/cgroup/%s/agentnest/%s%s%s", controller, s->id, file ? "/" : "",
           file ? file : "");
}

bool esc_cgroup_read(const struct esc_sandbox *s, const char *controller, const char *file,
                     char *buf, size_t len) {
  char p[PATH_MAX];
  cgroup_file(s, controller, file, p, sizeof p);
  return esc_read_file(p, buf, len);
}

bool esc_cgroup_exists(const struct esc_sandbox *s, const char *controller) {
  char p[PATH_MAX];
  struct stat st;
  cgroup_file(s, controller, NULL, p, sizeof p);
  return stat(p, &st) == 0;
}
