/* Unit tests for agentnest/seccomp_profile.h: the Docker-format loader
 * (archMap, name/names, includes/excludes) and the decisions of
 * profiles/seccomp/default.json — checked both on the loaded rules and by
 * installing the profile with libseccomp in a child on the real kernel.
 * Cases: BL-11 (TIOCSTI/TIOCLINUX, 32-bit compare), BL-12 (x32 ABI),
 * BL-13 (clone3 ENOSYS, threads still start), BL-14 (keyctl), BL-15
 * (userfaultfd, perf_event_open, bpf, ...), BL-16 (unshare, mount, setns). */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include "agentnest/seccomp_profile.h"
#include "agentnest/spec.h"

static struct an_spec_seccomp *load_default(void) {
  const char *src = getenv("AN_TEST_SRC");
  char path[4096];
  snprintf(path, sizeof path, "%s/profiles/seccomp/default.json", src && *src ? src : ".");
  struct an_spec_seccomp *s = NULL;
  an_error_t err = NULL;
  int r = an_seccomp_profile_load(path, &s, &err);
  cr_assert_eq(r, 0, "load %s: %s", path, err ? err->msg : "?");
  return s;
}

static struct an_spec_seccomp *parse_ok(const char *json) {
  struct an_spec_seccomp *s = NULL;
  an_error_t err = NULL;
  int r = an_seccomp_profile_parse(json, strlen(json), &s, &err);
  cr_assert_eq(r, 0, "parse: %s", err ? err->msg : "?");
  return s;
}

static void expect_error(const char *json, const char *msg) {
  struct an_spec_seccomp *s = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_seccomp_profile_parse(json, strlen(json), &s, &err), -EINVAL);
  cr_assert_null(s);
  cr_assert_str_eq(err->msg, msg);
  an_error_free(&err);
}

static bool has_name(const struct an_spec_seccomp_syscall *sc, const char *name) {
  for (char **n = sc->names; n && *n; n++)
    if (strcmp(*n, name) == 0) return true;
  return false;
}

/* Every rule of the profile that names `name`. */
static size_t rules_for(const struct an_spec_seccomp *s, const char *name,
                        const struct an_spec_seccomp_syscall **out, size_t max) {
  size_t n = 0;
  for (size_t i = 0; i < s->n_syscalls; i++)
    if (has_name(&s->syscalls[i], name)) {
      if (n < max) out[n] = &s->syscalls[i];
      n++;
    }
  return n;
}

/* libseccomp's comparison semantics, for evaluating rules in the test. */
static bool arg_matches(const struct an_spec_seccomp_arg *a, const uint64_t args[6]) {
  uint64_t x = args[a->index];
  switch (a->op) {
  case SCMP_CMP_NE: return x != a->value;
  case SCMP_CMP_LT: return x < a->value;
  case SCMP_CMP_LE: return x <= a->value;
  case SCMP_CMP_EQ: return x == a->value;
  case SCMP_CMP_GE: return x >= a->value;
  case SCMP_CMP_GT: return x > a->value;
  case SCMP_CMP_MASKED_EQ: return (x & a->value) == a->value_two;
  default: return false;
  }
}

/* The action the profile's rules give a call (default if none matches). */
static uint32_t decide(const struct an_spec_seccomp *s, const char *name, const uint64_t args[6]) {
  for (size_t i = 0; i < s->n_syscalls; i++) {
    const struct an_spec_seccomp_syscall *sc = &s->syscalls[i];
    if (!has_name(sc, name)) continue;
    bool all = true;
    for (size_t j = 0; j < sc->n_args; j++) all &= arg_matches(&sc->args[j], args);
    if (all) return sc->action;
  }
  return s->default_action;
}

static uint32_t decide1(const struct an_spec_seccomp *s, const char *name, unsigned idx,
                        uint64_t v) {
  uint64_t args[6] = { 0 };
  args[idx] = v;
  return decide(s, name, args);
}

/* ---- the loader ------------------------------------------------------------ */

Test(seccomp_profile, docker_includes_excludes_are_evaluated_for_x86_64_without_caps) {
  struct an_spec_seccomp *s = parse_ok(
    "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":1,"
    "\"archMap\":[{\"architecture\":\"SCMP_ARCH_AARCH64\",\"subArchitectures\":[\"SCMP_ARCH_ARM\"]},"
    "            {\"architecture\":\"SCMP_ARCH_X86_64\",\"subArchitectures\":[\"SCMP_ARCH_X86\",\"SCMP_ARCH_X32\"]}],"
    "\"syscalls\":["
    " {\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\",\"comment\":\"always\"},"
    " {\"name\":\"write\",\"action\":\"SCMP_ACT_ALLOW\"},"
    " {\"names\":[\"arch_prctl\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"arches\":[\"amd64\",\"x32\"]}},"
    " {\"names\":[\"sync_file_range2\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"arches\":[\"ppc64le\"]}},"
    " {\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"caps\":[\"CAP_SYS_ADMIN\"]}},"
    " {\"names\":[\"clone\"],\"action\":\"SCMP_ACT_ALLOW\",\"excludes\":{\"caps\":[\"CAP_SYS_ADMIN\"]}},"
    " {\"names\":[\"s390_pci_mmio_read\"],\"action\":\"SCMP_ACT_ALLOW\",\"excludes\":{\"arches\":[\"amd64\"]}},"
    " {\"names\":[\"ptrace\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"minKernel\":\"4.8\"}},"
    " {\"names\":[\"future_call\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"minKernel\":\"99.0\"}},"
    " {\"names\":[\"old_call\"],\"action\":\"SCMP_ACT_ALLOW\",\"excludes\":{\"minKernel\":\"4.0\"}},"
    " {\"names\":[\"kill\"],\"action\":\"SCMP_ACT_ERRNO\",\"errnoRet\":13}"
    "]}");
  cr_assert_eq(s->default_action, SCMP_ACT_ERRNO(1));
  cr_assert_eq(s->n_architectures, 3);
  cr_assert_eq(s->architectures[0], SCMP_ARCH_X86_64);
  cr_assert_eq(s->architectures[1], SCMP_ARCH_X86);
  cr_assert_eq(s->architectures[2], SCMP_ARCH_X32);
  const char *kept[] = { "read", "write", "arch_prctl", "clone", "ptrace", "kill" };
  cr_assert_eq(s->n_syscalls, 6);
  for (size_t i = 0; i < 6; i++) cr_assert_str_eq(s->syscalls[i].names[0], kept[i]);
  cr_assert_null(s->syscalls[1].names[1]);
  cr_assert_eq(s->syscalls[5].action, SCMP_ACT_ERRNO(13));
  an_spec_seccomp_free(s);
}

Test(seccomp_profile, arch_map_without_x86_64_gives_native_only) {
  struct an_spec_seccomp *s = parse_ok(
    "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"archMap\":[{\"architecture\":\"SCMP_ARCH_S390X\","
    "\"subArchitectures\":[\"SCMP_ARCH_S390\"]}],\"syscalls\":null}");
  cr_assert_eq(s->n_architectures, 0);
  cr_assert_eq(s->n_syscalls, 0);
  an_spec_seccomp_free(s);
}

Test(seccomp_profile, errors_name_the_json_path) {
  expect_error("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"read\"],"
               "\"action\":\"SCMP_ACT_ALLOW\"},{\"names\":[\"x\"],\"action\":\"SCMP_ACT_FOO\"}]}",
               "syscalls[1].action: unknown action \"SCMP_ACT_FOO\"");
  expect_error("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"architectures\":[\"SCMP_ARCH_X86_64\"],"
               "\"archMap\":[]}",
               "profile gives both \"architectures\" and \"archMap\"");
  expect_error("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"name\":\"a\","
               "\"names\":[\"b\"],\"action\":\"SCMP_ACT_ALLOW\"}]}",
               "syscalls[0]: has both \"name\" and \"names\"");
  expect_error("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"a\"],"
               "\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"minKernel\":\"five\"}}]}",
               "syscalls[0].includes.minKernel: \"five\" is not a major.minor kernel version");
  /* a rule that does not apply here is still checked */
  expect_error("{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":[\"a\"],"
               "\"action\":\"SCMP_ACT_NOPE\",\"includes\":{\"arches\":[\"s390x\"]}}]}",
               "syscalls[0].action: unknown action \"SCMP_ACT_NOPE\"");
  expect_error("{\"syscalls\":[]}", "defaultAction: is required");
}

Test(seccomp_profile, load_names_the_file) {
  struct an_spec_seccomp *s = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_seccomp_profile_load("/nonexistent/agentnest.json", &s, &err), -ENOENT);
  cr_assert_str_eq(err->msg, "open /nonexistent/agentnest.json: ENOENT");
  an_error_free(&err);
}

/* ---- decisions of profiles/seccomp/default.json ------------------------------ */

Test(default_profile, is_an_x86_64_only_allowlist_answering_eperm) {
  struct an_spec_seccomp *s = load_default();
  cr_assert_eq(s->default_action, SCMP_ACT_ERRNO(EPERM));
  cr_assert_eq(s->n_architectures, 1);
  cr_assert_eq(s->architectures[0], SCMP_ARCH_X86_64);
  /* the programs we run need these */
  const char *needed[] = { "read", "write", "openat", "execve", "mmap", "futex", "rt_sigreturn",
                           "exit_group", "wait4", "pipe2", "connect", "getrandom", "fork" };
  for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++)
    cr_assert_eq(decide1(s, needed[i], 0, 0), SCMP_ACT_ALLOW, "%s must be allowed", needed[i]);
  an_spec_seccomp_free(s);
}

Test(default_profile, bl_13_clone3_answers_enosys) {
  struct an_spec_seccomp *s = load_default();
  const struct an_spec_seccomp_syscall *r[4];
  cr_assert_eq(rules_for(s, "clone3", r, 4), 1);
  cr_assert_eq(r[0]->action, SCMP_ACT_ERRNO(ENOSYS));
  cr_assert_eq(r[0]->n_args, 0);
  an_spec_seccomp_free(s);
}

Test(default_profile, bl_13_clone_is_allowed_only_without_namespace_flags) {
  struct an_spec_seccomp *s = load_default();
  const uint64_t ns[] = { CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC,
                          CLONE_NEWUTS, CLONE_NEWCGROUP };
  uint64_t thread = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                    CLONE_SYSVSEM | CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
  cr_assert_eq(decide1(s, "clone", 0, thread), SCMP_ACT_ALLOW);
  cr_assert_eq(decide1(s, "clone", 0, SIGCHLD), SCMP_ACT_ALLOW);
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
    cr_assert_eq(decide1(s, "clone", 0, SIGCHLD | ns[i]), SCMP_ACT_ERRNO(EPERM),
                 "clone with 0x%llx must be denied", (unsigned long long) ns[i]);
  an_spec_seccomp_free(s);
}

Test(default_profile, bl_16_bl_15_bl_14_dangerous_syscalls_are_absent) {
  struct an_spec_seccomp *s = load_default();
  const char *denied[] = {
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig",
    "fsmount", "move_mount", "open_tree", "bpf", "perf_event_open", "userfaultfd", "keyctl",
    "add_key", "request_key", "kexec_load", "kexec_file_load", "finit_module", "init_module",
    "delete_module", "open_by_handle_at", "lookup_dcookie", "swapon", "swapoff", "reboot",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "ptrace", "process_vm_readv",
    "process_vm_writev", "pidfd_getfd", "kcmp", "modify_ldt", "iopl", "ioperm",
  };
  const struct an_spec_seccomp_syscall *r[1];
  for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++)
    cr_assert_eq(rules_for(s, denied[i], r, 1), 0, "%s must not be in the allowlist", denied[i]);
  an_spec_seccomp_free(s);
}

Test(default_profile, bl_11_tiocsti_and_tioclinux_are_denied_on_the_low_32_bits) {
  struct an_spec_seccomp *s = load_default();
  const struct an_spec_seccomp_syscall *r[64];
  size_t n = rules_for(s, "ioctl", r, 64);
  cr_assert_gt(n, 0);
  cr_assert_leq(n, 64);
  for (size_t i = 0; i < n; i++) {
    /* every ioctl rule is a masked compare of arg 1 within the low 32 bits */
    cr_assert_eq(r[i]->n_args, 1);
    cr_assert_eq(r[i]->args[0].index, 1);
    cr_assert_eq(r[i]->args[0].op, SCMP_CMP_MASKED_EQ);
    cr_assert_eq(r[i]->args[0].value >> 32, 0);
  }
  const uint64_t bad[] = { TIOCSTI, TIOCLINUX, TIOCSTI | (1ull << 32), TIOCLINUX | (0xffull << 40),
                           TIOCSTI | 0xffffffff00000000ull };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    cr_assert_eq(decide1(s, "ioctl", 1, bad[i]), SCMP_ACT_ERRNO(EPERM), "0x%llx",
                 (unsigned long long) bad[i]);
  const uint64_t good[] = { TCGETS, TCSETS, TIOCGWINSZ, FIONREAD, FIONBIO, FIOCLEX, TIOCGPGRP,
                            TIOCSTI + 1, TIOCSTI - 1, TIOCLINUX + 1, 0, 0xffffffff,
                            TCGETS | (1ull << 32) };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
    cr_assert_eq(decide1(s, "ioctl", 1, good[i]), SCMP_ACT_ALLOW, "0x%llx",
                 (unsigned long long) good[i]);
  an_spec_seccomp_free(s);
}

/* issue 10 item 1: only the families a namespace isolates, on the low 32
 * bits of arg 0 */
Test(default_profile, socket_families_are_an_allowlist_on_the_low_32_bits) {
  struct an_spec_seccomp *s = load_default();
  const char *calls[] = {"socket", "socketpair"};
  for (size_t c = 0; c < 2; c++) {
    const uint64_t allowed[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_UNIX | (1ull << 32),
                                AF_INET | 0xffffffff00000000ull};
    for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++)
      cr_assert_eq(decide1(s, calls[c], 0, allowed[i]), SCMP_ACT_ALLOW, "%s(0x%llx)", calls[c],
                   (unsigned long long) allowed[i]);
    for (uint64_t fam = 0; fam < 64; fam++) {
      if (fam == AF_UNIX || fam == AF_INET || fam == AF_INET6 || fam == AF_NETLINK) continue;
      cr_assert_eq(decide1(s, calls[c], 0, fam), SCMP_ACT_ERRNO(EPERM), "%s(%llu)", calls[c],
                   (unsigned long long) fam);
      cr_assert_eq(decide1(s, calls[c], 0, fam | (1ull << 32)), SCMP_ACT_ERRNO(EPERM));
    }
  }
  an_spec_seccomp_free(s);
}

/* issue 10 item 5: fs.aio-max-nr is one host-wide budget */
Test(default_profile, native_aio_answers_enosys) {
  struct an_spec_seccomp *s = load_default();
  const char *aio[] = {"io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents",
                       "io_pgetevents"};
  for (size_t i = 0; i < sizeof aio / sizeof *aio; i++)
    cr_assert_eq(decide1(s, aio[i], 0, 1), SCMP_ACT_ERRNO(ENOSYS), "%s", aio[i]);
  an_spec_seccomp_free(s);
}

Test(default_profile, personality_is_limited_to_query_and_per_linux) {
  struct an_spec_seccomp *s = load_default();
  cr_assert_eq(decide1(s, "personality", 0, 0xffffffff), SCMP_ACT_ALLOW);
  cr_assert_eq(decide1(s, "personality", 0, 0xffffffffffffffffull), SCMP_ACT_ALLOW);
  cr_assert_eq(decide1(s, "personality", 0, PER_LINUX), SCMP_ACT_ALLOW);
  cr_assert_eq(decide1(s, "personality", 0, ADDR_NO_RANDOMIZE), SCMP_ACT_ERRNO(EPERM));
  cr_assert_eq(decide1(s, "personality", 0, PER_LINUX32), SCMP_ACT_ERRNO(EPERM));
  cr_assert_eq(decide1(s, "personality", 0, READ_IMPLIES_EXEC), SCMP_ACT_ERRNO(EPERM));
  an_spec_seccomp_free(s);
}

/* ---- the profile on the real kernel ----------------------------------------- */

/* Install `s` as the engine does (rules equal to the default skipped, names
 * unknown to libseccomp skipped, other architectures killed). */
static int install(const struct an_spec_seccomp *s) {
  scmp_filter_ctx ctx = seccomp_init(s->default_action);
  if (!ctx) return -EINVAL;
  int r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  for (size_t i = 0; r == 0 && i < s->n_syscalls; i++) {
    const struct an_spec_seccomp_syscall *sc = &s->syscalls[i];
    if (sc->action == s->default_action) continue;
    struct scmp_arg_cmp cmp[6];
    for (size_t j = 0; j < sc->n_args && j < 6; j++)
      cmp[j] = (struct scmp_arg_cmp){ sc->args[j].index, sc->args[j].op, sc->args[j].value,
                                      sc->args[j].value_two };
    for (char **n = sc->names; r == 0 && *n; n++) {
      int nr = seccomp_syscall_resolve_name(*n);
      if (nr == __NR_SCMP_ERROR) continue;
      r = seccomp_rule_add_array(ctx, sc->action, nr, sc->n_args, cmp);
    }
  }
  if (r == 0) r = seccomp_load(ctx);
  seccomp_release(ctx);
  return r;
}

static void *thread_main(void *arg) { return arg; }

/* Each probe returns 0 when the kernel answered as the profile promises. */
#define PROBE(cond) do { if (!(cond)) return __LINE__; } while (0)
static int probes(void) {
  int p[2];
  PROBE(pipe(p) == 0);
  int avail = -1;
  PROBE(ioctl(p[0], FIONREAD, &avail) == 0 && avail == 0);
  char c = 'x';
  PROBE(ioctl(0, TIOCSTI, &c) == -1 && errno == EPERM);
  PROBE(syscall(SYS_ioctl, 0, (unsigned long) TIOCSTI | (1ul << 32), &c) == -1 && errno == EPERM);
  PROBE(syscall(SYS_ioctl, 0, (unsigned long) TIOCLINUX, &c) == -1 && errno == EPERM);
  PROBE(syscall(SYS_clone3, NULL, 0) == -1 && errno == ENOSYS);
  PROBE(unshare(CLONE_NEWUSER) == -1 && errno == EPERM);
  PROBE(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0) == -1 && errno == EPERM);
  PROBE(syscall(SYS_keyctl, 0, 0, 0, 0, 0) == -1 && errno == EPERM);
  PROBE(syscall(SYS_userfaultfd, 0) == -1 && errno == EPERM);
  PROBE(syscall(SYS_bpf, 0, 0, 0) == -1 && errno == EPERM);
  PROBE(personality(0xffffffff) >= 0);
  int sk = socket(AF_UNIX, SOCK_STREAM, 0);
  PROBE(sk >= 0);
  close(sk);
  PROBE(socket(AF_VSOCK, SOCK_STREAM, 0) == -1 && errno == EPERM);
  PROBE(syscall(SYS_socket, (1ul << 32) | AF_VSOCK, SOCK_STREAM, 0) == -1 && errno == EPERM);
  unsigned long aio_ctx = 0;
  PROBE(syscall(SYS_io_setup, 1, &aio_ctx) == -1 && errno == ENOSYS);
  PROBE(personality(ADDR_NO_RANDOMIZE) == -1 && errno == EPERM);
  /* BL-13: glibc falls back from clone3 to clone, so threads still start */
  pthread_t t;
  PROBE(pthread_create(&t, NULL, thread_main, NULL) == 0 && pthread_join(t, NULL) == 0);
  pid_t pid = fork();
  PROBE(pid >= 0);
  if (pid == 0) _exit(7);
  int st;
  PROBE(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 7);
  return 0;
}

Test(default_profile, installs_and_holds_on_the_real_kernel) {
  struct an_spec_seccomp *s = load_default();
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    if (install(s) != 0) _exit(200);
    int line = probes();
    _exit(line ? (line % 199) + 1 : 0);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st), "child died: signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  cr_assert_neq(WEXITSTATUS(st), 200, "libseccomp refused the profile");
  cr_assert_eq(WEXITSTATUS(st), 0, "probe failed (source line %% 199 + 1 = %d)", WEXITSTATUS(st));
  an_spec_seccomp_free(s);
}

Test(default_profile, bl_12_x32_syscalls_do_not_get_through) {
  struct an_spec_seccomp *s = load_default();
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    if (install(s) != 0) _exit(200);
    /* getpid via the x32 ABI (__X32_SYSCALL_BIT); an allowed call in x86_64 */
    long r = syscall(0x40000000 | SYS_getpid);
    _exit(r >= 0 ? 1 : 0);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) == 0),
            "x32 getpid succeeded (status 0x%x)", st);
  an_spec_seccomp_free(s);
}
