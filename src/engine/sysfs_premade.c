/* engine/sysfs_premade.c — a sysfs instance for a container that joins a
 * network namespace its user namespace does not own (see mount.h
 * an_mount_prepare_sysfs).  Mounting sysfs needs CAP_SYS_ADMIN over the
 * owner of the mounter's netns; inside such a container that fails, and
 * the fallback (runc's) is a read-only recursive bind of the host's /sys:
 * the host's whole cgroup v1 tree (every sandbox's cgroups and usage), its
 * network interfaces, debugfs, securityfs and the rest of its submounts.
 * Made here instead, by the parent (still root in the initial user
 * namespace), on a thread that joined the container's netns, so that the
 * instance shows that netns; the container only attaches it. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>
#include "engine/mount.h"
#include "util/cleanup.h"

struct sysfs_job {
  const char *netns_path;
  int fd, ret;
  an_error_t err;
};

static void *sysfs_thread(void *arg) {
  struct sysfs_job *j = arg;
  cleanup_close int ns = open(j->netns_path, O_RDONLY | O_CLOEXEC);
  if (ns < 0) {
    j->ret = an_error_set(&j->err, errno, "sysfs for netns %s: open", j->netns_path);
    return NULL;
  }
  /* only this thread moves: CLONE_NEWNET is per task */
  if (setns(ns, CLONE_NEWNET) < 0) {
    j->ret = an_error_set(&j->err, errno, "sysfs for netns %s: setns", j->netns_path);
    return NULL;
  }
  /* read-only, nosuid, nodev, noexec whatever the entry asks: the
   * container cannot change a mount its parent made, and has no business
   * writing a netns's sysfs it holds no capability over */
  j->ret = an_mount_new_fs("sysfs", "sysfs", NULL,
                           MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, &j->fd,
                           &j->err);
  return NULL;
}

int an_mount_prepare_sysfs(const char *netns_path, int *mnt_fd, an_error_t *err) {
  struct sysfs_job j = {.netns_path = netns_path, .fd = -1};
  pthread_t t;
  int e = pthread_create(&t, NULL, sysfs_thread, &j);
  if (e) return an_error_set(err, e, "sysfs for netns %s: start a thread", netns_path);
  pthread_join(t, NULL);
  if (j.ret < 0) {
    if (err && !*err) *err = j.err;
    else an_error_free(&j.err);
    return j.ret;
  }
  *mnt_fd = j.fd;
  return 0;
}
