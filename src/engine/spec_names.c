/* engine/spec_names.c — name <-> number tables for the runtime-spec's
 * symbolic values (see engine/spec_names.h).  Sources: getrlimit(2),
 * clone(2), runtime-spec config-linux.md "Seccomp", seccomp_rule_add(3),
 * seccomp(2) for the filter flags. */
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <string.h>
#include <sys/resource.h>
#include "engine/spec_names.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

struct name_num { const char *name; long long num; };

#define N(x) { #x, x }
static const struct name_num rlimits[] = {
  N(RLIMIT_AS), N(RLIMIT_CORE), N(RLIMIT_CPU), N(RLIMIT_DATA), N(RLIMIT_FSIZE),
  N(RLIMIT_LOCKS), N(RLIMIT_MEMLOCK), N(RLIMIT_MSGQUEUE), N(RLIMIT_NICE),
  N(RLIMIT_NOFILE), N(RLIMIT_NPROC), N(RLIMIT_RSS), N(RLIMIT_RTPRIO),
  N(RLIMIT_RTTIME), N(RLIMIT_SIGPENDING), N(RLIMIT_STACK),
};

static const struct name_num namespaces[] = {
  { "pid", CLONE_NEWPID }, { "network", CLONE_NEWNET }, { "mount", CLONE_NEWNS },
  { "ipc", CLONE_NEWIPC }, { "uts", CLONE_NEWUTS }, { "user", CLONE_NEWUSER },
  { "cgroup", CLONE_NEWCGROUP }, { "time", CLONE_NEWTIME },
};

/* The first name of a number is the one written back out. */
static const struct name_num actions[] = {
  { "SCMP_ACT_KILL", SCMP_ACT_KILL },
  { "SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD },
  { "SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS },
  { "SCMP_ACT_TRAP", SCMP_ACT_TRAP },
  { "SCMP_ACT_ERRNO", SCMP_ACT_ERRNO(0) },
  { "SCMP_ACT_TRACE", SCMP_ACT_TRACE(0) },
  { "SCMP_ACT_ALLOW", SCMP_ACT_ALLOW },
  { "SCMP_ACT_LOG", SCMP_ACT_LOG },
  { "SCMP_ACT_NOTIFY", SCMP_ACT_NOTIFY },
};

static const struct name_num arches[] = {
  N(SCMP_ARCH_X86), N(SCMP_ARCH_X86_64), N(SCMP_ARCH_X32), N(SCMP_ARCH_ARM),
  N(SCMP_ARCH_AARCH64), N(SCMP_ARCH_MIPS), N(SCMP_ARCH_MIPS64), N(SCMP_ARCH_MIPS64N32),
  N(SCMP_ARCH_MIPSEL), N(SCMP_ARCH_MIPSEL64), N(SCMP_ARCH_MIPSEL64N32), N(SCMP_ARCH_PPC),
  N(SCMP_ARCH_PPC64), N(SCMP_ARCH_PPC64LE), N(SCMP_ARCH_S390), N(SCMP_ARCH_S390X),
  N(SCMP_ARCH_PARISC), N(SCMP_ARCH_PARISC64), N(SCMP_ARCH_RISCV64),
#ifdef SCMP_ARCH_LOONGARCH64
  N(SCMP_ARCH_LOONGARCH64),
#endif
#ifdef SCMP_ARCH_M68K
  N(SCMP_ARCH_M68K),
#endif
#ifdef SCMP_ARCH_SH
  N(SCMP_ARCH_SH), N(SCMP_ARCH_SHEB),
#endif
};

static const struct name_num ops[] = {
  N(SCMP_CMP_NE), N(SCMP_CMP_LT), N(SCMP_CMP_LE), N(SCMP_CMP_EQ),
  N(SCMP_CMP_GE), N(SCMP_CMP_GT), N(SCMP_CMP_MASKED_EQ),
};
#undef N

static const char *const filter_flags[] = {
  "SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG",
  "SECCOMP_FILTER_FLAG_SPEC_ALLOW", "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV",
};

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

static int by_name(const struct name_num *t, size_t n, const char *name, long long *out) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(t[i].name, name) == 0) { *out = t[i].num; return 0; }
  return -ENOENT;
}

static const char *by_num(const struct name_num *t, size_t n, long long num) {
  for (size_t i = 0; i < n; i++)
    if (t[i].num == num) return t[i].name;
  return NULL;
}

int an_rlimit_from_name(const char *name, int *out) {
  long long v;
  if (by_name(rlimits, LEN(rlimits), name, &v) < 0) return -ENOENT;
  *out = (int) v;
  return 0;
}
const char *an_rlimit_name(int resource) { return by_num(rlimits, LEN(rlimits), resource); }

int an_namespace_from_type(const char *type, int *clone_flag) {
  long long v;
  if (by_name(namespaces, LEN(namespaces), type, &v) < 0) return -ENOENT;
  *clone_flag = (int) v;
  return 0;
}
const char *an_namespace_type(int clone_flag) {
  return by_num(namespaces, LEN(namespaces), clone_flag);
}

int an_seccomp_action_from_name(const char *name, uint32_t *out) {
  long long v;
  if (by_name(actions, LEN(actions), name, &v) < 0) return -ENOENT;
  *out = (uint32_t) v;
  return 0;
}

/* SCMP_ACT_ERRNO and SCMP_ACT_TRACE keep their data in the low 16 bits. */
static uint32_t action_base(uint32_t action) {
  uint32_t base = action & 0xffff0000u;
  if (base == SCMP_ACT_ERRNO(0) || base == SCMP_ACT_TRACE(0)) return base;
  return action;
}
const char *an_seccomp_action_name(uint32_t action) {
  return by_num(actions, LEN(actions), action_base(action));
}
int an_seccomp_action_takes_errno(uint32_t action) {
  uint32_t base = action_base(action);
  return base == SCMP_ACT_ERRNO(0) || base == SCMP_ACT_TRACE(0);
}

int an_seccomp_arch_from_name(const char *name, uint32_t *out) {
  long long v;
  if (by_name(arches, LEN(arches), name, &v) < 0) return -ENOENT;
  *out = (uint32_t) v;
  return 0;
}
const char *an_seccomp_arch_name(uint32_t arch) { return by_num(arches, LEN(arches), arch); }

int an_seccomp_op_from_name(const char *name, int *out) {
  long long v;
  if (by_name(ops, LEN(ops), name, &v) < 0) return -ENOENT;
  *out = (int) v;
  return 0;
}
const char *an_seccomp_op_name(int op) { return by_num(ops, LEN(ops), op); }

int an_seccomp_flag_known(const char *name) {
  for (size_t i = 0; i < LEN(filter_flags); i++)
    if (strcmp(filter_flags[i], name) == 0) return 1;
  return 0;
}
