/* sandbox/opts.c — the sandbox options object: defaults, validating setters
 * and getters (agentnest/sandbox_opts.h).  Profiles live in profile.c, the
 * options -> OCI spec translation in spec_build.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include "agentnest/ctx.h"
#include "agentnest/sandbox_opts.h"
#include "sandbox/approval_internal.h"
#include "sandbox/opts_internal.h"
#include "util/cleanup.h"
#include "util/fdcopy.h"
#include "util/units.h"

#define DEFAULT_MEMORY      (512ull << 20)
#define DEFAULT_MILLICPUS   1000
#define DEFAULT_PIDS        256
#define DEFAULT_TMP_SIZE    (64ull << 20)
#define DEFAULT_LIFETIME_MS (300ull * 1000)
#define DEFAULT_MAX_OUTPUT  (10ull << 20)
#define DEFAULT_MAX_READ    (64ull << 20)
#define DEFAULT_DISK        (1ull << 30)
#define DEFAULT_INODES      100000

static char *const empty_strv[] = {NULL};

int an_sandbox_opts_new(struct an_sandbox_opts **out, an_error_t *err) {
  return an_sandbox_opts_new_ctx(NULL, out, err);
}

int an_sandbox_opts_new_ctx(const struct an_ctx *ctx, struct an_sandbox_opts **out, an_error_t *err) {
  return an_sb_opts_new_dir(ctx, NULL, out, err);
}

int an_sb_opts_new_dir(const struct an_ctx *ctx, const char *profiles_dir, struct an_sandbox_opts **out,
                       an_error_t *err) {
  struct an_sandbox_opts *o = calloc(1, sizeof *o);
  if (!o) return an_error_set(err, ENOMEM, "allocate sandbox options");
  o->ctx = ctx;
  o->memory = DEFAULT_MEMORY;
  o->millicpus = DEFAULT_MILLICPUS;
  o->pids = DEFAULT_PIDS;
  o->tmp_size = DEFAULT_TMP_SIZE;
  o->shm_size = AN_SANDBOX_SHM_SIZE_DEFAULT;
  o->lifetime_ms = DEFAULT_LIFETIME_MS;
  o->exec_timeout_ms = 0;
  o->max_output = DEFAULT_MAX_OUTPUT;
  o->max_read = DEFAULT_MAX_READ;
  o->disk = DEFAULT_DISK;
  o->inodes = DEFAULT_INODES;
  o->uid = AN_SANDBOX_DEFAULT_UID;
  o->gid = AN_SANDBOX_DEFAULT_GID;
  o->workdir = strdup(AN_SANDBOX_WORKSPACE);
  o->network = strdup("none");
  if (asprintf(&o->seccomp_profile, "%s/seccomp/default.json", profiles_dir ? profiles_dir : an_ctx_profiles_dir(ctx)) < 0)
    o->seccomp_profile = NULL;
  o->seccomp_default = o->seccomp_profile ? strdup(o->seccomp_profile) : NULL;
  if (!o->workdir || !o->network || !o->seccomp_profile || !o->seccomp_default) {
    an_sandbox_opts_free(o);
    return an_error_set(err, ENOMEM, "allocate sandbox options");
  }
  *out = o;
  return 0;
}

int an_sandbox_opts_set_ctx(struct an_sandbox_opts *o, const struct an_ctx *ctx, an_error_t *err) {
  cleanup_free char *def = NULL;
  if (asprintf(&def, "%s/seccomp/default.json", an_ctx_profiles_dir(ctx)) < 0)
    return an_error_set(err, ENOMEM, "sandbox options: context");
  bool was_default = o->seccomp_profile && o->seccomp_default && !strcmp(o->seccomp_profile, o->seccomp_default);
  if (was_default) {
    char *p = strdup(def);
    if (!p) return an_error_set(err, ENOMEM, "sandbox options: context");
    free(o->seccomp_profile);
    o->seccomp_profile = p;
  }
  free(o->seccomp_default);
  o->seccomp_default = an_steal(&def);
  o->ctx = ctx;
  return 0;
}

static void strv_free(char **v, bool wipe) {
  if (!v) return;
  for (char **s = v; *s; s++) {
    if (wipe) explicit_bzero(*s, strlen(*s));
    free(*s);
  }
  free(v);
}

void an_sandbox_opts_free(struct an_sandbox_opts *o) {
  if (!o) return;
  free(o->image);
  free(o->name);
  free(o->profile);
  free(o->workdir);
  free(o->network);
  free(o->seccomp_profile);
  free(o->seccomp_default);
  strv_free(o->env, false);
  strv_free(o->secret_names, false);
  strv_free(o->secret_values, true);
  an_sb_cdi_opts_free(o);
  an_sb_approval_opts_free(o);
  an_sb_egress_opts_free(o);
  free(o);
}

/* Replace *slot with a copy of value. */
static int replace_string(char **slot, const char *value, const char *option, an_error_t *err) {
  char *copy = strdup(value);
  if (!copy) return an_error_set(err, ENOMEM, "%s: copy value", option);
  free(*slot);
  *slot = copy;
  return 0;
}

int an_sandbox_opts_set_image(struct an_sandbox_opts *o, const char *image, an_error_t *err) {
  if (!image || !*image) return an_error_set(err, EINVAL, "image: empty");
  size_t n = strlen(image);
  if (n > 255) return an_error_set(err, EINVAL, "image \"%.32s...\": longer than 255 characters", image);
  for (const char *p = image; *p; p++)
    if ((unsigned char) *p <= ' ' || *p == 0x7f)
      return an_error_set(err, EINVAL, "image \"%s\": contains a space or control character", image);
  return replace_string(&o->image, image, "image", err);
}

/* Total RAM of the host in bytes (sysinfo(2)); 0 if unknown. */
static uint64_t host_ram(void) {
  struct sysinfo si;
  if (sysinfo(&si) < 0) return 0;
  return (uint64_t) si.totalram * si.mem_unit;
}

/* A size option (memory, tmp_size): at least `min`, at most the host's RAM. */
static int check_size(const char *option, uint64_t bytes, uint64_t min, an_error_t *err) {
  char v[32], lim[32];
  an_format_size(bytes, v, sizeof v);
  if (bytes < min)
    return an_error_set(err, EINVAL, "%s %s: below the minimum of %s", option, v,
                        an_format_size(min, lim, sizeof lim));
  uint64_t ram = host_ram();
  if (ram && bytes > ram)
    return an_error_set(err, EINVAL, "%s %s: more than the host's RAM (%llu bytes)", option, v,
                        (unsigned long long) ram);
  return 0;
}

int an_sandbox_opts_set_memory(struct an_sandbox_opts *o, uint64_t bytes, an_error_t *err) {
  int r = check_size("memory", bytes, AN_SANDBOX_MEMORY_MIN, err);
  if (r < 0) return r;
  o->memory = bytes;
  return 0;
}

int an_sandbox_opts_set_cpus(struct an_sandbox_opts *o, uint64_t millicpus, an_error_t *err) {
  if (millicpus < AN_SANDBOX_MILLICPUS_MIN || millicpus > AN_SANDBOX_MILLICPUS_MAX)
    return an_error_set(err, EINVAL, "cpus %llu.%03llu: must be between 0.01 and %u",
                        (unsigned long long) (millicpus / 1000),
                        (unsigned long long) (millicpus % 1000), AN_SANDBOX_MILLICPUS_MAX / 1000);
  o->millicpus = millicpus;
  return 0;
}

/* The host's pid_max (/proc/sys/kernel/pid_max): no pid namespace can hold
 * more tasks than pids can be numbered, so a larger pids.max is a limit that
 * never limits.  0 if unreadable. */
static uint64_t host_pid_max(void) {
  cleanup_fclose FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
  unsigned long long v = 0;
  if (!f || fscanf(f, "%llu", &v) != 1) return 0;
  return v;
}

int an_sandbox_opts_set_pids(struct an_sandbox_opts *o, uint64_t pids, an_error_t *err) {
  if (pids == 0 || pids > AN_SANDBOX_PIDS_MAX)
    return an_error_set(err, EINVAL, "pids %llu: must be between 1 and %d",
                        (unsigned long long) pids, AN_SANDBOX_PIDS_MAX);
  uint64_t pid_max = host_pid_max();
  if (pid_max && pids > pid_max)
    return an_error_set(err, EINVAL, "pids %llu: more than the host's pid_max (%llu, "
                        "/proc/sys/kernel/pid_max)", (unsigned long long) pids,
                        (unsigned long long) pid_max);
  o->pids = pids;
  return 0;
}

int an_sandbox_opts_set_tmp_size(struct an_sandbox_opts *o, uint64_t bytes, an_error_t *err) {
  int r = check_size("tmp_size", bytes, AN_SANDBOX_TMP_SIZE_MIN, err);
  if (r < 0) return r;
  o->tmp_size = bytes;
  return 0;
}

int an_sandbox_opts_set_shm_size(struct an_sandbox_opts *o, uint64_t bytes, an_error_t *err) {
  int r = check_size("shm_size", bytes, AN_SANDBOX_SHM_SIZE_MIN, err);
  if (r < 0) return r;
  o->shm_size = bytes;
  return 0;
}

int an_sandbox_opts_set_tmp_noexec(struct an_sandbox_opts *o, bool noexec, an_error_t *err) {
  (void) err;
  o->tmp_noexec = noexec;
  return 0;
}

static int check_duration(const char *option, uint64_t ms, an_error_t *err) {
  if (ms == 0) return an_error_set(err, EINVAL, "%s 0ms: must be positive", option);
  if (ms > AN_SANDBOX_DURATION_MAX_MS)
    return an_error_set(err, EINVAL, "%s %llums: longer than 366 days", option,
                        (unsigned long long) ms);
  return 0;
}

int an_sandbox_opts_set_lifetime(struct an_sandbox_opts *o, uint64_t ms, an_error_t *err) {
  int r = check_duration("timeout", ms, err);
  if (r < 0) return r;
  o->lifetime_ms = ms;
  return 0;
}

int an_sandbox_opts_set_max_lifetime(struct an_sandbox_opts *o, uint64_t ms, an_error_t *err) {
  int r = check_duration("max_lifetime", ms, err);
  if (r < 0) return r;
  o->max_lifetime_ms = ms;
  return 0;
}

uint64_t an_sandbox_opts_max_lifetime(const struct an_sandbox_opts *o) {
  if (o->max_lifetime_ms) return o->max_lifetime_ms;
  return o->lifetime_ms > AN_SANDBOX_DEFAULT_MAX_LIFETIME_MS ? o->lifetime_ms : AN_SANDBOX_DEFAULT_MAX_LIFETIME_MS;
}

int an_sandbox_opts_set_exec_timeout(struct an_sandbox_opts *o, uint64_t ms, an_error_t *err) {
  int r = check_duration("exec_timeout", ms, err);
  if (r < 0) return r;
  o->exec_timeout_ms = ms;
  return 0;
}

static int check_cap(const char *option, uint64_t bytes, uint64_t max, an_error_t *err) {
  char v[32], m[32];
  if (bytes == 0) return an_error_set(err, EINVAL, "%s 0B: must be positive", option);
  if (bytes > max)
    return an_error_set(err, EINVAL, "%s %s: more than the maximum of %s", option,
                        an_format_size(bytes, v, sizeof v), an_format_size(max, m, sizeof m));
  return 0;
}

int an_sandbox_opts_set_max_output(struct an_sandbox_opts *o, uint64_t bytes, an_error_t *err) {
  int r = check_cap("max_output", bytes, AN_SANDBOX_MAX_OUTPUT_MAX, err);
  if (r < 0) return r;
  o->max_output = bytes;
  return 0;
}

int an_sandbox_opts_set_max_read(struct an_sandbox_opts *o, uint64_t bytes, an_error_t *err) {
  int r = check_cap("max_read", bytes, AN_SANDBOX_MAX_READ_MAX, err);
  if (r < 0) return r;
  o->max_read = bytes;
  return 0;
}

int an_sandbox_opts_set_disk(struct an_sandbox_opts *o, uint64_t bytes, an_error_t *err) {
  char v[32], lo[32], hi[32];
  if (bytes < AN_SANDBOX_DISK_MIN || bytes > AN_SANDBOX_DISK_MAX)
    return an_error_set(err, EINVAL, "disk %s: must be between %s and %s", an_format_size(bytes, v, sizeof v),
                        an_format_size(AN_SANDBOX_DISK_MIN, lo, sizeof lo),
                        an_format_size(AN_SANDBOX_DISK_MAX, hi, sizeof hi));
  o->disk = bytes;
  return 0;
}

int an_sandbox_opts_set_inodes(struct an_sandbox_opts *o, uint64_t inodes, an_error_t *err) {
  if (inodes < AN_SANDBOX_INODES_MIN || inodes > AN_SANDBOX_INODES_MAX)
    return an_error_set(err, EINVAL, "inodes %llu: must be between %u and %u", (unsigned long long) inodes,
                        AN_SANDBOX_INODES_MIN, AN_SANDBOX_INODES_MAX);
  o->inodes = inodes;
  return 0;
}

/* Whether the first len bytes of s are a portable environment variable
 * name (POSIX.1-2017 XBD 8.1): [A-Za-z_][A-Za-z0-9_]*. */
static bool valid_env_name(const char *s, size_t len) {
  if (len == 0 || (s[0] >= '0' && s[0] <= '9')) return false;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  }
  return true;
}

/* Put "KEY=..." into a NULL-terminated list, replacing an entry with the
 * same KEY (list and the new entry: heap; entry is consumed). */
int an_sandbox_strv_set_env(char ***list, char *entry) {
  size_t keylen = strcspn(entry, "=");
  size_t n = 0;
  for (char **p = *list; p && *p; p++, n++)
    if (strncmp(*p, entry, keylen + 1) == 0) {
      explicit_bzero(*p, strlen(*p));
      free(*p);
      *p = entry;
      return 0;
    }
  char **grown = realloc(*list, (n + 2) * sizeof *grown);
  if (!grown) { free(entry); return -ENOMEM; }
  grown[n] = entry;
  grown[n + 1] = NULL;
  *list = grown;
  return 0;
}

int an_sandbox_opts_add_env(struct an_sandbox_opts *o, const char *kv, an_error_t *err) {
  if (!kv) return an_error_set(err, EINVAL, "env: missing");
  const char *eq = strchr(kv, '=');
  if (!eq) return an_error_set(err, EINVAL, "env \"%s\": expected KEY=value", kv);
  if (!valid_env_name(kv, (size_t) (eq - kv)))
    return an_error_set(err, EINVAL, "env \"%s\": variable name must match [A-Za-z_][A-Za-z0-9_]*", kv);
  char *copy = strdup(kv);
  if (!copy || an_sandbox_strv_set_env(&o->env, copy) < 0)
    return an_error_set(err, ENOMEM, "env \"%s\"", kv);
  return 0;
}

int an_sandbox_opts_add_secret(struct an_sandbox_opts *o, const char *name, const char *value,
                               an_error_t *err) {
  if (!name || !valid_env_name(name, strlen(name)))
    return an_error_set(err, EINVAL, "secret \"%s\": name must match [A-Za-z_][A-Za-z0-9_]*",
                        name ? name : "");
  if (!value || !*value) return an_error_set(err, EINVAL, "secret %s: empty value", name);
  size_t n = 0, idx;
  for (idx = 0; o->secret_names && o->secret_names[idx]; idx++)
    if (strcmp(o->secret_names[idx], name) == 0) break;
  for (n = 0; o->secret_names && o->secret_names[n]; n++) {}
  char *v = strdup(value);
  if (!v) return an_error_set(err, ENOMEM, "secret %s", name);
  if (idx < n) {   /* same name again: replace the value */
    explicit_bzero(o->secret_values[idx], strlen(o->secret_values[idx]));
    free(o->secret_values[idx]);
    o->secret_values[idx] = v;
    return 0;
  }
  cleanup_free char *nm = strdup(name);
  char **names = nm ? realloc(o->secret_names, (n + 2) * sizeof *names) : NULL;
  if (names) o->secret_names = names;
  char **values = names ? realloc(o->secret_values, (n + 2) * sizeof *values) : NULL;
  if (values) o->secret_values = values;
  if (!values) {
    explicit_bzero(v, strlen(v));
    free(v);
    return an_error_set(err, ENOMEM, "secret %s", name);
  }
  names[n] = an_steal(&nm);
  names[n + 1] = NULL;
  values[n] = v;
  values[n + 1] = NULL;
  return 0;
}

/* Read a secret file: at most AN_SANDBOX_SECRET_FILE_MAX bytes, one trailing
 * newline dropped. */
static int read_secret_file(const char *name, const char *path, char **out, an_error_t *err) {
  cleanup_close int fd = an_open_input(AT_FDCWD, path, 0, false, NULL, err);
  if (fd < 0) return an_error_prefix(err, "secret %s", name);
  char *buf = calloc(1, AN_SANDBOX_SECRET_FILE_MAX + 2);
  if (!buf) return an_error_set(err, ENOMEM, "secret %s", name);
  size_t len = 0;
  for (;;) {
    ssize_t k = read(fd, buf + len, AN_SANDBOX_SECRET_FILE_MAX + 1 - len);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      int e = errno;
      explicit_bzero(buf, len);
      free(buf);
      return an_error_set(err, e, "secret %s: read %s", name, path);
    }
    if (k == 0) break;
    len += (size_t) k;
    if (len > AN_SANDBOX_SECRET_FILE_MAX) {
      explicit_bzero(buf, len);
      free(buf);
      return an_error_set(err, EFBIG, "secret %s: %s is larger than %u bytes", name, path,
                          AN_SANDBOX_SECRET_FILE_MAX);
    }
  }
  if (len && buf[len - 1] == '\n') buf[--len] = '\0';
  if (strlen(buf) != len) {
    explicit_bzero(buf, len);
    free(buf);
    return an_error_set(err, EINVAL, "secret %s: %s contains a NUL byte", name, path);
  }
  *out = buf;
  return 0;
}

int an_sandbox_opts_add_secret_arg(struct an_sandbox_opts *o, const char *arg, an_error_t *err) {
  if (!arg || !*arg) return an_error_set(err, EINVAL, "secret: empty");
  const char *eq = strchr(arg, '=');
  if (!eq) {
    if (!valid_env_name(arg, strlen(arg)))
      return an_error_set(err, EINVAL, "secret \"%s\": name must match [A-Za-z_][A-Za-z0-9_]*", arg);
    /* the caller's environment is the front end's (agentnest/ctx.h secret_env) */
    const char *value = an_ctx_secret_env(o->ctx, arg);
    if (!value || !*value)
      return an_error_set(err, ENOENT, "secret %s: not set in the environment%s", arg,
                          o->ctx && an_ctx_has_secret_env(o->ctx) ? "" : " (this front end reads none)");
    return an_sandbox_opts_add_secret(o, arg, value, err);
  }
  cleanup_free char *name = strndup(arg, (size_t) (eq - arg));
  if (!name) return an_error_set(err, ENOMEM, "secret");
  if (eq[1] != '@' || !eq[2])
    return an_error_set(err, EINVAL,
                        "secret %s: expected NAME (from the environment) or NAME=@FILE; "
                        "literal values are refused", name);
  if (!valid_env_name(name, strlen(name)))
    return an_error_set(err, EINVAL, "secret \"%s\": name must match [A-Za-z_][A-Za-z0-9_]*", name);
  char *value = NULL;
  int r = read_secret_file(name, eq + 2, &value, err);
  if (r < 0) return r;
  r = an_sandbox_opts_add_secret(o, name, value, err);
  explicit_bzero(value, strlen(value));
  free(value);
  return r;
}

int an_sandbox_opts_set_workdir(struct an_sandbox_opts *o, const char *path, an_error_t *err) {
  if (!path || !*path) return an_error_set(err, EINVAL, "workdir: empty");
  if (strlen(path) >= PATH_MAX)
    return an_error_set(err, EINVAL, "workdir \"%.32s...\": longer than %d bytes", path, PATH_MAX - 1);
  if (path[0] != '/') return an_error_set(err, EINVAL, "workdir \"%s\": must be absolute", path);
  for (const char *p = path; *p;) {
    while (*p == '/') p++;
    size_t n = strcspn(p, "/");
    if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
      return an_error_set(err, EINVAL, "workdir \"%s\": \".\" and \"..\" components are refused", path);
    p += n;
  }
  static const char *const refused[] = {"/proc", "/sys", "/dev"};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    size_t n = strlen(refused[i]);
    const char *q = path;
    while (q[0] == '/' && q[1] == '/') q++;   /* "//proc" is /proc */
    if (strncmp(q, refused[i], n) == 0 && (q[n] == '\0' || q[n] == '/'))
      return an_error_set(err, EINVAL, "workdir \"%s\": must not be under %s", path, refused[i]);
  }
  return replace_string(&o->workdir, path, "workdir", err);
}

int an_sandbox_opts_set_network(struct an_sandbox_opts *o, const char *mode, an_error_t *err) {
  if (mode && (strcmp(mode, "none") == 0 || strcmp(mode, "allowlist") == 0 || strcmp(mode, "full") == 0))
    return replace_string(&o->network, mode, "network", err);
  return an_error_set(err, EINVAL, "network \"%s\": unknown mode (none, allowlist, full)",
                      mode ? mode : "");
}

int an_sandbox_opts_set_seccomp_profile(struct an_sandbox_opts *o, const char *path, an_error_t *err) {
  if (!path || !*path) return an_error_set(err, EINVAL, "seccomp_profile: empty path");
  struct stat st;
  if (stat(path, &st) < 0) return an_error_set(err, errno, "seccomp_profile %s", path);
  if (!S_ISREG(st.st_mode))
    return an_error_set(err, EINVAL, "seccomp_profile %s: not a regular file", path);
  /* Kept absolute: the monitor and `fork` read it later from another cwd. */
  cleanup_free char *abs = realpath(path, NULL);
  if (!abs) return an_error_set(err, errno, "seccomp_profile %s: realpath", path);
  return replace_string(&o->seccomp_profile, abs, "seccomp_profile", err);
}

int an_sandbox_opts_set_landlock(struct an_sandbox_opts *o, const char *mode, an_error_t *err) {
  static const struct { const char *name; enum an_sandbox_landlock mode; } modes[] = {
    {"best-effort", AN_SANDBOX_LANDLOCK_BEST_EFFORT},
    {"if-available", AN_SANDBOX_LANDLOCK_BEST_EFFORT},   /* the engine annotation's word */
    {"required", AN_SANDBOX_LANDLOCK_REQUIRED},
    {"off", AN_SANDBOX_LANDLOCK_OFF},
  };
  for (size_t i = 0; mode && i < sizeof modes / sizeof *modes; i++)
    if (strcmp(mode, modes[i].name) == 0) {
      o->landlock = modes[i].mode;
      return 0;
    }
  return an_error_set(err, EINVAL, "landlock \"%s\": unknown mode (required, best-effort, off)",
                      mode ? mode : "");
}

const char *an_sandbox_landlock_name(enum an_sandbox_landlock mode) {
  switch (mode) {
  case AN_SANDBOX_LANDLOCK_REQUIRED: return "required";
  case AN_SANDBOX_LANDLOCK_OFF: return "off";
  case AN_SANDBOX_LANDLOCK_BEST_EFFORT: break;
  }
  return "best-effort";
}

void an_sandbox_opts_set_seccomp_unsafe(struct an_sandbox_opts *o, bool unsafe) {
  o->seccomp_unsafe = unsafe;
}

int an_sandbox_opts_set_name(struct an_sandbox_opts *o, const char *name, an_error_t *err) {
  size_t n = name ? strlen(name) : 0;
  bool ok = n >= 1 && n <= 63;
  for (size_t i = 0; ok && i < n; i++) {
    char c = name[i];
    bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    ok = alnum || (i > 0 && (c == '_' || c == '.' || c == '-'));
  }
  if (!ok)
    return an_error_set(err, EINVAL, "name \"%s\": must match [A-Za-z0-9][A-Za-z0-9_.-]{0,62}",
                        name ? name : "");
  return replace_string(&o->name, name, "name", err);
}

typedef int (*u64_setter)(struct an_sandbox_opts *, uint64_t, an_error_t *);
typedef int (*u64_parser)(const char *, uint64_t *, an_error_t *);

/* pids as text: a strict decimal integer (no sign, no spaces, no units). */
static int parse_count(const char *text, uint64_t *out, an_error_t *err) {
  if (!text || *text < '0' || *text > '9')
    return an_error_set(err, EINVAL, "pids \"%s\": expected a decimal integer", text ? text : "");
  uint64_t v = 0;
  for (const char *p = text; *p; p++) {
    if (*p < '0' || *p > '9')
      return an_error_set(err, EINVAL, "pids \"%s\": expected a decimal integer", text);
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t) (*p - '0'), &v))
      return an_error_set(err, ERANGE, "pids \"%s\": too large", text);
  }
  *out = v;
  return 0;
}

int an_sandbox_opts_set_option(struct an_sandbox_opts *o, const char *option, const char *text,
                               an_error_t *err) {
  static const struct {
    const char *name;
    u64_parser parse;
    u64_setter set;
  } numeric[] = {
    {"memory", an_parse_size, an_sandbox_opts_set_memory},
    {"tmp_size", an_parse_size, an_sandbox_opts_set_tmp_size},
    {"shm_size", an_parse_size, an_sandbox_opts_set_shm_size},
    {"max_output", an_parse_size, an_sandbox_opts_set_max_output},
    {"max_read", an_parse_size, an_sandbox_opts_set_max_read},
    {"timeout", an_parse_duration_ms, an_sandbox_opts_set_lifetime},
    {"exec_timeout", an_parse_duration_ms, an_sandbox_opts_set_exec_timeout},
    {"cpus", an_parse_millicpus, an_sandbox_opts_set_cpus},
    {"pids", parse_count, an_sandbox_opts_set_pids},
    {"disk", an_parse_size, an_sandbox_opts_set_disk},
    {"inodes", parse_count, an_sandbox_opts_set_inodes},
    {"max_lifetime", an_parse_duration_ms, an_sandbox_opts_set_max_lifetime},
  };
  if (!option) return an_error_set(err, EINVAL, "no option name");
  for (size_t i = 0; i < sizeof numeric / sizeof *numeric; i++)
    if (strcmp(option, numeric[i].name) == 0) {
      uint64_t v;
      int r = numeric[i].parse(text, &v, err);
      return r < 0 ? r : numeric[i].set(o, v, err);
    }
  if (strcmp(option, "image") == 0) return an_sandbox_opts_set_image(o, text, err);
  if (strcmp(option, "name") == 0) return an_sandbox_opts_set_name(o, text, err);
  if (strcmp(option, "workdir") == 0) return an_sandbox_opts_set_workdir(o, text, err);
  if (strcmp(option, "network") == 0) return an_sandbox_opts_set_network(o, text, err);
  if (strcmp(option, "seccomp_profile") == 0) return an_sandbox_opts_set_seccomp_profile(o, text, err);
  if (strcmp(option, "landlock") == 0) return an_sandbox_opts_set_landlock(o, text, err);
  if (strcmp(option, "seccomp_unsafe") == 0) {
    if (text && (strcmp(text, "true") == 0 || strcmp(text, "false") == 0)) {
      an_sandbox_opts_set_seccomp_unsafe(o, strcmp(text, "true") == 0);
      return 0;
    }
    return an_error_set(err, EINVAL, "seccomp_unsafe \"%s\": expected true or false",
                        text ? text : "");
  }
  if (strcmp(option, "env") == 0) return an_sandbox_opts_add_env(o, text, err);
  if (strcmp(option, "tmp_noexec") == 0) {
    if (text && strcmp(text, "true") == 0) return an_sandbox_opts_set_tmp_noexec(o, true, err);
    if (text && strcmp(text, "false") == 0) return an_sandbox_opts_set_tmp_noexec(o, false, err);
    return an_error_set(err, EINVAL, "tmp_noexec \"%s\": expected true or false", text ? text : "");
  }
  if (strcmp(option, "secret") == 0) return an_sandbox_opts_add_secret_arg(o, text, err);
  int cdi_r = 0;
  if (an_sb_cdi_set_option(o, option, text, &cdi_r, err)) return cdi_r;
  if (an_sb_approval_set_option(o, option, text, &cdi_r, err)) return cdi_r;
  if (an_sb_egress_set_option(o, option, text, &cdi_r, err)) return cdi_r;
  return an_error_set(err, EINVAL, "unknown option \"%s\"", option);
}

int an_sandbox_opts_set_profile_name(struct an_sandbox_opts *o, const char *profile, an_error_t *err) {
  return replace_string(&o->profile, profile, "profile", err);
}

const char *an_sandbox_opts_image(const struct an_sandbox_opts *o) { return o->image; }
const char *an_sandbox_opts_name(const struct an_sandbox_opts *o) { return o->name; }
const char *an_sandbox_opts_profile(const struct an_sandbox_opts *o) { return o->profile; }
uint64_t an_sandbox_opts_memory(const struct an_sandbox_opts *o) { return o->memory; }
uint64_t an_sandbox_opts_cpus(const struct an_sandbox_opts *o) { return o->millicpus; }
uint64_t an_sandbox_opts_pids(const struct an_sandbox_opts *o) { return o->pids; }
uint64_t an_sandbox_opts_tmp_size(const struct an_sandbox_opts *o) { return o->tmp_size; }
bool an_sandbox_opts_tmp_noexec(const struct an_sandbox_opts *o) { return o->tmp_noexec; }
uint64_t an_sandbox_opts_shm_size(const struct an_sandbox_opts *o) { return o->shm_size; }
uint64_t an_sandbox_opts_lifetime(const struct an_sandbox_opts *o) { return o->lifetime_ms; }
uint64_t an_sandbox_opts_exec_timeout(const struct an_sandbox_opts *o) { return o->exec_timeout_ms; }
uint64_t an_sandbox_opts_max_output(const struct an_sandbox_opts *o) { return o->max_output; }
uint64_t an_sandbox_opts_max_read(const struct an_sandbox_opts *o) { return o->max_read; }
uint64_t an_sandbox_opts_disk(const struct an_sandbox_opts *o) { return o->disk; }
uint64_t an_sandbox_opts_inodes(const struct an_sandbox_opts *o) { return o->inodes; }
const char *an_sandbox_opts_workdir(const struct an_sandbox_opts *o) { return o->workdir; }
const char *an_sandbox_opts_network(const struct an_sandbox_opts *o) { return o->network; }
const char *an_sandbox_opts_seccomp_profile(const struct an_sandbox_opts *o) { return o->seccomp_profile; }
bool an_sandbox_opts_seccomp_unsafe(const struct an_sandbox_opts *o) { return o->seccomp_unsafe; }
enum an_sandbox_landlock an_sandbox_opts_landlock(const struct an_sandbox_opts *o) { return o->landlock; }
uid_t an_sandbox_opts_uid(const struct an_sandbox_opts *o) { return o->uid; }
gid_t an_sandbox_opts_gid(const struct an_sandbox_opts *o) { return o->gid; }
char *const *an_sandbox_opts_env(const struct an_sandbox_opts *o) {
  return o->env ? o->env : empty_strv;
}
char *const *an_sandbox_opts_secret_values(const struct an_sandbox_opts *o) {
  return o->secret_values ? o->secret_values : empty_strv;
}
