/* engine/procview.c — the container's own uptime (time namespace offsets)
 * and boot_id (see procview.h; time_namespaces(7), proc(5)). */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include "engine/mount.h"
#include "engine/procview.h"
#include "util/cleanup.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#define BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"

static const char *annotation(const struct an_spec *spec, const char *key) {
  const char *v = NULL;
  for (size_t i = 0; i < spec->n_annotations; i++)
    if (spec->annotations[i].key && !strcmp(spec->annotations[i].key, key))
      v = spec->annotations[i].value ? spec->annotations[i].value : "";
  return v;
}

/* Whether the spec creates (not joins) a time namespace. */
static bool creates_timens(const struct an_spec *spec) {
  for (size_t i = 0; i < spec->linux.n_namespaces; i++)
    if (spec->linux.namespaces[i].clone_flag == CLONE_NEWTIME &&
        (!spec->linux.namespaces[i].path || !spec->linux.namespaces[i].path[0]))
      return true;
  return false;
}

int an_procview_check(const struct an_spec *spec, an_error_t *err) {
  const char *t = annotation(spec, AN_TIMENS_ANNOTATION);
  if (t && strcmp(t, "zero") && strcmp(t, "none"))
    return an_error_set(err, EINVAL, "annotations[\"" AN_TIMENS_ANNOTATION "\"]: unknown value "
                        "\"%.64s\" (want zero or none)", t);
  if (t && !strcmp(t, "zero") && !creates_timens(spec))
    return an_error_set(err, EINVAL, "annotations[\"" AN_TIMENS_ANNOTATION "\"]: zero needs a new "
                        "time namespace (linux.namespaces \"time\" without a path)");
  const char *b = annotation(spec, AN_BOOT_ID_ANNOTATION);
  if (b && strcmp(b, "private") && strcmp(b, "host"))
    return an_error_set(err, EINVAL, "annotations[\"" AN_BOOT_ID_ANNOTATION "\"]: unknown value "
                        "\"%.64s\" (want private or host)", b);
  return 0;
}

bool an_procview_timens_zero(const struct an_spec *spec) {
  const char *t = annotation(spec, AN_TIMENS_ANNOTATION);
  return t && !strcmp(t, "zero") && creates_timens(spec);
}

int an_procview_timens_init(const struct an_spec *spec, an_error_t *err) {
  if (!an_procview_timens_zero(spec)) return 0;
  if (unshare(CLONE_NEWTIME) < 0) return an_error_set(err, errno, "unshare time namespace");
  struct timespec mono, boot;
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_BOOTTIME, &boot);
  /* whole seconds: the clocks start between 0 and 1 s (the kernel refuses
   * offsets that would make them negative) */
  char buf[96];
  int n = snprintf(buf, sizeof buf, "monotonic %lld 0\nboottime %lld 0\n",
                   -(long long) mono.tv_sec, -(long long) boot.tv_sec);
  /* The runtime made the user namespace with the euid of the host id container
   * root maps to (userns.h, an_userns_owner_enter); that euid change made this
   * process non-dumpable, and /proc/self of a non-dumpable process belongs to
   * root, so the open below would be refused (proc(5), PR_SET_DUMPABLE).  It is
   * the container's only process yet: dumpable for the open alone, then back. */
  int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
  if (dumpable == 0 && prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
    return an_error_set(err, errno, "time namespace: PR_SET_DUMPABLE");
  cleanup_close int fd = open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
  int open_errno = errno;
  if (dumpable == 0) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (fd < 0) return an_error_set(err, open_errno, "time namespace: open /proc/self/timens_offsets");
  if (write(fd, buf, (size_t) n) != n)
    return an_error_set(err, errno ? errno : EIO, "time namespace: write /proc/self/timens_offsets");
  cleanup_close int ns = open("/proc/self/ns/time_for_children", O_RDONLY | O_CLOEXEC);
  if (ns < 0) return an_error_set(err, errno, "time namespace: open /proc/self/ns/time_for_children");
  if (setns(ns, CLONE_NEWTIME) < 0) return an_error_set(err, errno, "enter the new time namespace");
  return 0;
}

/* The container's /dev/null, if it really is the null device. */
static int null_mount(int root_fd, int *mnt, an_error_t *err) {
  cleanup_close int null_fd = -1;
  int r = an_mount_resolve(root_fd, "/dev/null", false, false, &null_fd, err);
  if (r < 0) return r;
  struct stat st;
  if (fstat(null_fd, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3))
    return an_error_set(err, ENOENT, "no /dev/null (character device 1:3)");
  return an_mount_clone_fd(null_fd, false, 0, 0, mnt, err);
}

/* A read-only detached tmpfs holding one file "boot_id" with a fresh UUID,
 * and a detached mount of just that file. */
static int boot_id_mount(int *file_mnt, an_error_t *err) {
  char uuid[64];
  cleanup_close int src = open("/proc/sys/kernel/random/uuid", O_RDONLY | O_CLOEXEC);
  if (src < 0) return an_error_set(err, errno, "open /proc/sys/kernel/random/uuid");
  ssize_t n = read(src, uuid, sizeof uuid - 1);
  if (n != 37) return an_error_set(err, n < 0 ? errno : EIO, "read /proc/sys/kernel/random/uuid");
  cleanup_close int fs = -1;
  int r = an_mount_new_fs("tmpfs", "tmpfs", "nr_inodes=2,size=4k,mode=0555", 0, &fs, err);
  if (r < 0) return r;
  int f = openat(fs, "boot_id", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
  if (f < 0) return an_error_set(err, errno, "create boot_id on its tmpfs");
  ssize_t w = write(f, uuid, (size_t) n);
  int e = w == n ? 0 : w < 0 ? errno : EIO;
  close(f);  /* before the read-only switch: an open writer would make it EBUSY */
  if (e) return an_error_set(err, e, "write boot_id");
  struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                     MOUNT_ATTR_NOEXEC};
  if (syscall(SYS_mount_setattr, fs, "", AT_EMPTY_PATH, &a, sizeof a) < 0)
    return an_error_set(err, errno, "make boot_id's tmpfs read-only");
  int m = (int) syscall(SYS_open_tree, fs, "boot_id", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (m < 0) return an_error_set(err, errno, "open_tree boot_id");
  *file_mnt = m;
  return 0;
}

int an_procview_apply(const struct an_spec *spec, an_error_t *err) {
  const char *b = annotation(spec, AN_BOOT_ID_ANNOTATION);
  if (!b || strcmp(b, "private")) return 0;
  cleanup_close int root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return an_error_set(err, errno, "open /");
  cleanup_close int target = -1;
  int r = an_mount_resolve(root_fd, BOOT_ID_PATH, false, false, &target, err);
  if (r == -ENOENT) {
    an_error_free(err);
    return 0;           /* no such file on this kernel: nothing of the host's to hide */
  }
  if (r < 0) return an_error_prefix(err, BOOT_ID_PATH);
  cleanup_close int mnt = -1;
  r = boot_id_mount(&mnt, err);
  if (r == -EINVAL) {
    /* a kernel that cannot clone from a detached tree: mask it instead */
    an_error_free(err);
    r = null_mount(root_fd, &mnt, err);
  }
  if (r < 0) return an_error_prefix(err, BOOT_ID_PATH);
  r = an_mount_attach(mnt, target, err);
  if (r < 0) return an_error_prefix(err, BOOT_ID_PATH);
  return 0;
}
