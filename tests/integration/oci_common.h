/* tests/integration/oci_common.h — helpers shared by the agentnest-oci
 * black-box and differential tests: temp bundles with a busybox rootfs, a
 * temp state root, and running a runtime binary with captured output.
 * Everything is named with the test's pid so concurrent runs do not clash,
 * and removed by oci_bundle_destroy() even when a test fails. */
#ifndef AN_TESTS_OCI_COMMON_H
#define AN_TESTS_OCI_COMMON_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agentnest/spec.h"
#include "bundle.h"

struct oci_bundle {
  struct an_test_bundle tb;  /* tests/lib/bundle.h: rootfs, state root, cleanup */
  char dir[256];           /* bundle: config.json + rootfs/ (= tb.dir) */
  char root[300];          /* --root for agentnest-oci (= tb.state_root) */
  char out[300], err[300]; /* captured stdout/stderr of the last command */
};

/* The agentnest-oci binary under test: $AN_TEST_BUILD/agentnest-oci, else ./build. */
static inline const char *oci_bin(void) {
  static char *path;
  if (path) return path;
  const char *b = getenv("AN_TEST_BUILD");
  char *rel = NULL;
  cr_assert_geq(asprintf(&rel, "%s/agentnest-oci", b && *b ? b : "./build"), 0);
  path = realpath(rel, NULL);
  cr_assert_not_null(path, "agentnest-oci not built at %s", rel);
  free(rel);
  return path;
}

static inline void oci_sh(const char *fmt, ...) {
  char *cmd = NULL;
  va_list ap;
  va_start(ap, fmt);
  cr_assert_geq(vasprintf(&cmd, fmt, ap), 0);
  va_end(ap);
  int st = system(cmd);
  cr_assert(st == 0, "command failed (%#x): %s", st, cmd);
  free(cmd);
}

/* Write `spec` as the bundle's config.json. */
static inline void oci_bundle_write_spec(struct oci_bundle *b, const struct an_spec *spec) {
  an_error_t err = NULL;
  char *json = NULL;
  cr_assert_eq(an_spec_to_json(spec, &json, &err), 0, "to_json: %s", err ? err->msg : "");
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/config.json", b->dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "open %s", path);
  fputs(json, f);
  fclose(f);
  free(json);
}

static inline struct an_spec *oci_bundle_read_spec(struct oci_bundle *b) {
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/config.json", b->dir);
  an_error_t err = NULL;
  struct an_spec *spec = NULL;
  cr_assert_eq(an_spec_load_file(path, &spec, &err), 0, "load %s: %s", path, err ? err->msg : "");
  return spec;
}

/* Replace process.args (NULL-terminated list). */
static inline void oci_spec_set_args(struct an_spec *spec, const char *const *args) {
  for (char **a = spec->process->args; a && *a; a++) free(*a);
  free(spec->process->args);
  size_t n = 0;
  while (args[n]) n++;
  spec->process->args = calloc(n + 1, sizeof(char *));
  for (size_t i = 0; i < n; i++) spec->process->args[i] = strdup(args[i]);
}

/* A bundle from tests/lib/bundle.h (busybox rootfs, private state root)
 * whose config.json is the default spec (an_spec_new_default) with
 * root.path "rootfs" (relative, as `spec` writes it) running `args`. */
static inline void oci_bundle_make(struct oci_bundle *b, const char *tag, const char *const *args) {
  memset(b, 0, sizeof *b);
  an_test_bundle_make(&b->tb, tag);
  snprintf(b->dir, sizeof b->dir, "%s", b->tb.dir);
  snprintf(b->root, sizeof b->root, "%s", b->tb.state_root);
  snprintf(b->out, sizeof b->out, "%s/out", b->dir);
  snprintf(b->err, sizeof b->err, "%s/err", b->dir);
  an_error_t err = NULL;
  struct an_spec *spec = NULL;
  cr_assert_eq(an_spec_new_default(&spec, &err), 0, "default spec: %s", err ? err->msg : "");
  if (args) oci_spec_set_args(spec, args);
  oci_bundle_write_spec(b, spec);
  an_spec_free(spec);
}

/* Container ids must be unique on the machine (cgroups "agentnest/<id>" are
 * global and other test binaries run at the same time): in oci_cmd's
 * arguments "@name" stands for "name-<pid of this test process>". */
static inline char *oci_expand_ids(const char *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  for (const char *p = s; *p; p++) {
    if (*p == '@' && (p[1] >= 'a' && p[1] <= 'z')) {
      p++;
      while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')) fputc(*p++, f);
      fprintf(f, "-%d", (int) getpid());
      p--;
      continue;
    }
    fputc(*p, f);
  }
  fclose(f);
  return buf;
}

/* Run `<agentnest-oci> --root <root> <args>` through sh, capturing stdout
 * and stderr into b->out / b->err.  Returns the exit status (or 128+signal). */
static inline int oci_cmd(struct oci_bundle *b, const char *fmt, ...) {
  char *args = NULL, *cmd = NULL;
  va_list ap;
  va_start(ap, fmt);
  cr_assert_geq(vasprintf(&args, fmt, ap), 0);
  va_end(ap);
  char *expanded = oci_expand_ids(args);
  cr_assert_geq(asprintf(&cmd, "cd %s && %s --root %s %s >%s 2>%s", b->dir, oci_bin(), b->root,
                         expanded, b->out, b->err), 0);
  free(expanded);
  int st = system(cmd);
  free(args);
  free(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Contents of a file (heap, NUL-terminated; "" if missing). */
static inline char *oci_slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return strdup("");
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) fwrite(chunk, 1, n, mem);
  fclose(mem);
  fclose(f);
  return buf;
}

/* The captured stderr of the last command, in a static buffer (for
 * assertion messages; no allocation to leak). */
static inline const char *oci_last_err(const struct oci_bundle *b) {
  static char buf[4096];
  buf[0] = 0;
  FILE *f = fopen(b->err, "r");
  if (f) {
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
  }
  return buf;
}

/* Kill whatever is left of containers under the bundle's state root, then
 * remove the bundle (tests call this from .fini or at the end). */
static inline void oci_bundle_destroy(struct oci_bundle *b) {
  if (!b->dir[0]) return;
  char cmd[4 * PATH_MAX];
  snprintf(cmd, sizeof cmd,
           "for d in %s/*/; do [ -d \"$d\" ] && %s --root %s delete --force \"$(basename \"$d\")\"; "
           "done >/dev/null 2>&1; true", b->root, oci_bin(), b->root);
  if (system(cmd) != 0) fprintf(stderr, "cleanup of %s failed\n", b->dir);
  /* whatever delete could not remove (the runtime under test may be wrong) */
  DIR *d = opendir(b->root);
  for (struct dirent *de; d && (de = readdir(d));) {
    if (de->d_name[0] == '.') continue;
    char path[300];
    snprintf(path, sizeof path, "agentnest/%s", de->d_name);
    an_test_cgroup_remove(path);
  }
  if (d) closedir(d);
  an_test_bundle_remove(&b->tb);
  b->dir[0] = 0;
}

#endif
