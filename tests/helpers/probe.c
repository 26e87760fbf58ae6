/* tests/helpers/probe.c — the escape suite's syscall probe (bubblewrap's
 * test-helper idea): each ACTION tries ONE system call or action and prints
 * "ACTION RESULT", RESULT being "OK" (the call succeeded), the errno name
 * ("EPERM", "ENOSYS", ...), "SIG<NAME>" when the attempt was killed by a
 * signal (seccomp's SECCOMP_RET_KILL gives SIGSYS), "EXECED" when an exec
 * action replaced the process, or an action's own text (read: "EMPTY";
 * forkbomb: "EAGAIN:<forks>"; fill: "ENOSPC:<MiB>"; whoami; fds).  Every action runs in a
 * forked child, so one killed attempt does not stop the others.
 *
 *   probe ACTION[:ARG[,ARG...]] ...
 *   (connect_unix:PATH tries a unix stream socket at PATH)
 *
 * Arguments that choose an action's object (a pid, an fd, a directory) are
 * given after ':'.  Calls that would change the host if they succeeded are
 * made with arguments the kernel rejects after its permission checks (bad
 * reboot magic, too many kexec segments, fd -1, unmapped remote address), so
 * the same probe can be run on the host as a negative control: there it
 * reaches the kernel and gets OK or the kernel's own argument error, while in
 * a sandbox it must get EPERM/ENOSYS/SIGSYS.
 *
 * Built static (the Makefile's tests/helpers rule) so it runs in any image. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/keyctl.h>
#include <linux/mount.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/userfaultfd.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/vm_sockets.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#define X32_BIT 0x40000000L
/* i386 syscall numbers (arch/x86/entry/syscalls/syscall_32.tbl) */
#define I386_MOUNT 21
#define I386_KEYCTL 288
#define I386_UNSHARE 310

static const char *errno_name(int e) {
  switch (e) {
#define E(x) case x: return #x;
    E(EPERM) E(ENOENT) E(ESRCH) E(EINTR) E(EIO) E(ENXIO) E(E2BIG) E(ENOEXEC) E(EBADF)
    E(ECHILD) E(EAGAIN) E(ENOMEM) E(EACCES) E(EFAULT) E(EBUSY) E(EEXIST) E(EXDEV) E(ENODEV)
    E(ENOTDIR) E(EISDIR) E(EINVAL) E(ENFILE) E(EMFILE) E(ENOTTY) E(ETXTBSY) E(EFBIG)
    E(ENOSPC) E(ESPIPE) E(EROFS) E(EMLINK) E(EPIPE) E(ERANGE) E(ENOSYS) E(ENOTEMPTY)
    E(ELOOP) E(ENOKEY) E(EOPNOTSUPP) E(ENETUNREACH) E(ECONNREFUSED) E(EHOSTUNREACH)
    E(ETIMEDOUT) E(EADDRNOTAVAIL) E(EKEYREJECTED)
    E(EDQUOT) E(ENOTCONN) E(EAFNOSUPPORT) E(EPROTONOSUPPORT) E(ESOCKTNOSUPPORT)
    E(EADDRINUSE) E(EPROTOTYPE)
#undef E
  }
  static char buf[32];
  snprintf(buf, sizeof buf, "E%d", e);
  return buf;
}

/* The action's result: 0 or -errno. */
static int rc(long r) { return r < 0 ? -errno : 0; }

static long arg_long(const char *arg, long dflt) { return arg && *arg ? strtol(arg, NULL, 0) : dflt; }

static long i386_syscall(long nr, long a, long b, long c) {
  long ret;
  __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
  return ret;
}

static int do_clone(unsigned long flags) {
  long pid = syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) _exit(0);
  if (pid < 0) return -errno;
  waitpid((pid_t) pid, NULL, 0);
  return 0;
}

static int do_clone3(uint64_t flags) {
  struct clone_args a;
  memset(&a, 0, sizeof a);
  a.flags = flags;
  a.exit_signal = SIGCHLD;
  long pid = syscall(SYS_clone3, &a, sizeof a);
  if (pid == 0) _exit(0);
  if (pid < 0) return -errno;
  waitpid((pid_t) pid, NULL, 0);
  return 0;
}

static int do_fsconfig(bool create_mount) {
  int fd = (int) syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
  if (fd < 0) fd = 0; /* fsopen denied: still try the call under test */
  if (!create_mount)
    return rc(syscall(SYS_fsconfig, fd, FSCONFIG_SET_STRING, "size", "1m", 0));
  syscall(SYS_fsconfig, fd, FSCONFIG_CMD_CREATE, NULL, NULL, 0);
  return rc(syscall(SYS_fsmount, fd, FSMOUNT_CLOEXEC, 0));
}

static int do_perf(void) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.type = PERF_TYPE_SOFTWARE;
  a.size = sizeof a;
  a.config = PERF_COUNT_SW_CPU_CLOCK;
  a.disabled = 1;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  return rc(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
}

static int do_bpf_prog_load(void) {
  struct bpf_insn prog[] = {
    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
    {.code = BPF_JMP | BPF_EXIT},
  };
  union bpf_attr a;
  memset(&a, 0, sizeof a);
  a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
  a.insn_cnt = 2;
  a.insns = (uint64_t) (uintptr_t) prog;
  a.license = (uint64_t) (uintptr_t) "GPL";
  return rc(syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a));
}

static int do_open_by_handle(void) {
  struct {
    struct file_handle h;
    unsigned char buf[128];
  } fh;
  memset(&fh, 0, sizeof fh);
  fh.h.handle_bytes = sizeof fh.buf;
  int mount_id;
  syscall(SYS_name_to_handle_at, AT_FDCWD, "/", &fh.h, &mount_id, 0);
  int mfd = open("/", O_RDONLY | O_DIRECTORY);
  return rc(syscall(SYS_open_by_handle_at, mfd, &fh.h, O_RDONLY));
}

/* One byte to an unmapped address of another process: the kernel checks
 * ptrace access first, then fails the copy with EFAULT; nothing is written. */
static int do_process_vm_writev(pid_t pid) {
  char b = 'x';
  struct iovec local = {&b, 1}, remote = {(void *) 8, 1};
  long n = syscall(SYS_process_vm_writev, pid, &local, 1, &remote, 1, 0);
  if (n < 0) return -errno;
  return n == 0 ? -EFAULT : 0;
}

static int do_ptrace_attach(pid_t pid) {
  if (ptrace(PTRACE_ATTACH, pid, 0, 0) < 0) return -errno;
  waitpid(pid, NULL, __WALL);
  ptrace(PTRACE_DETACH, pid, 0, 0);
  return 0;
}

static int do_io_uring(void) {
  unsigned char params[120]; /* struct io_uring_params */
  memset(params, 0, sizeof params);
  return rc(syscall(SYS_io_uring_setup, 1, params));
}

/* TIOCSTI on a fresh pty of our own (/dev/ptmx): the sandbox's own
 * terminal, where only the filter can stop it. */
static int do_tiocsti_pty(unsigned long high) {
  int m = posix_openpt(O_RDWR | O_NOCTTY);
  if (m < 0) return -errno;
  if (grantpt(m) < 0 || unlockpt(m) < 0) return -errno;
  int s = open(ptsname(m), O_RDWR | O_NOCTTY);
  if (s < 0) return -errno;
  char c = 'x';
  return rc(syscall(SYS_ioctl, s, (unsigned long) TIOCSTI | high, &c));
}

static int do_tiocsti_fd(int fd, unsigned long high) {
  char c = 'x';
  return rc(syscall(SYS_ioctl, fd, (unsigned long) TIOCSTI | high, &c));
}

static int open_tty(const char *arg) {
  if (arg && strcmp(arg, "tty") == 0) {
    int fd = open("/dev/tty", O_RDWR | O_NOCTTY);
    return fd < 0 ? -errno : fd;
  }
  return (int) arg_long(arg, 0);
}

static int do_mknod(const char *path) {
  if (mknod(path, S_IFCHR | 0600, makedev(1, 3)) < 0) return -errno;
  unlink(path);
  return 0;
}

static int result_fd = -1;

/* Split "A,B" into two strings (modifies arg). */
static char *second(char *arg) {
  char *c = arg ? strchr(arg, ',') : NULL;
  if (!c) return NULL;
  *c = '\0';
  return c + 1;
}

static int do_read(const char *path, char *text, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  char buf[64];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0) return -errno;
  snprintf(text, len, "%s", n == 0 ? "EMPTY" : "OK");
  return 0;
}

static int do_write(char *arg) {
  char *data = second(arg);
  int fd = open(arg, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  const char *d = data ? data : "x";
  return rc(write(fd, d, strlen(d)));
}

static int do_connect(char *arg) {
  char *port = second(arg);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t) arg_long(port, 80))};
  if (inet_pton(AF_INET, arg, &sa.sin_addr) != 1) return -EINVAL;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  return rc(connect(fd, (struct sockaddr *) &sa, sizeof sa));
}

/* connect_unix:PATH — a stream connection to the unix socket at PATH
 * (an approval hook's socket must be out of a sandbox's reach). */
static int do_connect_unix(const char *path) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (!path || strlen(path) >= sizeof sa.sun_path) return -EINVAL;
  strcpy(sa.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  return rc(connect(fd, (struct sockaddr *) &sa, sizeof sa));
}

/* Fork until fork fails; report the errno and how many forks succeeded.
 * The children wait in pause(); with "hold" they are left running (the
 * caller kills the sandbox), else the whole group is killed. */
static int do_forkbomb(bool hold, char *text, size_t len) {
  setpgid(0, 0);
  int n = 0, e = 0;
  for (;;) {
    pid_t p = fork();
    if (p == 0) {
      for (;;) pause();
    }
    if (p < 0) {
      e = errno;
      break;
    }
    if (++n > 100000) break;
  }
  snprintf(text, len, "%s:%d", e ? errno_name(e) : "NOLIMIT", n);
  if (!hold) {
    signal(SIGTERM, SIG_IGN);
    kill(0, SIGKILL);
  }
  return 0;
}

/* Fill a file until write fails: "ERRNO:MiB written". */
static int do_fill(const char *path, char *text, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -errno;
  static char buf[1 << 16];
  memset(buf, 'f', sizeof buf);
  unsigned long long total = 0;
  int e = 0;
  for (;;) {
    ssize_t w = write(fd, buf, sizeof buf);
    if (w < 0) { e = errno; break; }
    total += (unsigned long long) w;
    if (total > (4ull << 30)) break;
  }
  snprintf(text, len, "%s:%llu", e ? errno_name(e) : "NOLIMIT", total >> 20);
  return 0;
}

/* Touch MiB megabytes of anonymous memory; prints "OK" if it survives. */
static int do_alloc(long mib) {
  for (long i = 0; i < mib; i++) {
    char *p = malloc(1 << 20);
    if (!p) return -ENOMEM;
    memset(p, (int) i, 1 << 20);
  }
  return 0;
}

/* "euid=N capeff=HEX" of this process (after an exec of a set-id or
 * file-capability binary). */
static int do_whoami(char *text, size_t len) {
  unsigned long long capeff = ~0ull;
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "CapEff: %llx", &capeff) == 1) break;
  if (f) fclose(f);
  snprintf(text, len, "euid=%u,capeff=%llx", (unsigned) geteuid(), capeff);
  return 0;
}

/* fds >= 3 other than the probe's own: "none" or "N->target;..." */
static int do_fds(const char *pid, char *text, size_t len) {
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%s/fd", pid && *pid ? pid : "self");
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return -errno;
  DIR *d = fdopendir(dfd);
  struct dirent *de;
  size_t used = 0;
  text[0] = '\0';
  while ((de = readdir(d))) {
    int fd = atoi(de->d_name);
    if (de->d_name[0] == '.' || fd < 3) continue;
    if ((!pid || !*pid || !strcmp(pid, "self")) && (fd == dfd || fd == result_fd)) continue;
    char link[PATH_MAX + 32], target[PATH_MAX];
    snprintf(link, sizeof link, "%s/%s", dir, de->d_name);
    ssize_t n = readlinkat(dfd, de->d_name, target, sizeof target - 1);
    target[n > 0 ? n : 0] = '\0';
    int w = snprintf(text + used, len - used, "%d->%s;", fd, target);
    if (w < 0 || (size_t) w >= len - used) break;
    used += (size_t) w;
  }
  closedir(d);
  if (!text[0]) snprintf(text, len, "none");
  return 0;
}

/* Loop over /proc/[0-9]*'s exe for `secs` seconds; try to open each for
 * writing, directly and through an O_PATH fd's /proc/self/fd/N (BL-01).
 * "NONE:<tries>" when no open for writing ever succeeded, else the
 * target of the first one that did. */
static int do_exe_watch(long secs, char *text, size_t len) {
  time_t end = time(NULL) + secs;
  unsigned long tries = 0;
  while (time(NULL) < end) {
    DIR *d = opendir("/proc");
    if (!d) return -errno;
    struct dirent *de;
    while ((de = readdir(d))) {
      if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
      char p[300];
      snprintf(p, sizeof p, "/proc/%s/exe", de->d_name);
      int fd = open(p, O_PATH | O_CLOEXEC);
      if (fd < 0) continue;
      tries++;
      char via[64], target[PATH_MAX];
      snprintf(via, sizeof via, "/proc/self/fd/%d", fd);
      int w = open(via, O_WRONLY | O_CLOEXEC);
      if (w < 0) w = open(p, O_WRONLY | O_CLOEXEC);
      if (w >= 0) {
        ssize_t n = readlink(via, target, sizeof target - 1);
        target[n > 0 ? n : 0] = '\0';
        snprintf(text, len, "WRITABLE:%.200s", target);
        closedir(d);
        return 0;
      }
      close(fd);
    }
    closedir(d);
  }
  snprintf(text, len, "NONE:%lu", tries);
  return 0;
}

/* socket(2) of family `fam` (type SOCK_STREAM unless given), with `high`
 * set in the upper 32 bits of the family argument. */
static int do_socket(const char *arg, unsigned long high, bool pair) {
  char *end = NULL;
  long fam = arg ? strtol(arg, &end, 0) : 0;
  long type = end && *end == ',' ? strtol(end + 1, NULL, 0) : SOCK_STREAM;
  if (pair) {
    int sv[2];
    return rc(syscall(SYS_socketpair, (unsigned long) fam | high, type, 0, sv));
  }
  return rc(syscall(SYS_socket, (unsigned long) fam | high, type, 0));
}

/* AF_VSOCK: bind VMADDR_CID_ANY:PORT and listen (the red team's attack). */
static int do_vsock_listen(long port) {
  int s = socket(AF_VSOCK, SOCK_STREAM, 0);
  if (s < 0) return -errno;
  struct sockaddr_vm sa = {.svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY,
                           .svm_port = (unsigned) port};
  if (bind(s, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(s, 1) < 0) return -errno;
  return 0;
}

static int do_io_setup(void) {
  unsigned long ctx = 0;
  long r = syscall(SYS_io_setup, 1, &ctx);
  if (r < 0) return -errno;
  syscall(SYS_io_destroy, ctx);
  return 0;
}

/* Take one unit of a per-user kernel budget: an inotify instance, a pty
 * (/dev/ptmx) or a queued RT signal (SIGRTMIN, blocked, to ourselves).
 * Returns 0 or -errno; the unit stays held until exit. */
static int take_one(const char *kind, long i) {
  if (!strcmp(kind, "inotify")) return rc(inotify_init1(IN_CLOEXEC));
  if (!strcmp(kind, "pty")) return rc(posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!strcmp(kind, "sigqueue")) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN);
    sigprocmask(SIG_BLOCK, &set, NULL);
    return rc(sigqueue(getpid(), SIGRTMIN, (union sigval){.sival_int = (int) i}));
  }
  return -EINVAL;
}

/* hold:KIND,FILE: take units of KIND until the kernel refuses (at most
 * `cap`), write "ERRNO:count" to FILE (atomically: FILE.tmp, rename), and
 * keep everything held until killed.  Without FILE: print and release. */
static int do_hold(char *arg, char *text, size_t len) {
  char *file = arg ? strchr(arg, ',') : NULL;
  if (file) *file++ = '\0';
  const char *kind = arg ? arg : "";
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {   /* as many fds as the hard limit allows */
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  const long cap = !strcmp(kind, "pty") ? 512 : 200000;
  long n = 0;
  int r = 0;
  while (n < cap && (r = take_one(kind, n)) == 0) n++;
  snprintf(text, len, "%s:%ld", r ? errno_name(-r) : "NOLIMIT", n);
  if (!file) return 0;
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s.tmp", file);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -errno;
  if (write(fd, text, strlen(text)) < 0 || close(fd) < 0 || rename(tmp, file) < 0) return -errno;
  for (;;) pause();
}

/* mkfiles:DIR: empty files DIR/f0, f1, ... until creating one fails:
 * "ERRNO:count" (at most 2,000,000). */
static int do_mkfiles(const char *dir, char *text, size_t len) {
  long n = 0;
  int e = 0;
  for (; n < 2000000; n++) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/f%ld", dir, n);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) { e = errno; break; }
    close(fd);
  }
  snprintf(text, len, "%s:%ld", e ? errno_name(e) : "NOLIMIT", n);
  return 0;
}

static int run_action(const char *name, char *arg, char *text, size_t len) {
  if (!strcmp(name, "socket")) return do_socket(arg, 0, false);
  if (!strcmp(name, "socket_high_bits")) return do_socket(arg, 1UL << 32, false);
  if (!strcmp(name, "socketpair")) return do_socket(arg, 0, true);
  if (!strcmp(name, "vsock_listen")) return do_vsock_listen(arg_long(arg, 5555));
  if (!strcmp(name, "io_setup")) return do_io_setup();
  if (!strcmp(name, "inotify_init1")) return take_one("inotify", 0);
  if (!strcmp(name, "ptmx")) return take_one("pty", 0);
  if (!strcmp(name, "sigqueue_rt")) return take_one("sigqueue", 0);
  if (!strcmp(name, "hold")) return do_hold(arg, text, len);
  if (!strcmp(name, "mkfiles")) return do_mkfiles(arg ? arg : "/tmp", text, len);
  if (!strcmp(name, "create")) return rc(open(arg, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!strcmp(name, "mkdir")) return rc(mkdir(arg, 0755));
  if (!strcmp(name, "read")) return do_read(arg, text, len);
  if (!strcmp(name, "write")) return do_write(arg);
  if (!strcmp(name, "exec")) {
    char *av[] = {arg, NULL};
    execve(arg, av, (char *[]){NULL});
    return -errno;
  }
  if (!strcmp(name, "connect")) return do_connect(arg);
  if (!strcmp(name, "connect_unix")) return do_connect_unix(arg);
  if (!strcmp(name, "forkbomb")) return do_forkbomb(false, text, len);
  if (!strcmp(name, "forkbomb_hold")) return do_forkbomb(true, text, len);
  if (!strcmp(name, "fill")) return do_fill(arg ? arg : "/tmp/fill", text, len);
  if (!strcmp(name, "alloc")) return do_alloc(arg_long(arg, 1024));
  if (!strcmp(name, "whoami")) return do_whoami(text, len);
  if (!strcmp(name, "fds")) return do_fds(arg, text, len);
  if (!strcmp(name, "exe_watch")) return do_exe_watch(arg_long(arg, 5), text, len);
  if (!strcmp(name, "chmod_setuid")) return rc(chmod(arg, 04755));
  if (!strcmp(name, "unshare_user")) return rc(unshare(CLONE_NEWUSER));
  if (!strcmp(name, "unshare_mnt")) return rc(unshare(CLONE_NEWNS));
  if (!strcmp(name, "clone_newuser_newns")) return do_clone(CLONE_NEWUSER | CLONE_NEWNS);
  if (!strcmp(name, "clone3")) return do_clone3(0);
  if (!strcmp(name, "clone3_newuser_newns")) return do_clone3(CLONE_NEWUSER | CLONE_NEWNS);
  if (!strcmp(name, "setns")) {
    int fd = open("/proc/self/ns/uts", O_RDONLY);
    return rc(syscall(SYS_setns, fd, CLONE_NEWUTS));
  }
  if (!strcmp(name, "mount_tmpfs")) return rc(mount("probe", arg ? arg : "/tmp", "tmpfs", 0, "size=1m"));
  if (!strcmp(name, "mount_cgroup")) return rc(mount("cgroup", arg ? arg : "/tmp", "cgroup", 0, "rdma"));
  if (!strcmp(name, "umount2")) return rc(umount2(arg ? arg : "/tmp", MNT_DETACH));
  if (!strcmp(name, "pivot_root")) {
    if (chdir(arg ? arg : "/tmp") < 0) return -errno;
    return rc(syscall(SYS_pivot_root, ".", "."));
  }
  if (!strcmp(name, "fsopen")) return rc(syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC));
  if (!strcmp(name, "fsconfig")) return do_fsconfig(false);
  if (!strcmp(name, "fsmount")) return do_fsconfig(true);
  if (!strcmp(name, "keyctl"))
    return rc(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
  if (!strcmp(name, "add_key"))
    return rc(syscall(SYS_add_key, "user", "an-probe", "v", 1, KEY_SPEC_PROCESS_KEYRING));
  if (!strcmp(name, "request_key"))
    return rc(syscall(SYS_request_key, "user", "an-probe-absent", NULL, KEY_SPEC_PROCESS_KEYRING));
  if (!strcmp(name, "userfaultfd")) return rc(syscall(SYS_userfaultfd, O_CLOEXEC));
  if (!strcmp(name, "userfaultfd_user_mode_only"))
    return rc(syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY));
  if (!strcmp(name, "open_dev_userfaultfd")) return rc(open("/dev/userfaultfd", O_RDWR | O_CLOEXEC));
  if (!strcmp(name, "perf_event_open")) return do_perf();
  if (!strcmp(name, "bpf_prog_load")) return do_bpf_prog_load();
  /* more segments than KEXEC_SEGMENT_MAX (16): EINVAL after the checks */
  if (!strcmp(name, "kexec_load")) return rc(syscall(SYS_kexec_load, 0, 1000, NULL, 0));
  if (!strcmp(name, "finit_module")) return rc(syscall(SYS_finit_module, -1, "", 0));
  if (!strcmp(name, "open_by_handle_at")) return do_open_by_handle();
  if (!strcmp(name, "lookup_dcookie")) {
    char buf[64];
    return rc(syscall(SYS_lookup_dcookie, 0, buf, sizeof buf));
  }
  if (!strcmp(name, "swapon")) return rc(syscall(SYS_swapon, "/nonexistent-an-probe", 0));
  /* magic 0: the kernel answers EINVAL after its CAP_SYS_BOOT check */
  if (!strcmp(name, "reboot")) return rc(syscall(SYS_reboot, 0, 0, 0, NULL));
  if (!strcmp(name, "process_vm_writev")) return do_process_vm_writev((pid_t) arg_long(arg, 1));
  if (!strcmp(name, "ptrace_attach")) return do_ptrace_attach((pid_t) arg_long(arg, 1));
  if (!strcmp(name, "io_uring_setup")) return do_io_uring();
  if (!strcmp(name, "x32_unshare_user")) return rc(syscall(X32_BIT | SYS_unshare, CLONE_NEWUSER));
  if (!strcmp(name, "x32_keyctl"))
    return rc(syscall(X32_BIT | SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
  if (!strcmp(name, "x32_getpid")) return rc(syscall(X32_BIT | SYS_getpid));
  if (!strcmp(name, "i386_unshare_user")) {
    long r = i386_syscall(I386_UNSHARE, CLONE_NEWUSER, 0, 0);
    return r < 0 ? (int) r : 0;
  }
  if (!strcmp(name, "i386_keyctl")) {
    long r = i386_syscall(I386_KEYCTL, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
    return r < 0 ? (int) r : 0;
  }
  if (!strcmp(name, "i386_mount")) {
    long r = i386_syscall(I386_MOUNT, (long) (uintptr_t) "probe", (long) (uintptr_t) "/nonexistent-an-probe",
                          (long) (uintptr_t) "tmpfs");
    return r < 0 ? (int) r : 0;
  }
  if (!strcmp(name, "i386_getpid")) {
    long r = i386_syscall(20, 0, 0, 0);
    return r < 0 ? (int) r : 0;
  }
  if (!strcmp(name, "tiocsti")) {
    int fd = open_tty(arg);
    return fd < 0 ? fd : do_tiocsti_fd(fd, 0);
  }
  if (!strcmp(name, "tiocsti_high_bits")) {
    int fd = open_tty(arg);
    return fd < 0 ? fd : do_tiocsti_fd(fd, 1UL << 32);
  }
  if (!strcmp(name, "tiocsti_own_pty")) return do_tiocsti_pty(0);
  if (!strcmp(name, "tiocsti_own_pty_high_bits")) return do_tiocsti_pty(1UL << 32);
  if (!strcmp(name, "tioclinux")) {
    int fd = open_tty(arg);
    char sub[8] = {3 /* TIOCL_PASTESEL */};
    return fd < 0 ? fd : rc(syscall(SYS_ioctl, fd, TIOCLINUX, sub));
  }
  if (!strcmp(name, "tioclinux_high_bits")) {
    int fd = open_tty(arg);
    char sub[8] = {2 /* TIOCL_SETSEL */};
    return fd < 0 ? fd : rc(syscall(SYS_ioctl, fd, (unsigned long) TIOCLINUX | (1UL << 32), sub));
  }
  if (!strcmp(name, "mknod_char")) return do_mknod(arg ? arg : "/tmp/an-probe-null");
  if (!strcmp(name, "kill9")) return rc(kill((pid_t) arg_long(arg, 1), SIGKILL));
  if (!strcmp(name, "kill0")) return rc(kill((pid_t) arg_long(arg, 1), 0));
  if (!strcmp(name, "sethostname")) return rc(sethostname(arg ? arg : "probe", strlen(arg ? arg : "probe")));
  if (!strcmp(name, "chroot")) return rc(chroot(arg ? arg : "/tmp"));
  if (!strcmp(name, "landlock_abi"))
    return (int) syscall(SYS_landlock_create_ruleset, NULL, 0, 1 /* VERSION */) < 0 ? -errno : 0;
  if (!strcmp(name, "getpid")) return rc(getpid());
  fprintf(stderr, "probe: unknown action %s\n", name);
  return -EINVAL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: probe ACTION[:ARG] ...\n");
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    char *name = argv[i], *arg = strchr(name, ':');
    if (arg) *arg++ = '\0';
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0) return 1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      close(pfd[0]);
      result_fd = pfd[1];
      char text[256] = "";
      int r = run_action(name, arg, text, sizeof text);
      if (!text[0]) snprintf(text, sizeof text, "%s", r == 0 ? "OK" : errno_name(-r));
      ssize_t w = write(pfd[1], text, strlen(text));
      _exit(w > 0 ? 0 : 1);
    }
    close(pfd[1]);
    char text[256];
    ssize_t n = read(pfd[0], text, sizeof text - 1);
    close(pfd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (n > 0) printf("%s %.*s\n", name, (int) n, text);
    else if (WIFSIGNALED(st)) printf("%s SIG%s\n", name, sigabbrev_np(WTERMSIG(st)));
    else if (n == 0 && WIFEXITED(st)) printf("%s EXECED\n", name); /* the CLOEXEC pipe closed by execve */
    else printf("%s NORESULT\n", name);
  }
  return 0;
}
