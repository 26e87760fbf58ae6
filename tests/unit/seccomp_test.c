/* Unit tests for engine/seccomp.{h,c}: profiles are compiled, installed in a
 * forked child, and probed with raw syscalls; results come back through
 * shared memory so the child needs no syscall beyond the probes and exit. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include "engine/seccomp.h"

#define X32_SYSCALL_BIT 0x40000000L

/* --- profile building ---------------------------------------------------- */

/* Name lists live in a static pool: each test is its own process. */
static char *name_pool[32][3];
static size_t name_pool_used;

static struct an_spec_seccomp_syscall rule(const char *n1, const char *n2, uint32_t action) {
  struct an_spec_seccomp_syscall sc = {0};
  cr_assert_lt(name_pool_used, 32);
  sc.names = name_pool[name_pool_used++];
  sc.names[0] = (char *) n1;
  sc.names[1] = (char *) n2;
  sc.action = action;
  return sc;
}

static struct an_spec_seccomp profile(uint32_t def, struct an_spec_seccomp_syscall *rules, size_t n) {
  static uint32_t x86_64[] = {SCMP_ARCH_X86_64};
  struct an_spec_seccomp s = {0};
  s.default_action = def;
  s.architectures = x86_64;
  s.n_architectures = 1;
  s.syscalls = rules;
  s.n_syscalls = n;
  return s;
}

static struct an_seccomp_program *prepare_ok(const struct an_spec_seccomp *s, const char *cache) {
  struct an_seccomp_program *p = NULL;
  an_error_t err = NULL;
  int r = an_seccomp_prepare(s, cache, &p, &err);
  cr_assert_eq(r, 0, "prepare: %s", err ? err->msg : "?");
  cr_assert_not_null(p);
  return p;
}

/* --- the probe child ----------------------------------------------------- */

struct results { long ret[8]; int err[8]; int installed; };

typedef void (*probe_fn)(struct results *res);

/* Fork; the child sets no_new_privs, installs `p`, runs `probe`, exits 0.
 * Returns the wait status; *res holds what the probe recorded. */
static int run_probe(const struct an_seccomp_program *p, probe_fn probe, struct results *out) {
  struct results *res = mmap(NULL, sizeof *res, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(res, MAP_FAILED);
  memset(res, 0, sizeof *res);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    an_error_t err = NULL;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) _exit(100);
    if (an_seccomp_install(p, &err) < 0) _exit(101);
    res->installed = 1;
    probe(res);
    syscall(SYS_exit_group, 0);
  }
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  *out = *res;
  munmap(res, sizeof *res);
  return status;
}

#define PROBE(i, call) do { errno = 0; res->ret[i] = (call); res->err[i] = errno; } while (0)

/* --- behaviour ----------------------------------------------------------- */

static void probe_getppid_getpid(struct results *res) {
  PROBE(0, syscall(SYS_getppid));
  PROBE(1, syscall(SYS_getpid));
}

Test(seccomp, denied_syscall_returns_eperm_and_allowed_one_works) {
  struct an_spec_seccomp_syscall r[] = { rule("getppid", NULL, SCMP_ACT_ERRNO(0)) };
  struct an_spec_seccomp s = profile(SCMP_ACT_ALLOW, r, 1);
  struct an_seccomp_program *p = prepare_ok(&s, NULL);
  struct results res;
  int st = run_probe(p, probe_getppid_getpid, &res);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
  cr_assert_eq(res.ret[0], -1);
  cr_assert_eq(res.err[0], EPERM, "getppid errno %d", res.err[0]);
  cr_assert_gt(res.ret[1], 0, "getpid must be allowed");
  an_seccomp_program_free(p);
}

Test(seccomp, allowlist_default_errno_denies_unlisted_syscalls) {
  struct an_spec_seccomp_syscall r[] = {
    rule("getpid", "exit_group", SCMP_ACT_ALLOW), rule("exit", NULL, SCMP_ACT_ALLOW) };
  struct an_spec_seccomp s = profile(SCMP_ACT_ERRNO(EPERM), r, 2);
  struct an_seccomp_program *p = prepare_ok(&s, NULL);
  struct results res;
  int st = run_probe(p, probe_getppid_getpid, &res);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
  cr_assert_eq(res.err[0], EPERM);
  cr_assert_gt(res.ret[1], 0);
  an_seccomp_program_free(p);
}

static void probe_getuid(struct results *res) { PROBE(0, syscall(SYS_getuid)); }

Test(seccomp, errno_ret_is_honoured) {
  struct an_spec_seccomp_syscall r[] = { rule("getuid", NULL, SCMP_ACT_ERRNO(0)) };
  r[0].has_errno_ret = true;
  r[0].errno_ret = EXDEV;
  struct an_spec_seccomp s = profile(SCMP_ACT_ALLOW, r, 1);
  struct an_seccomp_program *p = prepare_ok(&s, NULL);
  struct results res;
  run_probe(p, probe_getuid, &res);
  cr_assert_eq(res.ret[0], -1);
  cr_assert_eq(res.err[0], EXDEV, "errno %d", res.err[0]);
  an_seccomp_program_free(p);
}

static void probe_x32(struct results *res) {
  PROBE(0, syscall(SYS_getppid | X32_SYSCALL_BIT));
  res->ret[7] = 12345;   /* reached only if the x32 call did not kill us */
}

/* BL-12: x32 numbers on an x86_64-only filter go to the bad-arch action. */
Test(seccomp, bl_12_x32_syscall_numbers_kill_the_process) {
  struct an_spec_seccomp_syscall r[] = { rule("getppid", NULL, SCMP_ACT_ERRNO(0)) };
  struct an_spec_seccomp s = profile(SCMP_ACT_ALLOW, r, 1);
  struct an_seccomp_program *p = prepare_ok(&s, NULL);
  struct results res;
  int st = run_probe(p, probe_x32, &res);
  cr_assert(res.installed);
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS, "status %#x (ret %ld errno %d)", st,
            res.ret[0], res.err[0]);
  cr_assert_neq(res.ret[7], 12345);
  an_seccomp_program_free(p);
}

static long int80_getpid(void) {
  long r;
  __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L /* __NR_getpid on i386 */) : "memory");
  return r;
}

static void probe_i386(struct results *res) {
  res->ret[0] = int80_getpid();
  res->ret[7] = 12345;
}

/* BL-12: the i386 entry point (int $0x80) is an architecture the filter was
 * not written for: the process is killed. */
Test(seccomp, bl_12_i386_int80_kills_the_process) {
  /* Baseline: without a filter, does int $0x80 work at all on this kernel? */
  pid_t pid = fork();
  if (pid == 0) _exit(int80_getpid() == (long) getpid() ? 0 : 1);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    cr_skip_test("no IA32 emulation on this kernel (int $0x80 status %#x)", st);
  struct an_spec_seccomp s = profile(SCMP_ACT_ALLOW, NULL, 0);
  struct an_seccomp_program *p = prepare_ok(&s, NULL);
  struct results res;
  st = run_probe(p, probe_i386, &res);
  cr_assert(res.installed);
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS, "status %#x", st);
  an_seccomp_program_free(p);
}

static void probe_clone3(struct results *res) { PROBE(0, syscall(SYS_clone3, NULL, 0)); }

/* BL-13: clone3 answers ENOSYS so that glibc falls back to clone. */
Test(seccomp, bl_13_clone3_answers_enosys_when_the_profile_says_so) {
  struct an_spec_seccomp_syscall r[] = { rule("clone3", NULL, SCMP_ACT_ERRNO(0)) };
  r[0].has_errno_ret = true;
  r[0].errno_ret = ENOSYS;
  struct an_spec_seccomp s = profile(SCMP_ACT_ALLOW, r, 1);
  struct an_seccomp_program *p = prepare_ok(&s, NULL);
  struct results res;
  run_probe(p, probe_clone3, &res);
  cr_assert_eq(res.err[0], ENOSYS, "clone3 errno %d", res.err[0]);
  an_seccomp_program_free(p);
}

static void probe_getpriority_ioctl(struct results *res) {
  PROBE(0, syscall(SYS_getpriority, PRIO_PROCESS, 0));
  PROBE(1, syscall(SYS_getpriority, PRIO_PGRP, 0));
  PROBE(2, syscall(SYS_ioctl, -1, (unsigned long) TIOCSTI | (1UL << 32), 0));
  PROBE(3, syscall(SYS_ioctl, -1, (unsigned long) TIOCGWINSZ, 0));
}

/* Argument conditions: EQ on arg 0, and MASKED_EQ on the low 32 bits of the
 * ioctl request so upper bits cannot dodge the rule (BL-11). */
Test(seccomp, argument_conditions_select_calls) {
  struct an_spec_seccomp_syscall r[] = { rule("getpriority", NULL, SCMP_ACT_ERRNO(0)),
                                         rule("ioctl", NULL, SCMP_ACT_ERRNO(0)) };
  struct an_spec_seccomp_arg a0 = { .index = 0, .value = PRIO_PGRP, .op = SCMP_CMP_EQ };
  struct an_spec_seccomp_arg a1 = { .index = 1, .value = 0xffffffffUL, .value_two = TIOCSTI,
                                    .op = SCMP_CMP_MASKED_EQ };
  r[0].args = &a0; r[0].n_args = 1;
  r[1].args = &a1; r[1].n_args = 1;
  struct an_spec_seccomp s = profile(SCMP_ACT_ALLOW, r, 2);
  struct an_seccomp_program *p = prepare_ok(&s, NULL);
  struct results res;
  run_probe(p, probe_getpriority_ioctl, &res);
  cr_assert_eq(res.err[0], 0, "getpriority(PRIO_PROCESS) must be allowed, errno %d", res.err[0]);
  cr_assert_eq(res.err[1], EPERM, "getpriority(PRIO_PGRP) errno %d", res.err[1]);
  cr_assert_eq(res.err[2], EPERM, "ioctl(TIOCSTI|1<<32) errno %d", res.err[2]);
  cr_assert_eq(res.err[3], EBADF, "other ioctl must reach the kernel, errno %d", res.err[3]);
  an_seccomp_program_free(p);
}

/* Two conditions on one argument index become two rules (OR), as runc. */
Test(seccomp, two_conditions_on_one_argument_are_alternatives) {
  struct an_spec_seccomp_syscall r[] = { rule("getpriority", NULL, SCMP_ACT_ERRNO(0)) };
  struct an_spec_seccomp_arg a[2] = { { .index = 0, .value = PRIO_PGRP, .op = SCMP_CMP_EQ },
                                      { .index = 0, .value = PRIO_USER, .op = SCMP_CMP_EQ } };
  r[0].args = a; r[0].n_args = 2;
  struct an_spec_seccomp s = profile(SCMP_ACT_ALLOW, r, 1);
  struct an_seccomp_program *p = prepare_ok(&s, NULL);
  struct results res;
  run_probe(p, probe_getpriority_ioctl, &res);
  cr_assert_eq(res.err[0], 0);
  cr_assert_eq(res.err[1], EPERM);
  an_seccomp_program_free(p);
}

Test(seccomp, unknown_syscall_names_are_skipped) {
  struct an_spec_seccomp_syscall r[] = { rule("no_such_syscall_xyz", "getppid", SCMP_ACT_ERRNO(0)) };
  struct an_spec_seccomp s = profile(SCMP_ACT_ALLOW, r, 1);
  struct an_seccomp_program *p = prepare_ok(&s, NULL);
  struct results res;
  run_probe(p, probe_getppid_getpid, &res);
  cr_assert_eq(res.err[0], EPERM);
  an_seccomp_program_free(p);
}

static void probe_status(struct results *res) {
  /* Seccomp mode from /proc/self/status: open/read must be allowed. */
  char buf[4096];
  int fd = open("/proc/self/status", O_RDONLY);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (n <= 0) return;
  buf[n] = 0;
  char *l = strstr(buf, "\nSeccomp:");
  res->ret[0] = l ? strtol(l + 9, NULL, 10) : -1;
}

Test(seccomp, flags_log_and_spec_allow_are_accepted_and_filter_is_mode_2) {
  char *flags[] = {"SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
                   "SECCOMP_FILTER_FLAG_TSYNC", NULL};
  struct an_spec_seccomp s = profile(SCMP_ACT_ALLOW, NULL, 0);
  s.flags = flags;
  struct an_seccomp_program *p = prepare_ok(&s, NULL);
  cr_assert_eq(p->flags, SECCOMP_FILTER_FLAG_LOG | SECCOMP_FILTER_FLAG_SPEC_ALLOW |
                         SECCOMP_FILTER_FLAG_TSYNC);
  struct results res;
  int st = run_probe(p, probe_status, &res);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
  cr_assert_eq(res.ret[0], 2);
  an_seccomp_program_free(p);
}

/* --- refusals ------------------------------------------------------------ */

static void expect_refusal(const struct an_spec_seccomp *s, int code, const char *needle) {
  struct an_seccomp_program *p = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_seccomp_prepare(s, NULL, &p, &err), -code);
  cr_assert_null(p);
  cr_assert_not_null(err);
  cr_assert(strstr(err->msg, needle), "message \"%s\" lacks \"%s\"", err->msg, needle);
  an_error_free(&err);
}

Test(seccomp, notify_action_is_refused_clearly) {
  struct an_spec_seccomp_syscall r[] = { rule("getppid", NULL, SCMP_ACT_NOTIFY) };
  struct an_spec_seccomp s = profile(SCMP_ACT_ALLOW, r, 1);
  expect_refusal(&s, EOPNOTSUPP, "SCMP_ACT_NOTIFY");
  struct an_spec_seccomp s2 = profile(SCMP_ACT_ALLOW, NULL, 0);
  s2.listener_path = (char *) "/run/listener.sock";
  expect_refusal(&s2, EOPNOTSUPP, "listenerPath");
}

Test(seccomp, unknown_flag_operator_index_and_arch_are_refused) {
  char *flags[] = {"SECCOMP_FILTER_FLAG_BOGUS", NULL};
  struct an_spec_seccomp s = profile(SCMP_ACT_ALLOW, NULL, 0);
  s.flags = flags;
  expect_refusal(&s, EINVAL, "SECCOMP_FILTER_FLAG_BOGUS");

  struct an_spec_seccomp_syscall r[] = { rule("getppid", NULL, SCMP_ACT_ERRNO(0)) };
  struct an_spec_seccomp_arg a = { .index = 6, .op = SCMP_CMP_EQ };
  r[0].args = &a; r[0].n_args = 1;
  struct an_spec_seccomp s2 = profile(SCMP_ACT_ALLOW, r, 1);
  expect_refusal(&s2, EINVAL, "syscalls[0].args[0].index");
  a.index = 0; a.op = 99;
  expect_refusal(&s2, EINVAL, "syscalls[0].args[0].op");

  uint32_t bogus_arch[] = {0x1234};
  struct an_spec_seccomp s3 = profile(SCMP_ACT_ALLOW, NULL, 0);
  s3.architectures = bogus_arch;
  expect_refusal(&s3, EINVAL, "architectures[0]");
}

/* --- the cache ----------------------------------------------------------- */

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = malloc(1 << 16);
  *len = fread(buf, 1, 1 << 16, f);
  fclose(f);
  return buf;
}

static char cache_dir[64];
static void make_cache_dir(void) {
  snprintf(cache_dir, sizeof cache_dir, "/tmp/an-seccomp-cache-%d", getpid());
}
static void remove_cache_dir(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", cache_dir);
  if (system(cmd) != 0) fprintf(stderr, "cleanup of %s failed\n", cache_dir);
}

Test(seccomp, second_prepare_of_same_profile_hits_the_cache, .init = make_cache_dir,
     .fini = remove_cache_dir) {
  struct an_spec_seccomp_syscall r[] = { rule("getppid", "getuid", SCMP_ACT_ERRNO(0)) };
  struct an_spec_seccomp s = profile(SCMP_ACT_ALLOW, r, 1);
  struct an_seccomp_program *p1 = prepare_ok(&s, cache_dir);
  cr_assert_eq(p1->from_cache, 0);
  char *name = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_seccomp_cache_name(&s, &name, &err), 0);
  cr_assert_eq(strlen(name), 2 + 16 + 4, "%s", name);
  char path[256];
  snprintf(path, sizeof path, "%s/%s", cache_dir, name);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0, "cache file %s missing", path);
  cr_assert_eq(st.st_mode & 0077, 0);
  size_t flen = 0;
  char *bytes = read_all(path, &flen);
  /* the profile's canonical text, then the program */
  size_t len = p1->prog.len * sizeof(struct sock_filter);
  cr_assert(!strncmp(bytes, "agentnest-seccomp-cache 1\n", 26), "%.40s", bytes);
  cr_assert(memmem(bytes, flen, "getppid", 7) && memmem(bytes, flen, "getuid", 6), "no profile text");
  cr_assert_gt(flen, len);
  cr_assert_eq(memcmp(bytes + flen - len, p1->filter, len), 0);

  struct an_seccomp_program *p2 = prepare_ok(&s, cache_dir);
  cr_assert_eq(p2->from_cache, 1);
  cr_assert_eq(p2->prog.len, p1->prog.len);
  cr_assert_eq(memcmp(p2->filter, p1->filter, len), 0);
  /* And the cached program still works. */
  struct results res;
  run_probe(p2, probe_getppid_getpid, &res);
  cr_assert_eq(res.err[0], EPERM);

  /* A different profile has a different key. */
  struct an_spec_seccomp_syscall r2[] = { rule("getppid", NULL, SCMP_ACT_ERRNO(0)) };
  struct an_spec_seccomp s2 = profile(SCMP_ACT_ALLOW, r2, 1);
  char *name2 = NULL;
  cr_assert_eq(an_seccomp_cache_name(&s2, &name2, &err), 0);
  cr_assert_str_neq(name, name2);
  free(name); free(name2); free(bytes);
  an_seccomp_program_free(p1);
  an_seccomp_program_free(p2);
}

/* The cache file of `s` (made by a first prepare) with its program replaced
 * by allow-everything and, when `text_byte` >= 0, that byte of the profile
 * text flipped; mode `mode`.  Returns the path (static). */
static const char *forge_cache_file(const struct an_spec_seccomp *s, long text_byte, mode_t mode) {
  an_seccomp_program_free(prepare_ok(s, cache_dir));
  char *name = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_seccomp_cache_name(s, &name, &err), 0);
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", cache_dir, name);
  free(name);
  size_t flen = 0;
  char *bytes = read_all(path, &flen);
  cr_assert_not_null(bytes);
  struct an_seccomp_program *p = prepare_ok(s, NULL);
  size_t plen = p->prog.len * sizeof(struct sock_filter);
  an_seccomp_program_free(p);
  cr_assert_gt(flen, plen + 30);
  size_t text_end = flen - plen;
  if (text_byte >= 0) bytes[text_end - 1 - (size_t) text_byte] ^= 0x20;
  struct sock_filter allow_all[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
  FILE *f = fopen(path, "wb");
  fwrite(bytes, 1, text_end, f);
  fwrite(allow_all, sizeof allow_all, 1, f);
  fclose(f);
  chmod(path, mode);
  free(bytes);
  return path;
}

static void assert_compiled_fresh(const struct an_spec_seccomp *s) {
  struct an_seccomp_program *p = prepare_ok(s, cache_dir);
  cr_assert_eq(p->from_cache, 0);
  cr_assert_gt(p->prog.len, 1);
  struct results res;
  run_probe(p, probe_getppid_getpid, &res);
  cr_assert_eq(res.err[0], EPERM);
  an_seccomp_program_free(p);
}

Test(seccomp, cache_file_writable_by_others_is_not_trusted, .init = make_cache_dir,
     .fini = remove_cache_dir) {
  struct an_spec_seccomp_syscall r[] = { rule("getppid", NULL, SCMP_ACT_ERRNO(0)) };
  struct an_spec_seccomp s = profile(SCMP_ACT_ALLOW, r, 1);
  /* someone else could have written this one: an allow-everything program */
  forge_cache_file(&s, -1, 0666);
  assert_compiled_fresh(&s);
}

/* The file name is a 64-bit slot, not a digest: a file there for another
 * profile (a collision, or a forged file) must not be used.  Control: the
 * same forgery with the right text is used (the check is the text). */
Test(seccomp, cache_file_of_another_profile_text_is_not_used, .init = make_cache_dir,
     .fini = remove_cache_dir) {
  struct an_spec_seccomp_syscall r[] = { rule("getppid", NULL, SCMP_ACT_ERRNO(0)) };
  struct an_spec_seccomp s = profile(SCMP_ACT_ALLOW, r, 1);
  forge_cache_file(&s, 3, 0600);
  assert_compiled_fresh(&s);
  forge_cache_file(&s, -1, 0600);
  struct an_seccomp_program *p = prepare_ok(&s, cache_dir);
  cr_assert_eq(p->from_cache, 1, "a root-owned file with the profile's own text is the cache");
  cr_assert_eq(p->prog.len, 1);
  an_seccomp_program_free(p);
}
