/* engine/landlock.c — confine writes to the writable mounts with a Landlock
 * ruleset (see landlock.h; kernel Documentation/userspace-api/landlock.rst,
 * landlock_create_ruleset(2), landlock_add_rule(2), landlock_restrict_self(2)). */
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "engine/landlock.h"
#include "util/cleanup.h"

/* The build host's <linux/landlock.h> may predate these (Debian 12 ships
 * the ABI 2 header); the values are the kernel's UAPI. */
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif

/* ABI 1 write rights. */
#define WRITE_ABI1                                                                          \
  (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |                          \
   LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |                          \
   LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK | \
   LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM)
/* Rights that make sense on a file (not a directory) rule. */
#define FILE_RIGHTS (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE)

/* Only the first member matters for the versions this file handles; the
 * kernel accepts a shorter struct (extensible struct ABI). */
struct ruleset_attr_v1 {
  __u64 handled_access_fs;
};

int an_landlock_abi_version(void) {
  long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (v < 0) return (errno == ENOSYS || errno == EOPNOTSUPP) ? -EOPNOTSUPP : -errno;
  return (int) v;
}

unsigned long long an_landlock_write_accesses(int abi) {
  if (abi < 1) return 0;
  unsigned long long a = WRITE_ABI1;
  if (abi >= 2) a |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) a |= LANDLOCK_ACCESS_FS_TRUNCATE;
  return a;
}

static int add_path_rule(int ruleset, const char *path, unsigned long long handled, an_error_t *err) {
  if (!path || path[0] != '/')
    return an_error_set(err, EINVAL, "landlock: writable path \"%s\" is not absolute",
                        path ? path : "(null)");
  cleanup_close int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) return an_error_set(err, errno, "landlock: open writable path %s", path);
  struct stat st;
  if (fstat(fd, &st) < 0) return an_error_set(err, errno, "landlock: stat %s", path);
  struct landlock_path_beneath_attr rule = {
    .allowed_access = S_ISDIR(st.st_mode) ? handled : (handled & FILE_RIGHTS),
    .parent_fd = fd,
  };
  if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) < 0)
    return an_error_set(err, errno, "landlock: add rule for %s", path);
  return 0;
}

/* As an_landlock_confine_writes; n == 0 denies every write. */
static int confine(const char **writable_paths, size_t n, an_error_t *err) {
  int abi = an_landlock_abi_version();
  if (abi == -EOPNOTSUPP) return an_error_set(err, EOPNOTSUPP, "landlock: not supported by this kernel");
  if (abi < 0) return an_error_set(err, -abi, "landlock: query ABI version");
  struct ruleset_attr_v1 attr = {.handled_access_fs = an_landlock_write_accesses(abi)};
  cleanup_close int ruleset = (int) syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (ruleset < 0) return an_error_set(err, errno, "landlock: create ruleset (ABI %d)", abi);
  for (size_t i = 0; i < n; i++) {
    int r = add_path_rule(ruleset, writable_paths[i], attr.handled_access_fs, err);
    if (r < 0) return r;
  }
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
    return an_error_set(err, errno, "landlock: restrict self");
  return 0;
}

int an_landlock_confine_writes(const char **writable_paths, size_t n, an_error_t *err) {
  if (!writable_paths || n == 0)
    return an_error_set(err, EINVAL, "landlock: no writable paths given");
  return confine(writable_paths, n, err);
}

static bool has_option(char *const *options, const char *opt) {
  for (size_t i = 0; options && options[i]; i++)
    if (strcmp(options[i], opt) == 0) return true;
  return false;
}

static bool not_path_based(const char *type) {
  static const char *const skip[] = {"proc", "sysfs", "cgroup", "cgroup2", "mqueue", NULL};
  for (size_t i = 0; type && skip[i]; i++)
    if (strcmp(type, skip[i]) == 0) return true;
  return false;
}

int an_landlock_writable_paths(const struct an_spec *spec, const char ***paths, size_t *n,
                               an_error_t *err) {
  cleanup_free const char **v = calloc(spec->n_mounts + 2, sizeof *v);
  if (!v) return an_error_set(err, ENOMEM, "landlock: writable paths");
  size_t k = 0;
  if (!spec->root.readonly) v[k++] = "/";
  for (size_t i = 0; i < spec->n_mounts; i++) {
    const struct an_spec_mount *m = &spec->mounts[i];
    if (!m->destination || has_option(m->options, "ro") || not_path_based(m->type)) continue;
    v[k++] = m->destination;
  }
  *paths = an_steal(&v);
  *n = k;
  return 0;
}

int an_landlock_mode_of(const struct an_spec *spec, enum an_landlock_mode *mode, an_error_t *err) {
  *mode = AN_LANDLOCK_OFF;
  for (size_t i = 0; i < spec->n_annotations; i++) {
    const struct an_spec_key_value *a = &spec->annotations[i];
    if (!a->key || strcmp(a->key, AN_LANDLOCK_ANNOTATION) != 0) continue;
    const char *v = a->value ? a->value : "";
    if (!strcmp(v, "off")) *mode = AN_LANDLOCK_OFF;
    else if (!strcmp(v, "if-available")) *mode = AN_LANDLOCK_IF_AVAILABLE;
    else if (!strcmp(v, "required")) *mode = AN_LANDLOCK_REQUIRED;
    else
      return an_error_set(err, EINVAL, "annotations[\"" AN_LANDLOCK_ANNOTATION "\"]: unknown value "
                          "\"%.64s\" (want off, if-available or required)", v);
  }
  return 0;
}

int an_landlock_check(const struct an_spec *spec, an_error_t *err) {
  enum an_landlock_mode mode;
  int r = an_landlock_mode_of(spec, &mode, err);
  if (r < 0) return r;
  if (mode == AN_LANDLOCK_REQUIRED && an_landlock_abi_version() < 1)
    return an_error_set(err, EOPNOTSUPP, "annotations[\"" AN_LANDLOCK_ANNOTATION "\"]: Landlock "
                        "is required but this kernel does not offer it (no landlock in "
                        "/sys/kernel/security/lsm, or built without CONFIG_SECURITY_LANDLOCK)");
  return 0;
}

int an_landlock_apply(const struct an_spec *spec, an_error_t *err) {
  enum an_landlock_mode mode;
  int r = an_landlock_mode_of(spec, &mode, err);
  if (r < 0 || mode == AN_LANDLOCK_OFF) return r;
  if (mode == AN_LANDLOCK_IF_AVAILABLE && an_landlock_abi_version() < 1) return 0;
  cleanup_free const char **paths = NULL;
  size_t n = 0;
  if ((r = an_landlock_writable_paths(spec, &paths, &n, err)) < 0) return r;
  return confine(paths, n, err);
}
