/* engine/cgroup_v2_devices.c — linux.resources.devices on cgroup v2: v2
 * has no devices controller, so access is decided by an eBPF program of
 * type BPF_PROG_TYPE_CGROUP_DEVICE attached to the cgroup with
 * BPF_CGROUP_DEVICE (cgroup-v2.rst "Device controller"; bpf(2)).
 *
 * The program is written here as raw instructions.  It checks the rules
 * from last to first and returns the verdict of the first that matches
 * ("last matching rule wins", as on v1 and in runc), and denies when none
 * matches (deny by default).  Rules: the spec's, then the default allow
 * list (cgroup_devices_default.c).  It is attached without
 * BPF_F_ALLOW_OVERRIDE / BPF_F_ALLOW_MULTI, so a later attach by us
 * replaces it and nothing below the container cgroup can attach another. */
#include <errno.h>
#include <stdbool.h>
#include <linux/bpf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "engine/cgroup_internal.h"
#include "util/cleanup.h"

#define INSN(c, d, s, o, i) ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})
#define LDX_W(dst, src, off) INSN(BPF_LDX | BPF_MEM | BPF_W, dst, src, off, 0)
#define ALU32_IMM(op, dst, imm) INSN(BPF_ALU | (op) | BPF_K, dst, 0, 0, imm)
#define MOV32_REG(dst, src) INSN(BPF_ALU | BPF_MOV | BPF_X, dst, src, 0, 0)
#define MOV64_IMM(dst, imm) INSN(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm)
#define JNE32_IMM(dst, imm, off) INSN(BPF_JMP32 | BPF_JNE | BPF_K, dst, 0, off, imm)
#define EXIT() INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

enum { R0, R1, R2, R3, R4, R5 };   /* r2 type, r3 access, r4 major, r5 minor */

static unsigned access_mask(const char *a) {
  unsigned m = 0;
  for (a = a ? a : "rwm"; *a; a++)
    m |= *a == 'r' ? BPF_DEVCG_ACC_READ : *a == 'w' ? BPF_DEVCG_ACC_WRITE : BPF_DEVCG_ACC_MKNOD;
  return m;
}

/* One rule: jumps to the end of its block when it does not match.  A rule
 * with no condition (type 'a', access rwm, any major and minor) matches
 * every access: *always is set, and the caller emits nothing after it (the
 * verifier refuses unreachable instructions, EINVAL). */
static size_t emit_rule(struct bpf_insn *p, const struct an_spec_device_cgroup *d, bool *always) {
  struct bpf_insn b[8];
  size_t n = 0;
  int jumps[4], nj = 0;
  unsigned acc = access_mask(d->access);
  if (d->type == 'c' || d->type == 'b') {
    jumps[nj++] = (int) n;
    b[n++] = JNE32_IMM(R2, d->type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK, 0);
  }
  if (acc != (BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE | BPF_DEVCG_ACC_MKNOD)) {
    /* matches when every requested access bit is in the rule's set */
    b[n++] = MOV32_REG(R1, R3);
    b[n++] = ALU32_IMM(BPF_AND, R1, (int) (~acc & 7u));
    jumps[nj++] = (int) n;
    b[n++] = JNE32_IMM(R1, 0, 0);
  }
  if (d->major >= 0) { jumps[nj++] = (int) n; b[n++] = JNE32_IMM(R4, (int) d->major, 0); }
  if (d->minor >= 0) { jumps[nj++] = (int) n; b[n++] = JNE32_IMM(R5, (int) d->minor, 0); }
  b[n++] = MOV64_IMM(R0, d->allow ? 1 : 0);
  b[n++] = EXIT();
  for (int j = 0; j < nj; j++) b[jumps[j]].off = (short) (n - (size_t) jumps[j] - 1);
  *always = nj == 0;
  memcpy(p, b, n * sizeof *b);
  return n;
}

static int load_program(const struct an_spec_resources *r, an_error_t *err) {
  size_t nrules = (r ? r->n_devices : 0) + an_cg_n_default_device_rules;
  cleanup_free struct bpf_insn *prog = calloc(8 + nrules * 8, sizeof *prog);
  if (!prog) return an_error_set(err, ENOMEM, "device eBPF program");
  size_t n = 0;
  prog[n++] = LDX_W(R2, R1, 0);                       /* access_type */
  prog[n++] = ALU32_IMM(BPF_AND, R2, 0xffff);         /* low 16 bits: device type */
  prog[n++] = LDX_W(R3, R1, 0);
  prog[n++] = ALU32_IMM(BPF_RSH, R3, 16);             /* high 16 bits: access */
  prog[n++] = LDX_W(R4, R1, 4);                       /* major */
  prog[n++] = LDX_W(R5, R1, 8);                       /* minor */
  /* Checked last rule first: once a rule matches every access, the rules
   * before it in the list can never decide, and are not emitted. */
  bool always = false;
  for (size_t i = an_cg_n_default_device_rules; i-- > 0 && !always;)
    n += emit_rule(prog + n, &an_cg_default_device_rules[i], &always);
  for (size_t i = r ? r->n_devices : 0; i-- > 0 && !always;) {
    struct an_spec_device_cgroup d = r->devices[i];
    if (!d.type) d.type = 'a';
    n += emit_rule(prog + n, &d, &always);
  }
  if (!always) {
    prog[n++] = MOV64_IMM(R0, 0);                     /* no rule matched: deny */
    prog[n++] = EXIT();
  }

  /* Load without a verifier log first: with log_level 1 a log that does
   * not fit makes the load itself fail (ENOSPC on kernels before 6.4).
   * Only on failure load again with a log, for the message. */
  union bpf_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  attr.insns = (uint64_t) (uintptr_t) prog;
  attr.insn_cnt = (uint32_t) n;
  attr.license = (uint64_t) (uintptr_t) "Apache-2.0";
  int fd = (int) syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof attr);
  if (fd >= 0) return fd;
  int e = errno;
  size_t log_size = 1 << 20;
  cleanup_free char *log = calloc(1, log_size);
  if (log) {
    attr.log_buf = (uint64_t) (uintptr_t) log;
    attr.log_size = (uint32_t) log_size;
    attr.log_level = 1;
    int fd2 = (int) syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof attr);
    if (fd2 >= 0) return fd2;     /* transient failure the second time round */
    log[log_size - 1] = '\0';
  }
  /* the verifier's verdict is at the end of its log */
  size_t len = log ? strlen(log) : 0;
  while (len && log[len - 1] == '\n') log[--len] = '\0';
  const char *tail = len > 300 ? log + len - 300 : len ? log : "";
  return an_error_set(err, e, "load device eBPF program (%zu instructions)%s%s", n,
                      *tail ? ": verifier: ..." : "", tail);
}

int an_cg_v2_devices_apply(int dirfd, const char *dir, const struct an_spec_resources *r,
                           an_error_t *err) {
  if (dirfd < 0) return an_error_set(err, EBADF, "device eBPF program: cgroup %s not open", dir);
  cleanup_close int prog = load_program(r, err);
  if (prog < 0) return prog;
  union bpf_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.target_fd = (uint32_t) dirfd;
  attr.attach_bpf_fd = (uint32_t) prog;
  attr.attach_type = BPF_CGROUP_DEVICE;
  attr.attach_flags = 0;
  if (syscall(SYS_bpf, BPF_PROG_ATTACH, &attr, sizeof attr) < 0)
    return an_error_set(err, errno, "attach device eBPF program to %s", dir);
  return 0;
}
