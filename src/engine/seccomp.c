/* engine/seccomp.c — runtime-spec seccomp profile -> classic BPF (libseccomp),
 * the compiled-program cache keyed by the profile's canonical text, and
 * seccomp(2) install.
 * See engine/seccomp.h for the contract.  Not here: no_new_privs, the Docker
 * profile loader, user notification. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "engine/seccomp.h"
#include "engine/state.h"
#include "util/cleanup.h"
#include "util/sha256.h"

#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif

/* The largest program the kernel accepts (BPF_MAXINSNS, linux/bpf_common.h). */
#define AN_SECCOMP_MAX_INSNS 4096

static void seccomp_ctx_release(scmp_filter_ctx *ctx) { if (*ctx) seccomp_release(*ctx); }
#define cleanup_seccomp_ctx __attribute__((cleanup(seccomp_ctx_release)))

/* --- actions, flags ------------------------------------------------------ */

/* Resolve the errnoRet rules documented in seccomp.h and reject actions this
 * runtime cannot honour.  `field` names the JSON path for messages. */
static int resolve_action(uint32_t action, bool has_ret, unsigned ret, const char *field,
                          uint32_t *out, an_error_t *err) {
  uint32_t kind = action & 0xffff0000U, data = action & 0xffffU;
  switch (action) {
  case SCMP_ACT_KILL_PROCESS: case SCMP_ACT_KILL_THREAD: case SCMP_ACT_TRAP:
  case SCMP_ACT_LOG: case SCMP_ACT_ALLOW:
    *out = action;
    return 0;
  case SCMP_ACT_NOTIFY:
    return an_error_set(err, EOPNOTSUPP,
                        "%s: SCMP_ACT_NOTIFY (seccomp user notification) is not supported", field);
  }
  if (kind == SCMP_ACT_ERRNO(0) || kind == SCMP_ACT_TRACE(0)) {
    unsigned v = has_ret ? ret : (data ? data : EPERM);
    if (v > 0xffff)
      return an_error_set(err, EINVAL, "%s: errnoRet %u out of range", field, v);
    *out = kind | v;
    return 0;
  }
  return an_error_set(err, EINVAL, "%s: unknown seccomp action 0x%08x", field, action);
}

static int parse_flags(char *const *flags, unsigned *out, an_error_t *err) {
  static const struct { const char *name; unsigned bit; } known[] = {
    {"SECCOMP_FILTER_FLAG_TSYNC", SECCOMP_FILTER_FLAG_TSYNC},
    {"SECCOMP_FILTER_FLAG_LOG", SECCOMP_FILTER_FLAG_LOG},
    {"SECCOMP_FILTER_FLAG_SPEC_ALLOW", SECCOMP_FILTER_FLAG_SPEC_ALLOW},
  };
  *out = 0;
  for (size_t i = 0; flags && flags[i]; i++) {
    bool found = false;
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
      if (strcmp(flags[i], known[k].name) == 0) { *out |= known[k].bit; found = true; }
    if (found) continue;
    if (strcmp(flags[i], "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV") == 0)
      return an_error_set(err, EOPNOTSUPP,
                          "linux.seccomp.flags[%zu]: %s needs seccomp user notification, "
                          "which is not supported", i, flags[i]);
    return an_error_set(err, EINVAL, "linux.seccomp.flags[%zu]: unknown flag \"%s\"", i, flags[i]);
  }
  return 0;
}

/* Check everything that does not need libseccomp, so that the cache key is
 * only computed for profiles that would compile the same way. */
static int validate(const struct an_spec_seccomp *s, an_error_t *err) {
  uint32_t a;
  unsigned flags;
  int r;
  if (s->listener_path && s->listener_path[0])
    return an_error_set(err, EOPNOTSUPP,
                        "linux.seccomp.listenerPath \"%s\": seccomp user notification is not "
                        "supported", s->listener_path);
  if ((r = resolve_action(s->default_action, s->has_default_errno_ret, s->default_errno_ret,
                          "linux.seccomp.defaultAction", &a, err)) < 0)
    return r;
  if ((r = parse_flags(s->flags, &flags, err)) < 0) return r;
  for (size_t i = 0; i < s->n_syscalls; i++) {
    const struct an_spec_seccomp_syscall *sc = &s->syscalls[i];
    char field[64];
    snprintf(field, sizeof field, "linux.seccomp.syscalls[%zu].action", i);
    if ((r = resolve_action(sc->action, sc->has_errno_ret, sc->errno_ret, field, &a, err)) < 0)
      return r;
    for (size_t j = 0; j < sc->n_args; j++) {
      if (sc->args[j].index > 5)
        return an_error_set(err, EINVAL, "linux.seccomp.syscalls[%zu].args[%zu].index: %u is not "
                            "0..5", i, j, sc->args[j].index);
      if (sc->args[j].op < SCMP_CMP_NE || sc->args[j].op > SCMP_CMP_MASKED_EQ)
        return an_error_set(err, EINVAL, "linux.seccomp.syscalls[%zu].args[%zu].op: unknown "
                            "operator %d", i, j, sc->args[j].op);
    }
  }
  return 0;
}

/* --- the cache key ------------------------------------------------------- */

/* A canonical text form of the profile after action resolution: every field
 * that changes the compiled program, strings length-prefixed so no value can
 * imitate another's framing; plus the libseccomp version and native arch,
 * since both change the output. */
static int serialize(const struct an_spec_seccomp *s, char **buf, size_t *len, an_error_t *err) {
  FILE *f = open_memstream(buf, len);
  if (!f) return an_error_set(err, errno, "open_memstream");
  const struct scmp_version *v = seccomp_version();
  uint32_t a;
  unsigned flags = 0;
  parse_flags(s->flags, &flags, NULL);
  resolve_action(s->default_action, s->has_default_errno_ret, s->default_errno_ret, "", &a, NULL);
  fprintf(f, "agentnest-seccomp 1\nlibseccomp %u.%u.%u\nnative %u\ndefault %u\nflags %u\n",
          v->major, v->minor, v->micro, seccomp_arch_native(), a, flags);
  fprintf(f, "archs %zu", s->n_architectures);
  for (size_t i = 0; i < s->n_architectures; i++) fprintf(f, " %u", s->architectures[i]);
  fprintf(f, "\nsyscalls %zu\n", s->n_syscalls);
  for (size_t i = 0; i < s->n_syscalls; i++) {
    const struct an_spec_seccomp_syscall *sc = &s->syscalls[i];
    resolve_action(sc->action, sc->has_errno_ret, sc->errno_ret, "", &a, NULL);
    fprintf(f, "action %u names", a);
    for (char **n = sc->names; n && *n; n++) fprintf(f, " %zu:%s", strlen(*n), *n);
    fprintf(f, "\nargs %zu", sc->n_args);
    for (size_t j = 0; j < sc->n_args; j++)
      fprintf(f, " %u,%d,%llu,%llu", sc->args[j].index, sc->args[j].op,
              (unsigned long long) sc->args[j].value, (unsigned long long) sc->args[j].value_two);
    fputc('\n', f);
  }
  if (fclose(f) != 0) { free(*buf); *buf = NULL; return an_error_set(err, ENOMEM, "serialize seccomp profile"); }
  return 0;
}

/* The cache name of a canonical text: FNV-1a (64 bits) of it in hex.  Not a
 * digest: it only picks the file; the file holds the whole text, and a
 * program is taken from it only when the text matches byte for byte
 * (cache_read), so two profiles that share a name just take turns.  A
 * sha256 here loaded libcrypto into every create (1.9 ms of a 15.8 ms
 * one-shot run, measured); the digest policy reports is an_seccomp_digest. */
static char *cache_name_of(const char *text, size_t len) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char) text[i];
    h *= 1099511628211ull;
  }
  char *name = malloc(sizeof "p-0123456789abcdef.bpf");
  if (name) snprintf(name, sizeof "p-0123456789abcdef.bpf", "p-%016llx.bpf", (unsigned long long) h);
  return name;
}

int an_seccomp_cache_name(const struct an_spec_seccomp *s, char **name, an_error_t *err) {
  int r = validate(s, err);
  if (r < 0) return r;
  cleanup_free char *text = NULL;
  size_t len = 0;
  if ((r = serialize(s, &text, &len, err)) < 0) return r;
  if (!(*name = cache_name_of(text, len))) return an_error_set(err, ENOMEM, "seccomp cache name");
  return 0;
}

int an_seccomp_digest(const struct an_spec_seccomp *s, char out[AN_SECCOMP_DIGEST_LEN], an_error_t *err) {
  int r = validate(s, err);
  if (r < 0) return r;
  cleanup_free char *text = NULL;
  size_t len = 0;
  if ((r = serialize(s, &text, &len, err)) < 0) return r;
  char hex[AN_SHA256_HEX_LEN];
  if ((r = an_sha256_hex(text, len, "seccomp profile", hex, err)) < 0) return r;
  snprintf(out, AN_SECCOMP_DIGEST_LEN, "sha256:%s", hex);
  return 0;
}

/* --- the cache ----------------------------------------------------------- */

/* A directory or file we may trust: ours, and nobody else can write it. */
static bool trusted(const struct stat *st) {
  return st->st_uid == geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* Open (creating if missing) the cache directory; -1 if it cannot be trusted. */
static int open_cache_dir(const char *dir) {
  if (mkdir(dir, 0700) < 0 && errno != EEXIST) return -1;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) < 0 || !trusted(&st))) { close(fd); return -1; }
  return fd;
}

static struct an_seccomp_program *program_new(size_t n) {
  struct an_seccomp_program *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->filter = calloc(n ? n : 1, sizeof *p->filter);
  if (!p->filter) { free(p); return NULL; }
  p->prog.len = (unsigned short) n;
  p->prog.filter = p->filter;
  return p;
}

/* Read `fd` (a memfd or cache file; `st` its fstat) as a program.  NULL if
 * it is not one. */
static struct an_seccomp_program *program_from_fd(int fd, const struct stat *st) {
  if (st->st_size <= 0 || st->st_size % sizeof(struct sock_filter) ||
      (size_t) st->st_size > AN_SECCOMP_MAX_INSNS * sizeof(struct sock_filter))
    return NULL;
  size_t n = st->st_size / sizeof(struct sock_filter);
  struct an_seccomp_program *p = program_new(n);
  if (!p) return NULL;
  if (pread(fd, p->filter, st->st_size, 0) != st->st_size) { an_seccomp_program_free(p); return NULL; }
  return p;
}

/* A cache file: CACHE_MAGIC, the canonical text's length in decimal and a
 * newline, the text, then the program's instructions. */
#define CACHE_MAGIC "agentnest-seccomp-cache 1\n"
#define CACHE_MAX (1u << 20)

/* The program cached as `name` for canonical text `text`, or NULL (missing,
 * not ours, not a cache file, or another profile's). */
static struct an_seccomp_program *cache_read(int dirfd, const char *name, const char *text, size_t len) {
  cleanup_close int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !trusted(&st) || st.st_size <= 0 ||
      (size_t) st.st_size > CACHE_MAX)
    return NULL;
  cleanup_free char *buf = malloc((size_t) st.st_size);
  if (!buf || pread(fd, buf, (size_t) st.st_size, 0) != st.st_size) return NULL;
  char head[64];
  int hl = snprintf(head, sizeof head, CACHE_MAGIC "%zu\n", len);
  size_t off = (size_t) hl + len;
  if ((size_t) st.st_size <= off || memcmp(buf, head, (size_t) hl) || memcmp(buf + hl, text, len)) return NULL;
  size_t sz = (size_t) st.st_size - off;
  if (sz % sizeof(struct sock_filter) || sz > AN_SECCOMP_MAX_INSNS * sizeof(struct sock_filter)) return NULL;
  struct an_seccomp_program *p = program_new(sz / sizeof(struct sock_filter));
  if (p) memcpy(p->filter, buf + off, sz);
  return p;
}

/* Write atomically: a temp file in the same directory, then rename. */
static void cache_write(int dirfd, const char *name, const char *text, size_t len,
                        const struct an_seccomp_program *p) {
  char tmp[128];
  snprintf(tmp, sizeof tmp, ".%s.%d.tmp", name, (int) getpid());
  cleanup_close int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  char head[64];
  int hl = snprintf(head, sizeof head, CACHE_MAGIC "%zu\n", len);
  size_t sz = p->prog.len * sizeof(struct sock_filter);
  struct iovec v[3] = {{head, (size_t) hl}, {(void *) text, len}, {p->filter, sz}};
  if (writev(fd, v, 3) != (ssize_t) ((size_t) hl + len + sz) || renameat(dirfd, tmp, dirfd, name) < 0)
    unlinkat(dirfd, tmp, 0);
}

/* A program saved by an_seccomp_program_save: the instructions alone. */
static struct an_seccomp_program *saved_read(int dirfd, const char *name) {
  cleanup_close int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !trusted(&st)) return NULL;
  return program_from_fd(fd, &st);
}

/* --- compilation --------------------------------------------------------- */

static int add_rule(scmp_filter_ctx ctx, uint32_t action, int nr, const char *name,
                    const struct scmp_arg_cmp *cmp, unsigned n, an_error_t *err) {
  int r = seccomp_rule_add_array(ctx, action, nr, n, cmp);
  if (r < 0) return an_error_set(err, -r, "seccomp rule for syscall \"%s\"", name);
  return 0;
}

static int add_syscall(scmp_filter_ctx ctx, uint32_t def, const struct an_spec_seccomp_syscall *sc,
                       an_error_t *err) {
  uint32_t action;
  int r;
  resolve_action(sc->action, sc->has_errno_ret, sc->errno_ret, "", &action, NULL);
  if (action == def) return 0;   /* libseccomp refuses it; it changes nothing (runc does the same) */
  struct scmp_arg_cmp cmp[6];
  size_t n = sc->n_args > 6 ? 6 : sc->n_args;
  bool same_index = false;
  for (size_t j = 0; j < n; j++) {
    cmp[j] = (struct scmp_arg_cmp){ sc->args[j].index, sc->args[j].op,
                                    sc->args[j].value, sc->args[j].value_two };
    for (size_t k = 0; k < j; k++)
      if (sc->args[k].index == sc->args[j].index) same_index = true;
  }
  for (char **name = sc->names; name && *name; name++) {
    int nr = seccomp_syscall_resolve_name(*name);
    if (nr == __NR_SCMP_ERROR) continue;   /* unknown to this libseccomp: skipped, as runc */
    if (same_index) {
      /* libseccomp cannot AND two conditions on one argument; runc adds one
       * rule per condition (OR), and so do we. */
      for (size_t j = 0; j < n; j++)
        if ((r = add_rule(ctx, action, nr, *name, &cmp[j], 1, err)) < 0) return r;
    } else if ((r = add_rule(ctx, action, nr, *name, cmp, n, err)) < 0)
      return r;
  }
  return 0;
}

static int compile(const struct an_spec_seccomp *s, struct an_seccomp_program **out,
                   an_error_t *err) {
  uint32_t def;
  int r;
  resolve_action(s->default_action, s->has_default_errno_ret, s->default_errno_ret, "", &def, NULL);
  cleanup_seccomp_ctx scmp_filter_ctx ctx = seccomp_init(def);
  if (!ctx) return an_error_set(err, EINVAL, "seccomp_init: default action 0x%08x refused", def);
  /* Any architecture or ABI not listed kills the process (BL-12). */
  if ((r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) < 0)
    return an_error_set(err, -r, "seccomp bad-arch action");
  /* The filter is exported, not loaded by libseccomp: no NNP from it. */
  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
  /* A binary tree keeps lookups short for long allowlists. */
  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  uint32_t native = seccomp_arch_native();
  bool native_listed = s->n_architectures == 0;
  for (size_t i = 0; i < s->n_architectures; i++) {
    if (s->architectures[i] == native) { native_listed = true; continue; }
    r = seccomp_arch_add(ctx, s->architectures[i]);
    if (r < 0 && r != -EEXIST)
      return an_error_set(err, -r, "linux.seccomp.architectures[%zu]: architecture 0x%08x", i,
                          s->architectures[i]);
  }
  if (!native_listed && (r = seccomp_arch_remove(ctx, native)) < 0)
    return an_error_set(err, -r, "seccomp: remove native architecture");
  for (size_t i = 0; i < s->n_syscalls; i++)
    if ((r = add_syscall(ctx, def, &s->syscalls[i], err)) < 0)
      return an_error_prefix(err, "linux.seccomp.syscalls[%zu]", i);
  /* libseccomp 2.5 exports only to an fd. */
  cleanup_close int mfd = memfd_create("agentnest-seccomp", MFD_CLOEXEC);
  if (mfd < 0) return an_error_set(err, errno, "memfd_create for seccomp export");
  if ((r = seccomp_export_bpf(ctx, mfd)) < 0) return an_error_set(err, -r, "seccomp_export_bpf");
  struct stat st;
  if (fstat(mfd, &st) < 0) return an_error_set(err, errno, "fstat seccomp export memfd");
  struct an_seccomp_program *p = program_from_fd(mfd, &st);
  if (!p) return an_error_set(err, E2BIG, "seccomp program: empty or longer than %d instructions",
                              AN_SECCOMP_MAX_INSNS);
  *out = p;
  return 0;
}

int an_seccomp_prepare(const struct an_spec_seccomp *s, const char *cache_dir,
                       struct an_seccomp_program **out, an_error_t *err) {
  cleanup_free char *name = NULL;
  cleanup_close int dirfd = -1;
  unsigned flags;
  int r;
  if ((r = validate(s, err)) < 0) return r;
  parse_flags(s->flags, &flags, NULL);
  cleanup_free char *text = NULL;
  size_t len = 0;
  if (cache_dir) {
    if ((r = serialize(s, &text, &len, err)) < 0) return r;
    if (!(name = cache_name_of(text, len))) return an_error_set(err, ENOMEM, "seccomp cache name");
    dirfd = open_cache_dir(cache_dir);
    if (dirfd >= 0) {
      struct an_seccomp_program *p = cache_read(dirfd, name, text, len);
      if (p) {
        p->flags = flags;
        p->from_cache = 1;
        *out = p;
        return 0;
      }
    }
  }
  struct an_seccomp_program *p = NULL;
  if ((r = compile(s, &p, err)) < 0) return r;
  p->flags = flags;
  if (dirfd >= 0) cache_write(dirfd, name, text, len, p);
  *out = p;
  return 0;
}

int an_seccomp_program_save(int dirfd, const char *name, const struct an_seccomp_program *p,
                            an_error_t *err) {
  return an_state_write_file(dirfd, name, (const char *) p->filter,
                             p->prog.len * sizeof(struct sock_filter), err);
}

int an_seccomp_program_load(int dirfd, const char *name, const struct an_spec_seccomp *s,
                            struct an_seccomp_program **out, an_error_t *err) {
  unsigned flags;
  int r = parse_flags(s->flags, &flags, err);
  if (r < 0) return r;
  struct an_seccomp_program *p = saved_read(dirfd, name);
  if (!p)
    return an_error_set(err, ENOENT, "seccomp program %s: missing, not ours or not a program",
                        name);
  p->flags = flags;
  p->from_cache = 1;
  *out = p;
  return 0;
}

int an_seccomp_install(const struct an_seccomp_program *p, an_error_t *err) {
  long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, p->flags, &p->prog);
  if (r < 0)
    return an_error_set(err, errno, "seccomp(SECCOMP_SET_MODE_FILTER, flags 0x%x, %u instructions)",
                        p->flags, p->prog.len);
  if (r > 0)   /* SECCOMP_FILTER_FLAG_TSYNC: the thread that could not be synchronized */
    return an_error_set(err, ESRCH, "seccomp TSYNC: thread %ld could not be synchronized", r);
  return 0;
}

void an_seccomp_program_free(struct an_seccomp_program *p) {
  if (!p) return;
  free(p->filter);
  free(p);
}
