/* tests/escapes/hardening_test.c — issue 10's outside attack, the items of
 * the seccomp profile and the kernel's shared budgets, each checked in a
 * default sandbox (escape_fixture: the sandbox layer's spec run by the
 * engine) with a negative control on the host:
 *   item 1   socket families no namespace isolates (AF_VSOCK first) fail
 *            with the profile's EPERM, also with high bits in the argument;
 *            the host answers OK (or the kernel's EAFNOSUPPORT);
 *   item 4   /tmp and /dev/shm have an inode cap: creating files past it
 *            fails with ENOSPC and later commands still run (no OOM kill);
 *   item 5   per-user kernel budgets (inotify instances, RT signals, ptys)
 *            that one sandbox exhausts are its own: the host and a second
 *            sandbox still get theirs; native AIO (fs.aio-max-nr is one
 *            host-wide budget) answers ENOSYS;
 *   item 12  /tmp allows exec (nosuid,nodev) unless tmp_noexec; the python
 *            image has /etc/services, ldconfig, the C.UTF-8 locale and
 *            Python.h. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/nsfs.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "escape_fixture.h"

static struct esc_sandbox S, S2;

static void setup(void) { esc_sandbox_init(&S, "busybox"); }
static void teardown(void) {
  esc_sandbox_fini(&S);
  esc_sandbox_fini(&S2);
}

TestSuite(hardening, .init = setup, .fini = teardown, .timeout = 180);

/* Families denied by the profile: vsock, the kernel crypto API, and a
 * sample of the rest (bluetooth, can, tipc, rds, kcm, rxrpc, smc, qipcrtr,
 * mctp, packet, xdp, key, unspec), each "socket:FAMILY,TYPE". */
#define DENIED_FAMILIES "socket:40,1 socket:38,5 socket:31,1 socket:29,3 socket:30,5 socket:21,5 " \
                        "socket:41,5 socket:33,2 socket:43,1 socket:42,2 socket:45,2 socket:17,3 " \
                        "socket:44,3 socket:15,3 socket:0,1"

Test(hardening, item_1_vsock_and_families_no_namespace_isolates_are_denied) {
  char *out = esc_probe(&S, DENIED_FAMILIES " socket_high_bits:40,1 socketpair:40,1 "
                                            "vsock_listen:5555");
  /* every denied family: the default action of the profile (EPERM) */
  cr_assert_eq(esc_count_lines(out, "socket EPERM"), 15, "denied families:\n%s", out);
  esc_assert_probe(out, "socket_high_bits", "EPERM");
  esc_assert_probe(out, "socketpair", "EPERM");
  esc_assert_probe(out, "vsock_listen", "EPERM");
  free(out);
  /* the families a namespace isolates still work, also with high bits set
   * (compared on the low 32 bits, as the kernel reads them) */
  out = esc_probe(&S, "socket:1,1 socket:2,1 socket:10,2 socket:16,3 socket_high_bits:1,1 "
                      "socketpair:1,1");
  cr_assert_eq(esc_count_lines(out, "socket OK"), 4, "allowed families:\n%s", out);
  esc_assert_probe(out, "socket_high_bits", "OK");
  esc_assert_probe(out, "socketpair", "OK");
  free(out);
  /* negative control: on the host the kernel answers; this host (a VM) has
   * a vsock transport, a host without one answers EAFNOSUPPORT; the other
   * families are OK or not built into this kernel */
  out = esc_host_probe(NULL, "socket:40,1");
  esc_assert_probe(out, "socket", "OK EAFNOSUPPORT");
  free(out);
  out = esc_host_probe(NULL, DENIED_FAMILIES);
  cr_assert_eq(esc_count_lines(out, "socket EPERM"), 0, "host answers:\n%s", out);
  free(out);
}

Test(hardening, item_5_native_aio_answers_enosys_io_uring_eperm) {
  char *out = esc_probe(&S, "io_setup io_uring_setup");
  esc_assert_probe(out, "io_setup", "ENOSYS");
  esc_assert_probe(out, "io_uring_setup", "EPERM");
  free(out);
  out = esc_host_probe(NULL, "io_setup");
  esc_assert_probe(out, "io_setup", "OK");
  free(out);
}

/* item 4: 128 MiB of memory, far more than the inodes of a 64 MiB /tmp
 * (16384) cost, far less than what unbounded empty files would take. */
Test(hardening, item_4_tmp_and_shm_inode_caps_stop_at_enospc_and_the_sandbox_lives_on) {
  cr_assert(an_sandbox_opts_set_memory(S.opts, 128ull << 20, NULL) == 0);
  esc_start(&S, "exec sleep 120", NULL);
  char *argv[] = {ESC_PROBE, "mkfiles:/tmp", "mkfiles:/dev/shm", NULL};
  struct esc_result r = {0};
  int st = esc_exec(&S, argv, &r);
  cr_assert_eq(st, 0, "probe: %d %s %s", st, r.out, r.err);
  cr_assert_eq(esc_count_lines(r.out, "mkfiles ENOSPC:"), 2, "mkfiles:\n%s", r.out);
  for (const char *p = r.out; (p = strstr(p, "ENOSPC:")); p += 7) {
    long n = strtol(p + 7, NULL, 10);
    cr_assert(n > 16000 && n <= 16384, "files before ENOSPC: %ld\n%s", n, r.out);
  }
  esc_result_free(&r);
  /* later commands run: nothing was OOM-killed, the files are still there */
  char *argv2[] = {"/bin/sh", "-c", "ls /tmp | wc -l; echo alive", NULL};
  st = esc_exec(&S, argv2, &r);
  cr_assert_eq(st, 0, "exec after the fill: %d %s", st, r.err);
  cr_assert(strstr(r.out, "alive\n"), "%s", r.out);
  cr_assert_gt(atol(r.out), 16000, "%s", r.out);
  esc_result_free(&r);
  char oom[256] = "";
  if (esc_cgroup_read(&S, "memory", "memory.events", oom, sizeof oom))
    cr_assert(strstr(oom, "oom_kill 0"), "memory.events: %s", oom);
}

/* Take one unit of each budget on the host (as root, the user that every
 * sandbox was charged to before): "inotify pty sigqueue" -> 0 or errno. */
static void host_takes_one(int res[3]) {
  int p[2];
  cr_assert(pipe(p) == 0);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    int r[3];
    r[0] = inotify_init1(IN_CLOEXEC) < 0 ? errno : 0;
    r[1] = posix_openpt(O_RDWR | O_NOCTTY) < 0 ? errno : 0;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN);
    sigprocmask(SIG_BLOCK, &set, NULL);
    r[2] = sigqueue(getpid(), SIGRTMIN, (union sigval){0}) < 0 ? errno : 0;
    _exit(write(p[1], r, sizeof r) == sizeof r ? 0 : 1);
  }
  close(p[1]);
  cr_assert_eq(read(p[0], res, 3 * sizeof *res), (ssize_t) (3 * sizeof *res));
  close(p[0]);
  waitpid(pid, NULL, 0);
}

Test(hardening, item_5_per_user_kernel_budgets_exhausted_by_one_sandbox_stay_its_own) {
  /* sandbox 1 takes inotify instances, RT signals and ptys until the kernel
   * refuses, and holds them */
  esc_start(&S, ESC_PROBE " hold:inotify,/workspace/inotify & " ESC_PROBE
                " hold:sigqueue,/workspace/sigqueue & " ESC_PROBE " hold:pty,/workspace/pty & "
                "exec sleep 120", NULL);
  const char *kinds[] = {"inotify", "sigqueue", "pty"};
  char got[3][64];
  for (int i = 0; i < 3; i++) {
    cr_assert(esc_wait_file(&S, kinds[i]), "no %s result", kinds[i]);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/%s", S.ws, kinds[i]);
    cr_assert(esc_read_file(path, got[i], sizeof got[i]));
  }
  /* while it holds them, the host (root, which every sandbox was charged
   * to before) still gets each */
  int host[3];
  host_takes_one(host);
  cr_assert_eq(host[0], 0, "host inotify_init1: %s (sandbox took %s)", strerror(host[0]), got[0]);
  cr_assert_eq(host[1], 0, "host /dev/ptmx: %s (sandbox took %s)", strerror(host[1]), got[2]);
  cr_assert_eq(host[2], 0, "host sigqueue: %s (sandbox took %s)", strerror(host[2]), got[1]);
  /* each stops at the sandbox's own limit: inotify at the per-user limit
   * (128, fs.inotify.max_user_instances, of its own host uid), RT signals
   * at RLIMIT_SIGPENDING 1024, ptys at its devpts max=64 */
  cr_assert(strncmp(got[0], "EMFILE:", 7) == 0 && atol(got[0] + 7) <= 128, "inotify: %s", got[0]);
  cr_assert(strncmp(got[1], "EAGAIN:", 7) == 0 && atol(got[1] + 7) <= 1024, "sigqueue: %s", got[1]);
  cr_assert(strncmp(got[2], "ENOSPC:", 7) == 0 && atol(got[2] + 7) <= 64, "pty: %s", got[2]);
  /* the mechanism: the sandbox's user namespace is owned by the host uid
   * its root maps to (ioctl_ns(2) NS_GET_OWNER_UID), not host root */
  char ns[64];
  snprintf(ns, sizeof ns, "/proc/%d/ns/user", (int) S.init_pid);
  int nsfd = open(ns, O_RDONLY | O_CLOEXEC);
  cr_assert_geq(nsfd, 0, "open %s: %s", ns, strerror(errno));
  uid_t owner = (uid_t) -1;
  cr_assert_eq(ioctl(nsfd, NS_GET_OWNER_UID, &owner), 0, "NS_GET_OWNER_UID: %s", strerror(errno));
  close(nsfd);
  cr_assert_eq(owner, S.ids.host_uid_base, "user namespace owner %u, want %u", (unsigned) owner,
               (unsigned) S.ids.host_uid_base);
  /* and so does a second sandbox */
  esc_sandbox_init(&S2, "busybox");
  char *out = esc_probe(&S2, "inotify_init1 ptmx sigqueue_rt");
  esc_assert_probe(out, "inotify_init1", "OK");
  esc_assert_probe(out, "ptmx", "OK");
  esc_assert_probe(out, "sigqueue_rt", "OK");
  free(out);
  /* the per-namespace limits are visible inside */
  struct esc_result r = {0};
  esc_sh(&S2, &r, "cat /proc/sys/user/max_user_namespaces /proc/sys/user/max_inotify_instances");
  cr_assert_str_eq(r.out, "0\n128\n");
  esc_result_free(&r);
}

Test(hardening, item_12_tmp_allows_exec_unless_tmp_noexec) {
  struct esc_result r = {0};
  int st = esc_sh(&S, &r, "cp /workspace/probes/probe /tmp/p && chmod 755 /tmp/p && "
                          "/tmp/p getpid; echo rc=$?; grep ' /tmp ' /proc/mounts");
  cr_assert_eq(st, 0);
  cr_assert(strstr(r.out, "getpid OK\nrc=0\n"), "exec from /tmp: %s", r.out);
  cr_assert(strstr(r.out, "nosuid,nodev") && !strstr(r.out, "noexec"), "%s", r.out);
  esc_result_free(&r);
  cr_assert(an_sandbox_opts_set_tmp_noexec(S.opts, true, NULL) == 0);
  st = esc_sh(&S, &r, "cp /workspace/probes/probe /tmp/p && chmod 755 /tmp/p && "
                      ESC_PROBE " exec:/tmp/p; /tmp/p getpid; echo rc=$?");
  cr_assert_eq(st, 0);
  esc_assert_probe(r.out, "exec", "EACCES");
  cr_assert(strstr(r.out, "rc=126"), "%s", r.out);
  esc_result_free(&r);
}

Test(hardening, item_12_python_image_has_netbase_libc_bin_locale_and_headers) {
  esc_sandbox_fini(&S);
  esc_require_image("python");
  esc_sandbox_init(&S, "python");
  char services[PATH_MAX + 16];
  snprintf(services, sizeof services, "%s/etc/services", S.rootfs);
  cr_assert(access(services, F_OK) == 0,
            "%s missing: this python image predates netbase and libc-bin in "
            "rootfs-tools/build-python.sh's ROOTS; rebuild it (make images)", services);
  struct esc_result r = {0};
  int st = esc_sh(&S, &r, "test -s /etc/services && echo services; "
                          "command -v ldconfig; "
                          "LANG=C.UTF-8 python3 -c \"import locale, socket, sysconfig, os; "
                          "print(locale.setlocale(locale.LC_ALL, '')); "
                          "print(socket.getservbyname('http', 'tcp')); "
                          "print(os.path.exists(sysconfig.get_paths()['include'] + '/Python.h'))\"");
  cr_assert_eq(st, 0, "%s %s", r.out, r.err);
  cr_assert_str_eq(r.out, "services\n/usr/sbin/ldconfig\nC.UTF-8\n80\nTrue\n");
  esc_result_free(&r);
}
