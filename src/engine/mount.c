/* engine/mount.c — mounts[] entries by file descriptor (see mount.h;
 * openat2(2), open_tree(2), fsopen(2), fsconfig(2), fsmount(2),
 * mount_setattr(2), move_mount(2)). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "engine/cgroup_view.h"
#include "engine/mount.h"
#include "util/cleanup.h"

#define AN_RESOLVE_STRICT (RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

static int openat2_path(int dirfd, const char *path, uint64_t resolve) {
  struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = resolve};
  int fd;
  do fd = (int) syscall(SYS_openat2, dirfd, path, &how, sizeof how);
  while (fd < 0 && errno == EAGAIN);
  return fd;
}

/* --- options -------------------------------------------------------------- */

struct opt_entry {
  const char *name;
  uint64_t set, clr;     /* MOUNT_ATTR_* */
  uint64_t propagation;
  bool bind, recursive, idmap, ignore;
};

static const struct opt_entry opt_table[] = {
  {"defaults", 0, 0, 0, false, false, false, true},
  {"rw", 0, MOUNT_ATTR_RDONLY, 0, false, false, false, false},
  {"ro", MOUNT_ATTR_RDONLY, 0, 0, false, false, false, false},
  {"suid", 0, MOUNT_ATTR_NOSUID, 0, false, false, false, false},
  {"nosuid", MOUNT_ATTR_NOSUID, 0, 0, false, false, false, false},
  {"dev", 0, MOUNT_ATTR_NODEV, 0, false, false, false, false},
  {"nodev", MOUNT_ATTR_NODEV, 0, 0, false, false, false, false},
  {"exec", 0, MOUNT_ATTR_NOEXEC, 0, false, false, false, false},
  {"noexec", MOUNT_ATTR_NOEXEC, 0, 0, false, false, false, false},
  {"relatime", MOUNT_ATTR_RELATIME, MOUNT_ATTR__ATIME, 0, false, false, false, false},
  {"noatime", MOUNT_ATTR_NOATIME, MOUNT_ATTR__ATIME, 0, false, false, false, false},
  {"strictatime", MOUNT_ATTR_STRICTATIME, MOUNT_ATTR__ATIME, 0, false, false, false, false},
  {"atime", 0, 0, 0, false, false, false, true},
  {"nodiratime", MOUNT_ATTR_NODIRATIME, 0, 0, false, false, false, false},
  {"diratime", 0, MOUNT_ATTR_NODIRATIME, 0, false, false, false, false},
  {"nosymfollow", MOUNT_ATTR_NOSYMFOLLOW, 0, 0, false, false, false, false},
  {"symfollow", 0, MOUNT_ATTR_NOSYMFOLLOW, 0, false, false, false, false},
  {"bind", 0, 0, 0, true, false, false, false},
  {"rbind", 0, 0, 0, true, true, false, false},
  {"private", 0, 0, MS_PRIVATE, false, false, false, false},
  {"rprivate", 0, 0, MS_PRIVATE, false, false, false, false},
  {"shared", 0, 0, MS_SHARED, false, false, false, false},
  {"rshared", 0, 0, MS_SHARED, false, false, false, false},
  {"slave", 0, 0, MS_SLAVE, false, false, false, false},
  {"rslave", 0, 0, MS_SLAVE, false, false, false, false},
  {"unbindable", 0, 0, MS_UNBINDABLE, false, false, false, false},
  {"runbindable", 0, 0, MS_UNBINDABLE, false, false, false, false},
  {"idmap", 0, 0, 0, false, false, true, false},
  {"ridmap", 0, 0, 0, false, true, true, false},
  /* accepted and without effect here, as in runc/crun */
  {"tmpcopyup", 0, 0, 0, false, false, false, true},
  {"remount", 0, 0, 0, false, false, false, true},
  {"async", 0, 0, 0, false, false, false, true},
  {"nomand", 0, 0, 0, false, false, false, true},
  {"loud", 0, 0, 0, false, false, false, true},
};

int an_mount_options_parse(char *const *options, struct an_mount_options *o, an_error_t *err) {
  memset(o, 0, sizeof *o);
  size_t cap = 0, len = 0;
  for (size_t i = 0; options && options[i]; i++) {
    const char *opt = options[i];
    const struct opt_entry *e = NULL;
    for (size_t k = 0; k < sizeof opt_table / sizeof opt_table[0]; k++)
      if (strcmp(opt_table[k].name, opt) == 0) { e = &opt_table[k]; break; }
    if (e) {
      if (e->ignore) continue;
      o->attr_clr |= e->clr;
      o->attr_set = (o->attr_set & ~e->clr) | e->set;
      if (e->set & MOUNT_ATTR_RDONLY) o->attr_clr &= ~(uint64_t) MOUNT_ATTR_RDONLY;
      if (e->propagation) o->propagation = e->propagation;
      if (e->bind) o->bind = true;
      if (e->recursive) o->recursive = true;
      if (e->idmap) o->idmap = true;
      continue;
    }
    size_t l = strlen(opt);
    if (len + l + 2 > cap) {
      cap = (len + l + 2) * 2;
      char *d = realloc(o->data, cap);
      if (!d) { an_mount_options_free(o); return an_error_set(err, ENOMEM, "mount options"); }
      o->data = d;
    }
    if (len) o->data[len++] = ',';
    memcpy(o->data + len, opt, l + 1);
    len += l;
  }
  return 0;
}

void an_mount_options_free(struct an_mount_options *o) {
  free(o->data);
  o->data = NULL;
}

/* --- resolving targets ---------------------------------------------------- */

int an_mount_resolve(int root_fd, const char *path, bool create, bool as_file, int *out,
                     an_error_t *err) {
  if (!path || path[0] != '/') return an_error_set(err, EINVAL, "%s: not an absolute path", path);
  /* Split into the parent and the last component. */
  char parent[PATH_MAX];
  size_t n = strlen(path);
  if (n >= sizeof parent) return an_error_set(err, ENAMETOOLONG, "resolve %s", path);
  memcpy(parent, path, n + 1);
  while (n > 1 && parent[n - 1] == '/') parent[--n] = '\0';
  if (strcmp(parent, "/") == 0) {
    int fd = openat2_path(root_fd, "/", AN_RESOLVE_STRICT);
    if (fd < 0) return an_error_set(err, errno, "resolve %s", path);
    *out = fd;
    return 0;
  }
  char *slash = strrchr(parent, '/');
  char base[NAME_MAX + 1];
  if (strlen(slash + 1) > NAME_MAX) return an_error_set(err, ENAMETOOLONG, "resolve %s", path);
  strcpy(base, slash + 1);
  if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
    return an_error_set(err, EINVAL, "resolve %s: bad last component", path);
  if (slash == parent) strcpy(parent, "/");   /* the parent is the root */
  else *slash = '\0';

  /* The parent: symlinks followed, inside the root (an image's /sbin ->
   * usr/sbin, /var/run -> /run), as runc and crun resolve targets; never
   * through a magic link, never outside the root. */
  cleanup_close int pfd = openat2_path(root_fd, parent, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
  if (pfd < 0) {
    if (errno != ENOENT || !create) return an_error_set(err, errno, "resolve %s", path);
    int r = an_mount_resolve(root_fd, parent, true, false, &pfd, err);
    if (r < 0) return r;
  }
  /* The last component: never a symlink (BL-20: a name swapped for a link
   * while we look is refused, not followed). */
  const uint64_t last = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int fd = openat2_path(pfd, base, last);
  if (fd >= 0) { *out = fd; return 0; }
  if (errno != ENOENT || !create) return an_error_set(err, errno, "resolve %s", path);
  if (as_file) {
    int f = openat(pfd, base, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (f < 0 && errno != EEXIST) return an_error_set(err, errno, "create %s", path);
    if (f >= 0) close(f);
  } else if (mkdirat(pfd, base, 0755) < 0 && errno != EEXIST) {
    return an_error_set(err, errno, "mkdir %s", path);
  }
  /* Reopen below the parent: the new name must not have been swapped for a symlink. */
  fd = openat2_path(pfd, base, last);
  if (fd < 0) return an_error_set(err, errno, "resolve %s", path);
  *out = fd;
  return 0;
}

/* --- making mounts -------------------------------------------------------- */

static int setattr_fd(int mnt_fd, bool recursive, uint64_t set, uint64_t clr, uint64_t propagation,
                      int userns_fd) {
  struct mount_attr a = {.attr_set = set, .attr_clr = clr, .propagation = propagation};
  if (userns_fd >= 0) {
    a.attr_set |= MOUNT_ATTR_IDMAP;
    a.userns_fd = (uint64_t) userns_fd;
  }
  if (!a.attr_set && !a.attr_clr && !a.propagation) return 0;
  return mount_setattr(mnt_fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &a, sizeof a);
}

int an_mount_clone_fd(int fd, bool recursive, uint64_t set, uint64_t clr, int *mnt_fd,
                      an_error_t *err) {
  int m = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
                    (recursive ? AT_RECURSIVE : 0));
  if (m < 0) return an_error_set(err, errno, "open_tree");
  if (setattr_fd(m, recursive, set, clr, 0, -1) < 0) {
    int e = errno;
    close(m);
    return an_error_set(err, e, "mount_setattr");
  }
  *mnt_fd = m;
  return 0;
}

/* Append the fs context's logged reason (if any) to an error. */
static int fs_error(int fsfd, an_error_t *err, int e, const char *what, const char *type,
                    const char *key) {
  char log[256] = "";
  if (fsfd >= 0) {
    ssize_t n = read(fsfd, log, sizeof log - 1);
    log[n > 0 ? n : 0] = '\0';
    if (n > 0 && log[n - 1] == '\n') log[n - 1] = '\0';
  }
  if (log[0])
    return an_error_set(err, e, "%s %s%s%s (%s)", what, type, key ? " " : "", key ? key : "",
                        log[0] && log[1] == ' ' ? log + 2 : log);
  return an_error_set(err, e, "%s %s%s%s", what, type, key ? " " : "", key ? key : "");
}

int an_mount_new_fs(const char *type, const char *source, const char *data, uint64_t attrs,
                    int *mnt_fd, an_error_t *err) {
  cleanup_close int fsfd = fsopen(type, FSOPEN_CLOEXEC);
  if (fsfd < 0) return an_error_set(err, errno, "fsopen %s", type);
  if (source && fsconfig(fsfd, FSCONFIG_SET_STRING, "source", source, 0) < 0)
    return fs_error(fsfd, err, errno, "fsconfig", type, "source");
  if (data && *data) {
    cleanup_free char *copy = strdup(data);
    if (!copy) return an_error_set(err, ENOMEM, "fsconfig %s", type);
    char *save = NULL;
    for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
      char *eq = strchr(kv, '=');
      int r;
      if (eq) {
        *eq = '\0';
        r = fsconfig(fsfd, FSCONFIG_SET_STRING, kv, eq + 1, 0);
      } else {
        r = fsconfig(fsfd, FSCONFIG_SET_FLAG, kv, NULL, 0);
      }
      if (r < 0) return fs_error(fsfd, err, errno, "fsconfig", type, kv);
    }
  }
  if (fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
    return fs_error(fsfd, err, errno, "create", type, NULL);
  int m = fsmount(fsfd, FSMOUNT_CLOEXEC, (unsigned) attrs);
  if (m < 0) return fs_error(fsfd, err, errno, "fsmount", type, NULL);
  *mnt_fd = m;
  return 0;
}

int an_mount_attach(int mnt_fd, int target_fd, an_error_t *err) {
  if (move_mount(mnt_fd, "", target_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    return an_error_set(err, errno, "move_mount");
  return 0;
}

static bool is_type(const char *t, const char *want) { return t && strcmp(t, want) == 0; }

/* Remove "gid=N" from a comma list in place (devpts in a user namespace
 * where gid N is not mapped: the kernel answers EINVAL). */
static void drop_gid_option(char *data) {
  if (!data) return;
  char *out = data, *save = NULL;
  cleanup_free char *copy = strdup(data);
  if (!copy) return;
  bool first = true;
  *out = '\0';
  for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
    if (strncmp(kv, "gid=", 4) == 0) continue;
    if (!first) strcat(out, ",");
    strcat(out, kv);
    first = false;
  }
}

static int host_bind(const char *source, const char *bundle, bool recursive, int *mnt_fd,
                     struct stat *st, an_error_t *err) {
  char path[PATH_MAX];
  if (source[0] == '/' || !bundle) snprintf(path, sizeof path, "%s", source);
  else snprintf(path, sizeof path, "%s/%s", bundle, source);
  int m = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
                    (recursive ? AT_RECURSIVE : 0));
  if (m < 0) return an_error_set(err, errno, "open_tree %s", path);
  if (fstat(m, st) < 0) {
    int e = errno;
    close(m);
    return an_error_set(err, e, "stat %s", path);
  }
  *mnt_fd = m;
  return 0;
}

int an_mount_prepare_idmapped(const struct an_spec_mount *m, const char *bundle, int userns_fd,
                              int *mnt_fd, an_error_t *err) {
  struct an_mount_options o;
  int ret = an_mount_options_parse(m->options, &o, err);
  if (ret < 0) return ret;
  const char *type = m->type ? m->type : "bind";
  bool bind = o.bind || is_type(type, "bind") || is_type(type, "rbind");
  if (is_type(type, "rbind")) o.recursive = true;
  struct stat st;
  cleanup_close int mnt = -1;
  if (!bind || !m->source) {
    ret = an_error_set(err, EINVAL, "mount %s: uidMappings/gidMappings need a bind mount",
                       m->destination ? m->destination : "");
    goto out;
  }
  ret = host_bind(m->source, bundle, o.recursive, &mnt, &st, err);
  if (ret < 0) goto out;
  if (setattr_fd(mnt, o.recursive, o.attr_set, o.attr_clr, 0, userns_fd) < 0) {
    ret = an_error_set(err, errno, "idmapped mount of %s", m->source);
    goto out;
  }
  *mnt_fd = an_steal_fd(&mnt);
out:
  an_mount_options_free(&o);
  return ret;
}

int an_mount_entry(int root_fd, const char *rootfs, const char *bundle,
                   const struct an_spec_mount *m, int premade_fd, const struct an_cgroup *cg,
                   bool own_cgroupns, an_error_t *err) {
  struct an_mount_options o;
  int ret = an_mount_options_parse(m->options, &o, err);
  if (ret < 0) return ret;
  const char *type = m->type ? m->type : (o.bind ? "bind" : "none");
  bool bind = o.bind || is_type(type, "bind") || is_type(type, "rbind");
  if (is_type(type, "rbind")) o.recursive = true;
  cleanup_close int mnt = -1;
  cleanup_close int target = -1;
  bool target_is_file = false;

  if (!m->destination || m->destination[0] != '/') {
    ret = an_error_set(err, EINVAL, "mount destination \"%s\": not an absolute path",
                       m->destination ? m->destination : "");
    goto out;
  }
  if (o.idmap && premade_fd < 0) {
    ret = an_error_set(err, EINVAL, "mount %s: idmap option without uidMappings/gidMappings",
                       m->destination);
    goto out;
  }

  if (premade_fd >= 0) {
    /* made by the parent (an_mount_prepare_idmapped): only attach it here */
    struct stat st;
    if (fstat(premade_fd, &st) < 0) {
      ret = an_error_set(err, errno, "stat prepared mount");
      goto fail;
    }
    target_is_file = !S_ISDIR(st.st_mode);
    mnt = fcntl(premade_fd, F_DUPFD_CLOEXEC, 3);
    if (mnt < 0) {
      ret = an_error_set(err, errno, "dup prepared mount");
      goto fail;
    }
  } else if (bind) {
    struct stat st;
    if (!m->source) {
      ret = an_error_set(err, EINVAL, "bind mount on %s: no source", m->destination);
      goto out;
    }
    ret = host_bind(m->source, bundle, o.recursive, &mnt, &st, err);
    if (ret < 0) goto fail;
    target_is_file = !S_ISDIR(st.st_mode);
    if (setattr_fd(mnt, o.recursive, o.attr_set, o.attr_clr, 0, -1) < 0) {
      ret = an_error_set(err, errno, "mount_setattr %s", m->source);
      goto fail;
    }
  } else if ((is_type(type, "cgroup") || is_type(type, "cgroup2")) && cg) {
    /* the container's own cgroup, never the host's tree (cgroup_view.h) */
    ret = an_mount_resolve(root_fd, m->destination, true, false, &target, err);
    if (ret == 0) ret = an_cgroup_view_mount(cg, target, own_cgroupns, o.attr_set, err);
    if (ret < 0) goto fail;
    goto out;
  } else if (is_type(type, "cgroup") || is_type(type, "cgroup2")) {
    ret = an_mount_new_fs("cgroup2", "cgroup2", NULL, o.attr_set, &mnt, err);
    if (ret < 0) {
      /* No cgroup2 for this container (no cgroup namespace, hybrid host):
       * an empty read-only tmpfs rather than the host's hierarchy (BL-05). */
      an_error_free(err);
      ret = an_mount_new_fs("tmpfs", "cgroup", "mode=755,size=4k",
                            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                            MOUNT_ATTR_NOEXEC, &mnt, err);
      if (ret < 0) goto fail;
    }
  } else {
    ret = an_mount_new_fs(type, m->source, o.data, o.attr_set, &mnt, err);
    if (ret == -EINVAL && is_type(type, "devpts") && o.data && strstr(o.data, "gid=")) {
      an_error_free(err);
      drop_gid_option(o.data);
      ret = an_mount_new_fs(type, m->source, o.data, o.attr_set, &mnt, err);
    }
    if (ret == -EPERM && is_type(type, "sysfs")) {
      /* sysfs needs a network namespace owned by our user namespace; runc
       * falls back to a recursive bind of the host's /sys, read-only. */
      struct stat st;
      an_error_free(err);
      ret = host_bind("/sys", NULL, true, &mnt, &st, err);
      if (ret < 0) goto fail;
      if (setattr_fd(mnt, true, o.attr_set | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
                     MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, 0, 0, -1) < 0) {
        ret = an_error_set(err, errno, "mount_setattr /sys");
        goto fail;
      }
    }
    if (ret < 0) goto fail;
  }

  ret = an_mount_resolve(root_fd, m->destination, true, target_is_file, &target, err);
  if (ret < 0) goto fail;
  ret = an_mount_attach(mnt, target, err);
  if (ret < 0) goto fail;
  /* Without a propagation option the mount is a slave, as everything in the
   * container's namespace (an_rootfs_prepare): an idmapped mount was cloned
   * in the runtime's namespace and is otherwise a peer of its shared source,
   * so mounts made below it would appear on the host. */
  if (setattr_fd(mnt, o.recursive || bind || premade_fd >= 0, 0, 0,
                 o.propagation ? o.propagation : MS_SLAVE, -1) < 0) {
    ret = an_error_set(err, errno, "set propagation");
    goto fail;
  }
  ret = 0;
  goto out;
fail:
  an_error_prefix(err, "mount %s on %s%s", type, rootfs, m->destination);
out:
  an_mount_options_free(&o);
  return ret;
}
