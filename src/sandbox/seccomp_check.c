/* sandbox/seccomp_check.c — evaluate compiled seccomp filters on probe
 * calls to find what a profile allows that the default denies (see
 * seccomp_check.h).  The BPF evaluator follows the classic BPF machine of
 * Documentation/networking/filter.rst restricted to what seccomp accepts
 * (kernel/seccomp.c seccomp_check_filter): 32-bit loads from seccomp_data,
 * ALU, jumps, the scratch memory, returns. */
#include <errno.h>
#include <limits.h>
#include <linux/audit.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include "agentnest/seccomp_profile.h"
#include "engine/seccomp.h"
#include "sandbox/opts_internal.h"
#include "sandbox/sandbox_internal.h"
#include "sandbox/seccomp_check.h"
#include "util/cleanup.h"
#include "util/json_gen.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#define PER_ADDR_NO_RANDOMIZE 0x0040000   /* <linux/personality.h> ADDR_NO_RANDOMIZE */

/* One comparison of an argument word that a run met: the 32-bit word of
 * seccomp_data at `off` (an argument's low or high half), ANDed with
 * `mask`, against k with jump op `op`. */
struct arg_cmp {
  uint32_t off, mask, k, op;
};

#define MAX_CMPS 64

/* an_sb_bpf_run, also noting in cmps[0..*ncmps) (at most MAX_CMPS) each
 * conditional jump whose A is an argument word, masked at most (cmps may be
 * NULL).  libseccomp's argument tests are of that shape. */
static int bpf_run(const struct sock_filter *f, size_t n, const struct seccomp_data *data,
                   uint32_t *ret, struct arg_cmp *cmps, size_t *ncmps) {
  uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
  uint32_t a_off = 0, a_mask = ~0u;   /* A's source word (0: none/not an argument) */
  for (size_t pc = 0; pc < n; pc++) {
    const struct sock_filter *in = &f[pc];
    uint32_t k = in->k;
    uint32_t src = BPF_SRC(in->code) == BPF_X ? x : k;
    switch (BPF_CLASS(in->code)) {
    case BPF_LD:
    case BPF_LDX: {
      uint32_t v;
      switch (BPF_MODE(in->code)) {
      case BPF_ABS:
        if (BPF_CLASS(in->code) != BPF_LD || BPF_SIZE(in->code) != BPF_W || k % 4 ||
            k > sizeof *data - 4)
          return -EINVAL;
        memcpy(&v, (const char *) data + k, sizeof v);
        break;
      case BPF_IMM: v = k; break;
      case BPF_MEM:
        if (k >= BPF_MEMWORDS) return -EINVAL;
        v = mem[k];
        break;
      case BPF_LEN: v = (uint32_t) sizeof *data; break;
      default: return -EINVAL;
      }
      if (BPF_CLASS(in->code) == BPF_LD) {
        a = v;
        a_off = BPF_MODE(in->code) == BPF_ABS && k >= offsetof(struct seccomp_data, args) ? k : 0;
        a_mask = ~0u;
      } else {
        x = v;
      }
      break;
    }
    case BPF_ST:
    case BPF_STX:
      if (k >= BPF_MEMWORDS) return -EINVAL;
      mem[k] = BPF_CLASS(in->code) == BPF_ST ? a : x;
      break;
    case BPF_ALU:
      if (BPF_OP(in->code) == BPF_AND && BPF_SRC(in->code) == BPF_K) a_mask &= k;
      else a_off = 0;
      switch (BPF_OP(in->code)) {
      case BPF_ADD: a += src; break;
      case BPF_SUB: a -= src; break;
      case BPF_MUL: a *= src; break;
      case BPF_DIV: if (!src) return -EINVAL; a /= src; break;
      case BPF_MOD: if (!src) return -EINVAL; a %= src; break;
      case BPF_OR: a |= src; break;
      case BPF_AND: a &= src; break;
      case BPF_XOR: a ^= src; break;
      case BPF_LSH: a = src < 32 ? a << src : 0; break;
      case BPF_RSH: a = src < 32 ? a >> src : 0; break;
      case BPF_NEG: a = -a; break;
      default: return -EINVAL;
      }
      break;
    case BPF_JMP: {
      size_t off;
      if (BPF_OP(in->code) == BPF_JA) {
        off = k;
      } else {
        bool c;
        switch (BPF_OP(in->code)) {
        case BPF_JEQ: c = a == src; break;
        case BPF_JGT: c = a > src; break;
        case BPF_JGE: c = a >= src; break;
        case BPF_JSET: c = (a & src) != 0; break;
        default: return -EINVAL;
        }
        if (cmps && a_off && BPF_SRC(in->code) == BPF_K && *ncmps < MAX_CMPS)
          cmps[(*ncmps)++] = (struct arg_cmp){a_off, a_mask, k, BPF_OP(in->code)};
        off = c ? in->jt : in->jf;
      }
      if (off >= n - pc - 1) return -EINVAL;   /* must land inside the program */
      pc += off;
      break;
    }
    case BPF_RET:
      *ret = BPF_RVAL(in->code) == BPF_A ? a : k;
      return 0;
    case BPF_MISC:
      if (BPF_MISCOP(in->code) == BPF_TAX) {
        x = a;
      } else {
        a = x;
        a_off = 0;
      }
      break;
    default:
      return -EINVAL;
    }
  }
  return -EINVAL;   /* fell off the end */
}

int an_sb_bpf_run(const struct sock_filter *f, size_t n, const struct seccomp_data *data,
                  uint32_t *ret) {
  return bpf_run(f, n, data, ret, NULL, NULL);
}

/* What the default denies on purpose, as calls: a syscall and (optionally)
 * the one argument that makes it dangerous: its bits set in that argument,
 * or (exact) its low 32 bits equal to value, where the kernel reads an int.
 * Every other argument bit is free: the search below tries the values the
 * profile's own argument tests make interesting. */
struct probe {
  const char *syscall;
  const char *label;        /* NULL: the syscall's name */
  unsigned arg;
  uint64_t value;
  bool exact;
};

static const struct probe probes[] = {
  {"unshare", "unshare(CLONE_NEWUSER)", 0, CLONE_NEWUSER, false},
  {"unshare", "unshare(CLONE_NEWNS)", 0, CLONE_NEWNS, false},
  {"unshare", "unshare(CLONE_NEWNET)", 0, CLONE_NEWNET, false},
  {"unshare", "unshare(CLONE_NEWPID)", 0, CLONE_NEWPID, false},
  {"unshare", "unshare(CLONE_NEWCGROUP)", 0, CLONE_NEWCGROUP, false},
  {"clone", "clone(CLONE_NEWUSER)", 0, CLONE_NEWUSER, false},
  {"clone", "clone(CLONE_NEWNS)", 0, CLONE_NEWNS, false},
  {"clone", "clone(CLONE_NEWNET)", 0, CLONE_NEWNET, false},
  {"clone", "clone(CLONE_NEWPID)", 0, CLONE_NEWPID, false},
  {"clone3", "clone3 (flags out of seccomp's sight)", 0, 0, false},
  {"setns", NULL, 0, 0, false},
  {"mount", NULL, 0, 0, false}, {"umount2", NULL, 0, 0, false}, {"pivot_root", NULL, 0, 0, false},
  {"chroot", NULL, 0, 0, false}, {"fsopen", NULL, 0, 0, false}, {"fsconfig", NULL, 0, 0, false},
  {"fsmount", NULL, 0, 0, false}, {"fspick", NULL, 0, 0, false}, {"move_mount", NULL, 0, 0, false},
  {"open_tree", NULL, 0, 0, false}, {"mount_setattr", NULL, 0, 0, false},
  {"bpf", NULL, 0, 0, false}, {"perf_event_open", NULL, 0, 0, false}, {"userfaultfd", NULL, 0, 0, false},
  {"keyctl", NULL, 0, 0, false}, {"add_key", NULL, 0, 0, false}, {"request_key", NULL, 0, 0, false},
  {"ptrace", NULL, 0, 0, false}, {"process_vm_readv", NULL, 0, 0, false}, {"process_vm_writev", NULL, 0, 0, false},
  {"pidfd_getfd", NULL, 0, 0, false}, {"kcmp", NULL, 0, 0, false},
  {"kexec_load", NULL, 0, 0, false}, {"kexec_file_load", NULL, 0, 0, false}, {"init_module", NULL, 0, 0, false},
  {"finit_module", NULL, 0, 0, false}, {"delete_module", NULL, 0, 0, false},
  {"open_by_handle_at", NULL, 0, 0, false}, {"name_to_handle_at", NULL, 0, 0, false},
  {"io_uring_setup", NULL, 0, 0, false}, {"io_uring_enter", NULL, 0, 0, false},
  {"io_uring_register", NULL, 0, 0, false},
  {"iopl", NULL, 0, 0, false}, {"ioperm", NULL, 0, 0, false}, {"modify_ldt", NULL, 0, 0, false},
  {"swapon", NULL, 0, 0, false}, {"swapoff", NULL, 0, 0, false}, {"reboot", NULL, 0, 0, false},
  {"acct", NULL, 0, 0, false}, {"quotactl", NULL, 0, 0, false}, {"syslog", NULL, 0, 0, false},
  {"lookup_dcookie", NULL, 0, 0, false}, {"fanotify_init", NULL, 0, 0, false},
  {"settimeofday", NULL, 0, 0, false}, {"clock_settime", NULL, 0, 0, false}, {"adjtimex", NULL, 0, 0, false},
  {"clock_adjtime", NULL, 0, 0, false},
  {"socket", "socket(AF_VSOCK)", 0, AF_VSOCK, true},
  {"ioctl", "ioctl(TIOCSTI)", 1, TIOCSTI, true},
  {"ioctl", "ioctl(TIOCLINUX)", 1, TIOCLINUX, true},
  {"personality", "personality(ADDR_NO_RANDOMIZE)", 0, PER_ADDR_NO_RANDOMIZE, true},
};

static bool action_allows(uint32_t ret) {
  switch (ret & SECCOMP_RET_ACTION_FULL) {
  case SECCOMP_RET_ALLOW: case SECCOMP_RET_LOG: case SECCOMP_RET_TRACE: case SECCOMP_RET_USER_NOTIF:
    return true;
  default:
    return false;
  }
}

/* seccomp_data.arch of a libseccomp architecture token (x32 runs with the
 * x86_64 audit arch and numbers carrying __X32_SYSCALL_BIT). */
static uint32_t audit_arch(uint32_t token) {
  return token == SCMP_ARCH_X32 ? AUDIT_ARCH_X86_64 : token;
}

static const char *arch_name(uint32_t token) {
  switch (token) {
  case SCMP_ARCH_X86_64: return "x86_64";
  case SCMP_ARCH_X86: return "x86";
  case SCMP_ARCH_X32: return "x32";
  case SCMP_ARCH_AARCH64: return "aarch64";
  case SCMP_ARCH_ARM: return "arm";
  default: return "another architecture";
  }
}

/* Make d a call of probe pr again after an argument word changed. */
static void probe_pin(struct seccomp_data *d, const struct probe *pr) {
  if (pr->exact) d->args[pr->arg] = (d->args[pr->arg] & ~0xffffffffull) | (uint32_t) pr->value;
  else d->args[pr->arg] |= pr->value;
}

/* Set the argument word at seccomp_data offset off of d to v. */
static void word_set(struct seccomp_data *d, uint32_t off, uint32_t v) {
  memcpy((char *) d + off, &v, sizeof v);
}

#define SEARCH_RUNS 256

/* Whether some call of probe pr on arch token `arch` is allowed by p and
 * denied by ref (ref NULL: allowed by p; false also when the syscall does not exist there).  A
 * filter's answer can only change where one of its argument tests flips,
 * so starting from the probe with every other argument 0, each test met on
 * the way is flipped in turn (a breadth-first search over at most
 * SEARCH_RUNS calls, keeping the probe's own bits): a rule that allows the
 * dangerous flag only together with others (unshare(CLONE_NEWUSER|
 * CLONE_NEWNS) as an exact value), only with some other argument
 * (socket(AF_VSOCK, SOCK_STREAM)) or only with high bits the kernel ignores
 * (ioctl(TIOCSTI | 1 << 32)) is found. */
static int probe_widens(const struct an_seccomp_program *p, const struct an_seccomp_program *ref,
                        const struct probe *pr, uint32_t arch, bool *widens) {
  *widens = false;
  int nr = seccomp_syscall_resolve_name_arch(arch, pr->syscall);
  if (nr < 0) return 0;   /* unknown here, or a multiplexed pseudo-syscall */
  cleanup_free struct seccomp_data *q = calloc(SEARCH_RUNS, sizeof *q);
  if (!q) return -ENOMEM;
  q[0] = (struct seccomp_data){.nr = nr, .arch = audit_arch(arch)};
  probe_pin(&q[0], pr);
  size_t n = 1;
  for (size_t i = 0; i < n; i++) {
    struct arg_cmp cmps[MAX_CMPS];
    size_t nc = 0;
    uint32_t ret = 0;
    if (bpf_run(p->filter, p->prog.len, &q[i], &ret, cmps, &nc) < 0) return -EINVAL;
    if (action_allows(ret)) {
      if (!ref) return *widens = true, 0;
      if (an_sb_bpf_run(ref->filter, ref->prog.len, &q[i], &ret) < 0) return -EINVAL;
      if (!action_allows(ret)) return *widens = true, 0;
    }
    for (size_t c = 0; c < nc && n < SEARCH_RUNS; c++) {
      uint32_t w, m = cmps[c].mask, k = cmps[c].k, v[2];
      memcpy(&w, (const char *) &q[i] + cmps[c].off, sizeof w);
      switch (cmps[c].op) {
      case BPF_JEQ: v[0] = (w & ~m) | (k & m); v[1] = (w & ~m) | ((k ^ (m & -m)) & m); break;
      case BPF_JGT: v[0] = k + 1; v[1] = k; break;
      case BPF_JGE: v[0] = k; v[1] = k - 1; break;
      default: v[0] = w | k; v[1] = w & ~k; break;   /* JSET */
      }
      for (int j = 0; j < 2 && n < SEARCH_RUNS; j++) {
        q[n] = q[i];
        word_set(&q[n], cmps[c].off, v[j]);
        probe_pin(&q[n], pr);
        bool seen = false;
        for (size_t s = 0; s < n && !seen; s++) seen = !memcmp(&q[s], &q[n], sizeof q[n]);
        if (!seen) n++;
      }
    }
  }
  return 0;
}

void an_sb_labels_free(char **labels) {
  for (char **l = labels; l && *l; l++) free(*l);
  free(labels);
}

static void program_release(struct an_seccomp_program **p) { an_seccomp_program_free(*p); }
#define cleanup_program __attribute__((cleanup(program_release)))

int an_sb_seccomp_widening(const struct an_spec_seccomp *profile,
                           const struct an_spec_seccomp *reference, char ***labels,
                           an_error_t *err) {
  cleanup_program struct an_seccomp_program *pp = NULL;
  cleanup_program struct an_seccomp_program *rp = NULL;
  int r;
  if ((r = an_seccomp_prepare(profile, NULL, &pp, err)) < 0) return r;
  if ((r = an_seccomp_prepare(reference, NULL, &rp, err)) < 0)
    return an_error_prefix(err, "default seccomp profile");
  /* the native architecture, then every one the profile lists */
  uint32_t arches[17] = {seccomp_arch_native()};
  size_t n_arches = 1;
  for (size_t i = 0; i < profile->n_architectures && n_arches < 17; i++) {
    bool seen = false;
    for (size_t k = 0; k < n_arches; k++) seen |= arches[k] == profile->architectures[i];
    if (!seen) arches[n_arches++] = profile->architectures[i];
  }
  size_t n_probes = sizeof probes / sizeof *probes;
  cleanup_free char **out = calloc(n_probes * n_arches + 1, sizeof *out);
  if (!out) return an_error_set(err, ENOMEM, "seccomp check");
  size_t k = 0;
  for (size_t a = 0; a < n_arches; a++)
    for (size_t i = 0; i < n_probes; i++) {
      bool widens;
      int pr = probe_widens(pp, rp, &probes[i], arches[a], &widens);
      if (pr < 0) {
        an_sb_labels_free(an_steal(&out));
        return pr == -ENOMEM ? an_error_set(err, ENOMEM, "seccomp check")
                             : an_error_set(err, EINVAL, "seccomp check: the compiled filter is not valid BPF");
      }
      if (!widens) continue;
      const char *label = probes[i].label ? probes[i].label : probes[i].syscall;
      int ok = a == 0 ? ((out[k] = strdup(label)) != NULL)
                      : asprintf(&out[k], "%s (%s)", label, arch_name(arches[a])) >= 0;
      if (!ok) {
        out[k] = NULL;
        an_sb_labels_free(an_steal(&out));
        return an_error_set(err, ENOMEM, "seccomp check");
      }
      k++;
    }
  *labels = an_steal(&out);
  return 0;
}

int an_sb_seccomp_widening_of(const struct an_sandbox_opts *opts,
                              const struct an_spec_seccomp *profile, char ***labels,
                              an_error_t *err) {
  const char *def = opts->seccomp_default;
  char real[PATH_MAX];
  /* the default itself (opts keep a chosen profile as its realpath) */
  if (!def || strcmp(opts->seccomp_profile, def) == 0 ||
      (realpath(def, real) && strcmp(opts->seccomp_profile, real) == 0)) {
    *labels = calloc(1, sizeof **labels);
    return *labels ? 0 : an_error_set(err, ENOMEM, "seccomp check");
  }
  struct an_spec_seccomp *reference = NULL;
  int r = an_seccomp_profile_load(def, &reference, err);
  if (r < 0)   /* fail closed: unchecked is not accepted, unless the caller said unsafe */
    return an_error_prefix(err, "check seccomp profile %s against the default (a profile other "
                           "than the default runs only once compared with it, or with "
                           "seccomp_unsafe)", opts->seccomp_profile);
  r = an_sb_seccomp_widening(profile, reference, labels, err);
  an_spec_seccomp_free(reference);
  return r < 0 ? an_error_prefix(err, "seccomp profile %s", opts->seccomp_profile) : 0;
}

int an_sb_seccomp_check(const struct an_sandbox_opts *opts, const struct an_spec_seccomp *profile,
                        an_error_t *err) {
  if (opts->seccomp_unsafe) return 0;
  char **labels = NULL;
  int r = an_sb_seccomp_widening_of(opts, profile, &labels, err);
  if (r < 0) return r;
  size_t n = 0;
  while (labels[n]) n++;
  if (n == 0) {
    an_sb_labels_free(labels);
    return 0;
  }
  /* the first few calls by name, then a count: never cut mid-name */
  enum { SHOWN = 5 };
  char *more = NULL;
  size_t shown = n - 1 < SHOWN ? n - 1 : SHOWN;
  size_t mlen = 0;
  FILE *mf = open_memstream(&more, &mlen);
  if (!mf) {
    an_sb_labels_free(labels);
    return an_error_set(err, ENOMEM, "seccomp check");
  }
  for (size_t i = 1; i <= shown; i++) fprintf(mf, "%s%s", i > 1 ? ", " : "", labels[i]);
  if (n - 1 > shown) fprintf(mf, " and %zu more", n - 1 - shown);
  if (fclose(mf) != 0 || !more) {
    free(more);
    an_sb_labels_free(labels);
    return an_error_set(err, ENOMEM, "seccomp check");
  }
  r = an_error_set(err, EPERM, "seccomp profile %s allows %s, which the default profile denies"
                   "%s%s%s; set seccomp_unsafe (--seccomp-unsafe) to accept it",
                   opts->seccomp_profile, labels[0], n > 1 ? " (also " : "", more, n > 1 ? ")" : "");
  free(more);
  an_sb_labels_free(labels);
  return r;
}

void an_sb_seccomp_unsafe_event(const char *dir, const struct an_sandbox_opts *opts,
                                const struct an_spec_seccomp *profile) {
  char **labels = NULL;
  an_error_t e = NULL;
  if (!opts->seccomp_unsafe || !profile ||
      an_sb_seccomp_widening_of(opts, profile, &labels, &e) < 0 || !labels[0]) {
    an_error_free(&e);
    an_sb_labels_free(labels);
    return;
  }
  /* an_sb_event takes the members as a fragment of at most ~1000 bytes:
   * list the calls while they fit, then count the rest. */
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, false) == 0) {
    an_jgen_map_open(&j);
    an_jgen_kv_str(&j, "profile", opts->seccomp_profile);
    an_jgen_key(&j, "allows");
    an_jgen_array_open(&j);
    size_t used = strlen(opts->seccomp_profile) + 32, i = 0;
    for (; labels[i] && used + strlen(labels[i]) + 3 < 900; i++) {
      an_jgen_str(&j, labels[i]);
      used += strlen(labels[i]) + 3;
    }
    an_jgen_array_close(&j);
    size_t more = 0;
    while (labels[i + more]) more++;
    an_jgen_kv_u64(&j, "allows_more", more);
    an_jgen_map_close(&j);
    cleanup_free char *doc = NULL;
    size_t len = 0;
    if (an_jgen_finish(&j, &doc, &len) == 0 && len >= 2 && len < 1000)
      an_sb_event(dir, "seccomp_unsafe", ",%.*s", (int) (len - 2), doc + 1);
  }
  an_sb_labels_free(labels);
}

int an_sb_seccomp_probe(const struct an_spec_seccomp *profile, char ***allowed, char ***denied,
                        an_error_t *err) {
  cleanup_program struct an_seccomp_program *p = NULL;
  int r = an_seccomp_prepare(profile, NULL, &p, err);
  if (r < 0) return r;
  size_t n = sizeof probes / sizeof *probes, na = 0, nd = 0;
  char **a = calloc(n + 1, sizeof *a), **d = calloc(n + 1, sizeof *d);
  if (!a || !d) {
    free(a);
    free(d);
    return an_error_set(err, ENOMEM, "seccomp probes");
  }
  uint32_t arch = seccomp_arch_native();
  for (size_t i = 0; i < n; i++) {
    bool yes = false;
    int pr = probe_widens(p, NULL, &probes[i], arch, &yes);
    if (pr < 0) {
      an_sb_labels_free(a);
      an_sb_labels_free(d);
      return pr == -ENOMEM ? an_error_set(err, ENOMEM, "seccomp probes")
                           : an_error_set(err, EINVAL, "seccomp probes: the compiled filter is not valid BPF");
    }
    if (seccomp_syscall_resolve_name_arch(arch, probes[i].syscall) < 0) continue;
    char *label = strdup(probes[i].label ? probes[i].label : probes[i].syscall);
    if (!label) {
      an_sb_labels_free(a);
      an_sb_labels_free(d);
      return an_error_set(err, ENOMEM, "seccomp probes");
    }
    if (yes) a[na++] = label;
    else d[nd++] = label;
  }
  *allowed = a;
  *denied = d;
  return 0;
}
