/* tests/escapes/syscall_test.c — denied system calls from inside a sandbox
 * (cases BL-11 to BL-16 of ../shared/cases/isolation.md): each probe
 * family runs in the sandbox, where every attempt must fail with EPERM,
 * ENOSYS or SIGSYS (never a resource error that means the kernel was
 * reached), and the same probe runs on the host as root — the negative
 * control that shows the probe really makes the call.
 *
 * Recorded policy: io_uring_setup is denied (EPERM) by
 * profiles/seccomp/default.json, as are io_uring_enter/register. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "escape_fixture.h"
#include "util.h"

#define DENIED "EPERM ENOSYS SIGSYS"

static struct esc_sandbox S;
static struct esc_host_evidence E;
static char host_dir[64];

static void setup(void) {
  esc_sandbox_init(&S, "busybox");
  esc_evidence_record(&E);
  snprintf(host_dir, sizeof host_dir, "/tmp/an-esc-mnt-%d-XXXXXX", getpid());
  cr_assert(mkdtemp(host_dir));
}
static void teardown(void) {
  esc_sandbox_fini(&S);
  esc_evidence_fini(&E);
  if (host_dir[0]) rmdir(host_dir);
}

TestSuite(syscalls, .init = setup, .fini = teardown, .timeout = 120);

/* Assert every action of `actions` (space separated, "name[:arg]") got one
 * of `allowed` in `out`. */
/* A host process to aim ptrace/process_vm_writev/kill controls at. */
static pid_t spawn_victim(void) {
  pid_t p = fork();
  cr_assert(p >= 0);
  if (p == 0) {
    for (;;) pause();
  }
  return p;
}

static void reap(pid_t p) {
  int st;
  kill(p, SIGKILL);
  waitpid(p, &st, 0);
}

Test(syscalls, bl_11_tiocsti_blocked) {
  static const char *acts = "tiocsti:0 tiocsti:1 tiocsti:2 tiocsti:tty tiocsti_high_bits:0 "
                            "tiocsti_high_bits:2 tioclinux:0 tioclinux_high_bits:0";
  /* pipes and /dev/null as stdio */
  char *out = esc_probe(&S, acts);
  cr_assert_eq(esc_count_lines(out, "tiocsti") + esc_count_lines(out, "tioclinux"), 8, "%s", out);
  cr_assert_eq(esc_count_lines(out, " OK"), 0, "a terminal ioctl succeeded:\n%s", out);
  esc_assert_probe_all(out, acts, "EPERM ENOTTY EIO ENXIO SIGSYS");
  free(out);
  /* on a pty of its own the kernel would allow it: only the filter (with
   * the request masked to 32 bits) stops it */
  out = esc_probe(&S, "tiocsti_own_pty tiocsti_own_pty_high_bits");
  esc_assert_probe(out, "tiocsti_own_pty", "EPERM");
  esc_assert_probe(out, "tiocsti_own_pty_high_bits", "EPERM");
  free(out);

  /* attached to a pty of the caller: nothing is injected into its input */
  int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  cr_assert(m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0);
  int slave = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
  cr_assert(slave >= 0);
  char *argv[] = {ESC_PROBE, "tiocsti:0", "tiocsti_high_bits:0", "tiocsti:tty", NULL};
  struct an_spec *spec = esc_build_spec(&S, argv);
  struct esc_result r = {0};
  cr_assert_eq(esc_run_spec(&S, spec, slave, &r), 0);
  an_spec_free(spec);
  cr_assert_eq(esc_count_lines(r.out, " OK"), 0, "TIOCSTI on the caller's pty:\n%s", r.out);
  esc_assert_probe_all(r.out, "tiocsti tiocsti_high_bits", "EPERM ENOTTY EIO ENXIO");
  esc_result_free(&r);
  cr_assert(fcntl(slave, F_SETFL, O_NONBLOCK) == 0);
  char b[16];
  ssize_t n = read(slave, b, sizeof b);
  cr_assert(n < 0, "%zd bytes were injected into the caller's terminal", n);
  close(slave);
  close(m);

  /* negative control: on the host (root) TIOCSTI on a pty works */
  out = esc_host_probe(NULL, "tiocsti_own_pty tiocsti_own_pty_high_bits");
  esc_assert_probe(out, "tiocsti_own_pty", "OK");
  esc_assert_probe(out, "tiocsti_own_pty_high_bits", "OK");
  free(out);
}

Test(syscalls, bl_12_x32_and_i386_abi_denied) {
  static const char *acts = "unshare_user keyctl mount_tmpfs:/tmp x32_unshare_user x32_keyctl "
                            "x32_getpid i386_unshare_user i386_keyctl i386_mount i386_getpid";
  char *out = esc_probe(&S, acts);
  esc_assert_probe_all(out, acts, DENIED);
  free(out);
  /* negative control: the host runs i386 syscalls through int $0x80 (IA32
   * emulation), so the probe's i386 path is real; x32 answers per kernel
   * config (ENOSYS without CONFIG_X86_X32_ABI) — never EPERM/SIGSYS */
  out = esc_host_probe(NULL, "i386_getpid i386_unshare_user i386_keyctl x32_getpid");
  esc_assert_probe(out, "i386_getpid", "OK");
  esc_assert_probe(out, "i386_unshare_user", "OK");
  esc_assert_probe(out, "i386_keyctl", "OK");
  esc_assert_probe(out, "x32_getpid", "OK ENOSYS");
  free(out);
}

Test(syscalls, bl_13_clone3_enosys_threads_work) {
  char *out = esc_probe(&S, "clone3 clone3_newuser_newns clone_newuser_newns");
  esc_assert_probe(out, "clone3", "ENOSYS");
  esc_assert_probe(out, "clone3_newuser_newns", "ENOSYS");
  esc_assert_probe(out, "clone_newuser_newns", "EPERM");
  free(out);
  out = esc_host_probe(NULL, "clone3 clone3_newuser_newns clone_newuser_newns");
  esc_assert_probe_all(out, "clone3 clone3_newuser_newns clone_newuser_newns", "OK");
  free(out);

  /* glibc falls back from clone3's ENOSYS to clone: threads start */
  struct esc_sandbox P;
  esc_sandbox_init(&P, "python");
  struct esc_result r = {0};
  int st = esc_sh(&P, &r,
                  "python3 -c \"import threading;t=threading.Thread(target=print,args=('ok',));"
                  "t.start();t.join()\" && python3 -c \"import socket;"
                  "print(socket.getaddrinfo('localhost', 80, socket.AF_INET)[0][4][0])\"");
  esc_sandbox_fini(&P);
  cr_assert_eq(st, 0, "python in the sandbox: %s%s", r.out, r.err);
  cr_assert_str_eq(r.out, "ok\n127.0.0.1\n", "%s%s", r.out, r.err);
  esc_result_free(&r);
}

Test(syscalls, bl_14_keyring_unreachable) {
  char *out = esc_probe(&S, "keyctl add_key request_key read:/proc/keys");
  esc_assert_probe_all(out, "keyctl add_key request_key", DENIED);
  esc_assert_probe(out, "read", "EMPTY EACCES ENOENT EPERM");
  free(out);
  /* negative control: on the host the calls reach the kernel (add_key goes
   * to the probe's own process keyring, which dies with it) */
  out = esc_host_probe(NULL, "keyctl add_key request_key");
  esc_assert_probe(out, "keyctl", "OK");
  esc_assert_probe(out, "add_key", "OK");
  esc_assert_probe(out, "request_key", "ENOKEY");
  free(out);
}

Test(syscalls, bl_15_exploit_helper_syscalls_denied) {
  static const char *acts = "userfaultfd userfaultfd_user_mode_only perf_event_open bpf_prog_load "
                            "kexec_load finit_module open_by_handle_at lookup_dcookie swapon reboot "
                            "process_vm_writev:1 io_uring_setup";
  char *out = esc_probe(&S, acts);
  esc_assert_probe_all(out, acts, DENIED);
  esc_assert_probe(out, "io_uring_setup", "EPERM"); /* the recorded policy: denied */
  free(out);
  struct esc_result r = {0};
  esc_sh(&S, &r, ESC_PROBE " open_dev_userfaultfd; ls /dev/userfaultfd 2>&1 | grep -c 'No such'; "
                 "sleep 30 & " ESC_PROBE " ptrace_attach:$! process_vm_writev:$!; kill $!");
  esc_assert_probe(r.out, "open_dev_userfaultfd", "ENOENT");
  cr_assert(strstr(r.out, "\n1\n"), "/dev/userfaultfd exists in the sandbox: %s", r.out);
  esc_assert_probe(r.out, "ptrace_attach", DENIED); /* a sibling */
  esc_assert_probe(r.out, "process_vm_writev", DENIED);
  esc_result_free(&r);

  /* negative control on the host, each call reaching the kernel: success,
   * or the kernel's own answer to deliberately bad arguments */
  pid_t v = spawn_victim();
  char acts_host[512];
  snprintf(acts_host, sizeof acts_host,
           "userfaultfd userfaultfd_user_mode_only perf_event_open bpf_prog_load kexec_load "
           "finit_module open_by_handle_at lookup_dcookie swapon reboot io_uring_setup "
           "process_vm_writev:%d ptrace_attach:%d",
           (int) v, (int) v);
  out = esc_host_probe(NULL, acts_host);
  reap(v);
  esc_assert_probe_all(out, "userfaultfd userfaultfd_user_mode_only perf_event_open bpf_prog_load "
                  "open_by_handle_at io_uring_setup ptrace_attach", "OK");
  esc_assert_probe(out, "kexec_load", "EINVAL ENOSYS");     /* 1000 segments; or no CONFIG_KEXEC */
  esc_assert_probe(out, "finit_module", "EBADF ENOSYS");    /* fd -1; or no CONFIG_MODULES */
  esc_assert_probe(out, "lookup_dcookie", "EINVAL ENOSYS"); /* removed in Linux 6.10 */
  esc_assert_probe(out, "swapon", "ENOENT");
  esc_assert_probe(out, "reboot", "EINVAL");                /* bad magic */
  esc_assert_probe(out, "process_vm_writev", "EFAULT");     /* unmapped address */
  free(out);
}

Test(syscalls, bl_16_nested_userns_cgroup_release_agent) {
  static const char *acts = "unshare_user unshare_mnt clone_newuser_newns setns fsopen fsconfig "
                            "fsmount mount_tmpfs:/tmp mount_cgroup:/tmp umount2:/tmp pivot_root:/tmp "
                            "chroot:/tmp";
  char *out = esc_probe(&S, acts);
  esc_assert_probe_all(out, acts, "EPERM"); /* the filter (and no caps), not a resource error */
  free(out);
  struct esc_result r = {0};
  esc_sh(&S, &r, "unshare -Ur true; echo rc=$?; "
                 "unshare -Urm sh -c 'mount -t cgroup -o rdma cgroup /tmp && ls /tmp'; echo rc=$?; "
                 "find / -xdev -name release_agent 2>/dev/null | wc -l");
  cr_assert_eq(esc_count_lines(r.out, "rc=0"), 0, "unshare worked inside: %s%s", r.out, r.err);
  cr_assert(strstr(r.out, "\n0\n"), "a release_agent is reachable: %s", r.out);
  esc_result_free(&r);
  /* host evidence: no cgroup v1 hierarchy mounted anywhere new, host
   * unchanged */
  esc_evidence_assert_unchanged(&E);

  /* negative control: on the host (root, private mount namespace with a
   * tmpfs at host_dir) the same probes succeed */
  char host_acts[768];
  snprintf(host_acts, sizeof host_acts,
           "unshare_user unshare_mnt clone_newuser_newns setns fsopen fsconfig fsmount "
           "chroot:%s mount_tmpfs:%s umount2:%s pivot_root:%s",
           host_dir, host_dir, host_dir, host_dir);
  out = esc_host_probe(host_dir, host_acts);
  esc_assert_probe_all(out, "unshare_user unshare_mnt clone_newuser_newns setns fsopen fsconfig fsmount "
                  "mount_tmpfs umount2 pivot_root chroot", "OK");
  free(out);
}

Test(syscalls, mknod_and_setuid_bits_gain_nothing) {
  /* mknod of a character device: no CAP_MKNOD */
  char *out = esc_probe(&S, "mknod_char:/workspace/null mknod_char:/tmp/null");
  esc_assert_probe(out, "mknod_char", "EPERM");
  cr_assert_eq(esc_count_lines(out, "mknod_char EPERM"), 2, "%s", out);
  free(out);
  char dev[PATH_MAX + 16];
  snprintf(dev, sizeof dev, "%s/an-mknod-%d", host_dir, getpid());
  char act[PATH_MAX + 32];
  snprintf(act, sizeof act, "mknod_char:%s", dev);
  out = esc_host_probe(NULL, act);
  esc_assert_probe(out, "mknod_char", "OK"); /* control (the probe removes the node) */
  free(out);

  /* a set-uid copy owned by the sandbox's root (host base+0): exec gains
   * nothing (nosuid workspace, no_new_privs) */
  char src[PATH_MAX], dst[PATH_MAX + 32];
  esc_helper_path("probe", src, sizeof src);
  snprintf(dst, sizeof dst, "%s/suid", S.ws);
  an_test_copy_file(src, dst, 0755);
  cr_assert_eq(chown(dst, S.ids.host_uid_base, S.ids.host_uid_base), 0);
  cr_assert_eq(chmod(dst, 04755), 0);
  struct esc_result r = {0};
  esc_sh(&S, &r, "ls -ln /workspace/suid | cut -c1-4,15-25; /workspace/suid whoami; "
                 "cp /workspace/probes/probe /workspace/mine; " ESC_PROBE " chmod_setuid:/workspace/mine; "
                 "/workspace/mine whoami");
  cr_assert(strncmp(r.out, "-rws", 4) == 0, "set-uid bit not visible inside: %s", r.out);
  cr_assert_eq(esc_count_lines(r.out, "whoami euid=65532,capeff=0"), 2, "exec gained privilege:\n%s",
               r.out);
  esc_result_free(&r);
  /* negative control: on the host a set-uid file runs with its owner's euid */
  char host_copy[128];
  snprintf(host_copy, sizeof host_copy, "%s/suid", host_dir);
  an_test_copy_file(src, host_copy, 0755);
  cr_assert_eq(chown(host_copy, 1, 1), 0);  /* chown clears set-uid: chmod after it */
  cr_assert_eq(chmod(host_copy, 04755), 0);
  cr_assert_eq(chmod(host_dir, 0755), 0);
  int st;
  char *buf = esc_host_exec_unprivileged(host_copy, "whoami", &st);
  unlink(host_copy);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "host control status %d", st);
  cr_assert(strstr(buf, "whoami euid=1,"), "host control: set-uid did not apply: %s", buf);
  free(buf);
}
