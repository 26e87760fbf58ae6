/* engine/namespaces.c — plan which namespaces to create and which to join
 * (see namespaces.h; setns(2), namespaces(7), ioctl_ns(2)). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <linux/nsfs.h>
#include <unistd.h>
#include "engine/namespaces.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

const char *an_ns_name(int f) {
  switch (f) {
  case CLONE_NEWUSER: return "user";
  case CLONE_NEWNS: return "mnt";
  case CLONE_NEWPID: return "pid";
  case CLONE_NEWNET: return "net";
  case CLONE_NEWIPC: return "ipc";
  case CLONE_NEWUTS: return "uts";
  case CLONE_NEWCGROUP: return "cgroup";
  case CLONE_NEWTIME: return "time";
  default: return "?";
  }
}

void an_ns_plan_close(struct an_ns_plan *p) {
  if (p->userns_fd >= 0) close(p->userns_fd);
  if (p->pidns_fd >= 0) close(p->pidns_fd);
  if (p->timens_fd >= 0) close(p->timens_fd);
  if (p->netns_fd >= 0) close(p->netns_fd);
  for (int i = 0; i < p->n_join; i++) close(p->join_fd[i]);
  p->userns_fd = p->pidns_fd = p->timens_fd = p->netns_fd = -1;
  p->n_join = 0;
}

int an_ns_plan_make(const struct an_spec_linux *l, struct an_ns_plan *p, an_error_t *err) {
  *p = (struct an_ns_plan){.userns_fd = -1, .pidns_fd = -1, .timens_fd = -1, .netns_fd = -1};
  int ret = 0;
  for (size_t i = 0; i < l->n_namespaces; i++) {
    const struct an_spec_namespace *ns = &l->namespaces[i];
    int f = ns->clone_flag;
    if (p->all_flags & f) {
      ret = an_error_set(err, EINVAL, "linux.namespaces[%zu]: namespace \"%s\" given twice", i,
                         an_ns_name(f));
      goto fail;
    }
    p->all_flags |= f;
    if (!ns->path || !ns->path[0]) {
      if (f == CLONE_NEWCGROUP) p->unshare_cgroupns = true;
      else p->clone_flags |= f;
      continue;
    }
    int fd = open(ns->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      ret = an_error_set(err, errno, "linux.namespaces[%zu]: open %s namespace %s", i,
                         an_ns_name(f), ns->path);
      goto fail;
    }
    int type = ioctl(fd, NS_GET_NSTYPE);
    if (type != f) {
      close(fd);
      ret = an_error_set(err, EINVAL, "linux.namespaces[%zu]: %s is not a %s namespace", i,
                         ns->path, an_ns_name(f));
      goto fail;
    }
    if (f == CLONE_NEWUSER) p->userns_fd = fd;
    else if (f == CLONE_NEWPID) p->pidns_fd = fd;
    else if (f == CLONE_NEWTIME) p->timens_fd = fd;
    else if (f == CLONE_NEWNET) p->netns_fd = fd;
    else {
      p->join_fd[p->n_join] = fd;
      p->join_flag[p->n_join++] = f;
    }
  }
  return 0;
fail:
  an_ns_plan_close(p);
  return ret;
}

int an_ns_join_user(const struct an_ns_plan *p, an_error_t *err) {
  if (p->userns_fd >= 0 && setns(p->userns_fd, CLONE_NEWUSER) < 0)
    return an_error_set(err, errno, "join user namespace");
  return 0;
}

int an_ns_join_others(const struct an_ns_plan *p, an_error_t *err) {
  for (int i = 0; i < p->n_join; i++)
    if (setns(p->join_fd[i], p->join_flag[i]) < 0)
      return an_error_set(err, errno, "join %s namespace", an_ns_name(p->join_flag[i]));
  return 0;
}
