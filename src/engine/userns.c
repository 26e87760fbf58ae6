/* engine/userns.c — write uid/gid maps; make user namespaces for idmapped
 * mounts (see userns.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine/userns.h"
#include "util/cleanup.h"

static int write_map(pid_t pid, const char *file, const struct an_spec_id_mapping *m, size_t n,
                     an_error_t *err) {
  char path[64], buf[4096];
  size_t len = 0;
  for (size_t i = 0; i < n; i++) {
    int k = snprintf(buf + len, sizeof buf - len, "%" PRIu32 " %" PRIu32 " %" PRIu32 "\n",
                     m[i].container_id, m[i].host_id, m[i].size);
    if (k < 0 || (size_t) k >= sizeof buf - len)
      return an_error_set(err, EINVAL, "%s: too many mappings", file);
    len += k;
  }
  snprintf(path, sizeof path, "/proc/%d/%s", pid, file);
  cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return an_error_set(err, errno, "open %s", path);
  ssize_t w = write(fd, buf, len);
  if (w < 0) return an_error_set(err, errno, "write %s", path);
  if ((size_t) w != len) return an_error_set(err, EIO, "write %s: short write", path);
  return 0;
}

int an_userns_write_maps(pid_t pid, const struct an_spec_id_mapping *uids, size_t n_uids,
                         const struct an_spec_id_mapping *gids, size_t n_gids, an_error_t *err) {
  if (n_uids == 0)
    return an_error_set(err, EINVAL,
                        "linux.uidMappings: a new user namespace needs uid mappings");
  if (n_gids == 0)
    return an_error_set(err, EINVAL,
                        "linux.gidMappings: a new user namespace needs gid mappings");
  int r = write_map(pid, "gid_map", gids, n_gids, err);
  if (r < 0) return r;
  return write_map(pid, "uid_map", uids, n_uids, err);
}

uid_t an_userns_host_id(const struct an_spec_id_mapping *m, size_t n, uid_t id) {
  for (size_t i = 0; i < n; i++)
    if (id >= m[i].container_id && id - m[i].container_id < m[i].size)
      return m[i].host_id + (id - m[i].container_id);
  return (uid_t) -1;
}

bool an_userns_maps_root(const struct an_spec_linux *l) {
  return an_userns_host_id(l->uid_mappings, l->n_uid_mappings, 0) != (uid_t) -1 &&
         an_userns_host_id(l->gid_mappings, l->n_gid_mappings, 0) != (uid_t) -1;
}

int an_userns_owner_enter(const struct an_spec_linux *l, struct an_userns_owner *o,
                          an_error_t *err) {
  *o = (struct an_userns_owner){0};
  uid_t uid = an_userns_host_id(l->uid_mappings, l->n_uid_mappings, 0);
  gid_t gid = (gid_t) an_userns_host_id(l->gid_mappings, l->n_gid_mappings, 0);
  if (geteuid() != 0 || uid == (uid_t) -1 || uid == 0 || gid == (gid_t) -1 || gid == 0) return 0;
  int bits = prctl(PR_GET_SECUREBITS);
  if (bits < 0) return an_error_set(err, errno, "user namespace owner: PR_GET_SECUREBITS");
  if (prctl(PR_SET_SECUREBITS, (unsigned long) bits | SECBIT_NO_SETUID_FIXUP) < 0)
    return an_error_set(err, errno, "user namespace owner: PR_SET_SECUREBITS");
  if (syscall(SYS_setresgid, -1, gid, -1) < 0) {
    int e = errno;
    prctl(PR_SET_SECUREBITS, (unsigned long) bits);
    return an_error_set(err, e, "user namespace owner: setresgid(-1, %u, -1)", (unsigned) gid);
  }
  if (syscall(SYS_setresuid, -1, uid, -1) < 0) {
    int e = errno;
    syscall(SYS_setresgid, -1, 0, -1);
    prctl(PR_SET_SECUREBITS, (unsigned long) bits);
    return an_error_set(err, e, "user namespace owner: setresuid(-1, %u, -1)", (unsigned) uid);
  }
  o->switched = true;
  o->securebits = bits;
  return 0;
}

void an_userns_owner_leave(struct an_userns_owner *o) {
  if (!o->switched) return;
  /* Back to euid/egid 0: the real and saved ids are still 0, so these
   * cannot fail for lack of privilege. */
  if (syscall(SYS_setresuid, -1, 0, -1) < 0 || syscall(SYS_setresgid, -1, 0, -1) < 0) abort();
  prctl(PR_SET_SECUREBITS, (unsigned long) o->securebits);
  o->switched = false;
}

int an_userns_for_idmap(const struct an_spec_id_mapping *uids, size_t n_uids,
                        const struct an_spec_id_mapping *gids, size_t n_gids, int *out,
                        an_error_t *err) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) < 0) return an_error_set(err, errno, "idmap: pipe");
  /* The child only unshares and then waits for the pipe to close. */
  pid_t pid = (pid_t) syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
  if (pid < 0) {
    int e = errno;
    close(pipefd[0]);
    close(pipefd[1]);
    return an_error_set(err, e, "idmap: clone user namespace");
  }
  if (pid == 0) {
    char c;
    close(pipefd[1]);
    (void) !read(pipefd[0], &c, 1);
    _exit(0);
  }
  close(pipefd[0]);
  int ret = an_userns_write_maps(pid, uids, n_uids, gids, n_gids, err);
  if (ret >= 0) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/user", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) ret = an_error_set(err, errno, "idmap: open %s", path);
    else *out = fd;
  }
  close(pipefd[1]);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
  return ret;
}
