/* engine/sysctl.c — namespaced sysctls, validated and written by fd (see
 * sysctl.h; sysctl(8), proc(5) /proc/sys). */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "engine/sysctl.h"
#include "util/cleanup.h"

static bool starts(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

int an_sysctl_validate(const struct an_spec_linux *l, int ns_flags, an_error_t *err) {
  for (size_t i = 0; i < l->n_sysctl; i++) {
    const char *k = l->sysctl[i].key;
    int need = 0;
    if (starts(k, "kernel.msg") || strcmp(k, "kernel.sem") == 0 || starts(k, "kernel.shm") ||
        starts(k, "fs.mqueue."))
      need = CLONE_NEWIPC;
    else if (starts(k, "net."))
      need = CLONE_NEWNET;
    else if (strcmp(k, "kernel.hostname") == 0 || strcmp(k, "kernel.domainname") == 0)
      need = CLONE_NEWUTS;
    else if (starts(k, "user.max_"))   /* per-user-namespace limits, user_namespaces(7) */
      need = CLONE_NEWUSER;
    if (!need)
      return an_error_set(err, EINVAL, "linux.sysctl.%s: not a namespaced sysctl", k);
    if (!(ns_flags & need))
      return an_error_set(err, EINVAL, "linux.sysctl.%s: the container shares this namespace "
                          "with the host", k);
    if (strstr(k, "..") || strchr(k, '/') == k)
      return an_error_set(err, EINVAL, "linux.sysctl.%s: bad key", k);
  }
  return 0;
}

int an_sysctl_apply(const struct an_spec_linux *l, an_error_t *err) {
  if (l->n_sysctl == 0) return 0;
  cleanup_close int proc = open("/proc/sys", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (proc < 0) return an_error_set(err, errno, "linux.sysctl: open /proc/sys");
  struct statfs sf;
  if (fstatfs(proc, &sf) < 0) return an_error_set(err, errno, "linux.sysctl: statfs /proc/sys");
  if (sf.f_type != PROC_SUPER_MAGIC)
    return an_error_set(err, EXDEV, "linux.sysctl: /proc/sys is not procfs");
  for (size_t i = 0; i < l->n_sysctl; i++) {
    char rel[512];
    if (snprintf(rel, sizeof rel, "%s", l->sysctl[i].key) >= (int) sizeof rel)
      return an_error_set(err, ENAMETOOLONG, "linux.sysctl.%s", l->sysctl[i].key);
    for (char *p = rel; *p; p++)
      if (*p == '.') *p = '/';
    struct open_how how = {.flags = O_WRONLY | O_CLOEXEC,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
                                      RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
    cleanup_close int fd = (int) syscall(SYS_openat2, proc, rel, &how, sizeof how);
    if (fd < 0) return an_error_set(err, errno, "linux.sysctl.%s: open", l->sysctl[i].key);
    const char *v = l->sysctl[i].value ? l->sysctl[i].value : "";
    if (write(fd, v, strlen(v)) < 0)
      return an_error_set(err, errno, "linux.sysctl.%s: write \"%s\"", l->sysctl[i].key, v);
  }
  return 0;
}
