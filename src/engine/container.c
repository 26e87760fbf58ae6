/* engine/container.c — the runtime-spec lifecycle (runtime.md "Lifecycle",
 * "Operations"): create / start / run / state / kill / delete / pause /
 * resume / pids / list, orchestrating the parent side of the sync protocol
 * (sync.h).  Every failure during create removes what was made: processes,
 * cgroup, state directory (mounts die with the mount namespace).  What does
 * NOT live here: the child's work (init.c), exec (exec.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agentnest/cgroup.h"
#include "agentnest/container.h"
#include "engine/caps.h"
#include "engine/container_internal.h"
#include "engine/hooks.h"
#include "engine/init.h"
#include "engine/landlock.h"
#include "engine/mount.h"
#include "engine/namespaces.h"
#include "engine/process.h"
#include "engine/procview.h"
#include "engine/rlimits.h"
#include "engine/seccomp.h"
#include "engine/state.h"
#include "engine/sync.h"
#include "engine/sysctl.h"
#include "engine/terminal.h"
#include "engine/userns.h"
#include "util/cleanup.h"

const char *an_container_status_name(enum an_container_status s) {
  switch (s) {
  case AN_STATUS_CREATING: return "creating";
  case AN_STATUS_CREATED: return "created";
  case AN_STATUS_RUNNING: return "running";
  case AN_STATUS_PAUSED: return "paused";
  default: return "stopped";
  }
}

void an_container_state_free(struct an_container_state *st) {
  if (!st) return;
  free(st->oci_version);
  free(st->id);
  free(st->bundle);
  free(st->rootfs);
  free(st->cgroup_path);
  free(st->created);
  free(st->owner);
  for (size_t i = 0; i < st->n_annotations; i++) {
    free(st->annotations[i].key);
    free(st->annotations[i].value);
  }
  free(st->annotations);
  free(st);
}

const char *an_state_root_or_default(const char *root) {
  return root && *root ? root : AN_STATE_ROOT_DEFAULT;
}

/* --- launch: the parent side of create ------------------------------------ */

enum launch_mode { LAUNCH_CREATE, LAUNCH_RUN };

struct launch {
  const struct an_spec *spec;
  const struct an_container_opts *opts;
  const char *state_root;
  char rootfs[PATH_MAX];
  char bundle[PATH_MAX];
  int dirfd;
  struct an_cgroup *cg;
  struct an_ns_plan ns;
  struct an_seccomp_program *seccomp;
  int *idmap_fds;
  int root_mnt_fd;   /* detached clone of the root (open_tree), attached by init */
  char cg_path[512];  /* linux.cgroupsPath, or agentnest/<id> */
  int sync_fd;
  int start_fd;
  pid_t pid;
  int pidfd;
  struct an_container_state st;
};

/* a mounts[] entry that asks for a bind (its type then is only a label) */
static bool mount_has_bind_option(const struct an_spec_mount *m) {
  for (char **o = m->options; o && *o; o++)
    if (!strcmp(*o, "bind") || !strcmp(*o, "rbind")) return true;
  return false;
}

static void launch_init(struct launch *l) {
  memset(l, 0, sizeof *l);
  l->dirfd = l->sync_fd = l->start_fd = l->pidfd = l->root_mnt_fd = -1;
  l->ns.userns_fd = l->ns.pidns_fd = l->ns.timens_fd = l->ns.netns_fd = -1;
}

/* Release what the parent holds (not what it made). */
static void launch_release(struct launch *l) {
  if (l->idmap_fds) {
    for (size_t i = 0; i < l->spec->n_mounts; i++)
      if (l->idmap_fds[i] >= 0) close(l->idmap_fds[i]);
    free(l->idmap_fds);
    l->idmap_fds = NULL;
  }
  if (l->root_mnt_fd >= 0) close(l->root_mnt_fd);
  l->root_mnt_fd = -1;
  an_ns_plan_close(&l->ns);
  an_seccomp_program_free(l->seccomp);
  l->seccomp = NULL;
  if (l->sync_fd >= 0) close(l->sync_fd);
  if (l->start_fd >= 0) close(l->start_fd);
  if (l->pidfd >= 0) close(l->pidfd);
  l->sync_fd = l->start_fd = l->pidfd = -1;
  an_cgroup_free(l->cg);
  l->cg = NULL;
  if (l->dirfd >= 0) close(l->dirfd);
  l->dirfd = -1;
  free(l->st.created);
  free(l->st.owner);
  l->st.created = l->st.owner = NULL;
}

/* Remove everything create made: the process tree, the cgroup, the state. */
static void launch_teardown(struct launch *l) {
  if (l->pidfd >= 0) {
    an_error_t e = NULL;
    an_process_signal(l->pidfd, SIGKILL, &e);
    an_error_free(&e);
    while (waitpid(l->pid, NULL, 0) < 0 && errno == EINTR) {}
  }
  if (l->cg) {
    an_error_t e = NULL;
    an_cgroup_destroy(l->cg, &e);
    an_error_free(&e);
  }
  if (l->dirfd >= 0) {
    an_error_t e = NULL;
    an_state_dir_remove(l->state_root, l->opts->id, l->dirfd, &e);
    an_error_free(&e);
  }
  launch_release(l);
}

static int resolve_paths(struct launch *l, an_error_t *err) {
  const struct an_spec *s = l->spec;
  const char *bundle = l->opts->bundle;
  if (bundle && *bundle) {
    if (!realpath(bundle, l->bundle)) return an_error_set(err, errno, "bundle %s", bundle);
  } else if (!getcwd(l->bundle, sizeof l->bundle)) {
    return an_error_set(err, errno, "getcwd");
  }
  if (!s->root.path || !*s->root.path) return an_error_set(err, EINVAL, "root.path: missing");
  char joined[PATH_MAX + 256];
  int n;
  if (s->root.path[0] == '/') n = snprintf(joined, sizeof joined, "%s", s->root.path);
  else n = snprintf(joined, sizeof joined, "%s/%s", l->bundle, s->root.path);
  if (n < 0 || (size_t) n >= sizeof joined)
    return an_error_set(err, ENAMETOOLONG, "root.path %s", s->root.path);
  if (!realpath(joined, l->rootfs)) return an_error_set(err, errno, "root.path %s", joined);
  struct stat st;
  if (stat(l->rootfs, &st) < 0) return an_error_set(err, errno, "root.path %s", l->rootfs);
  if (!S_ISDIR(st.st_mode)) return an_error_set(err, ENOTDIR, "root.path %s", l->rootfs);
  return 0;
}

int an_process_lsm_check(const struct an_spec_process *p, an_error_t *err) {
  if (p->apparmor_profile && *p->apparmor_profile)
    return an_error_set(err, EOPNOTSUPP, "process.apparmorProfile \"%s\": AppArmor is not "
                        "supported by this runtime; refused rather than run unconfined",
                        p->apparmor_profile);
  if (p->selinux_label && *p->selinux_label)
    return an_error_set(err, EOPNOTSUPP, "process.selinuxLabel \"%s\": SELinux is not supported "
                        "by this runtime; refused rather than run unlabelled", p->selinux_label);
  return 0;
}

static int validate(struct launch *l, an_error_t *err) {
  const struct an_spec *s = l->spec;
  const struct an_spec_process *p = s->process;
  if (!p || !p->args || !p->args[0])
    return an_error_set(err, EINVAL, "process.args: at least one argument is required");
  if (!p->cwd || p->cwd[0] != '/')
    return an_error_set(err, EINVAL, "process.cwd \"%s\": must be an absolute path",
                        p->cwd ? p->cwd : "");
  if (p->terminal && !l->opts->console_socket)
    return an_error_set(err, EINVAL, "process.terminal: needs a console socket");
  /* LSM confinement asked for and not enforceable here is refused, never
   * silently skipped (fail closed; runc fails the same way on a host
   * without the LSM, agentnest-oci(1)). */
  int r = an_process_lsm_check(p, err);
  if (r < 0) return r;
  if (s->linux.mount_label && *s->linux.mount_label)
    return an_error_set(err, EOPNOTSUPP, "linux.mountLabel \"%s\": SELinux is not supported by "
                        "this runtime; refused rather than mount unlabelled", s->linux.mount_label);
  r = an_landlock_check(s, err);
  if (r < 0) return r;
  return an_procview_check(s, err);
}

static int validate_namespaces(struct launch *l, an_error_t *err) {
  const struct an_spec *s = l->spec;
  if (!(l->ns.clone_flags & CLONE_NEWNS)) {
    /* A deliberate difference from runc (agentnest-oci(1)): the root and
     * every mount are made only in a mount namespace of the container's
     * own, never in the runtime's or another container's. */
    for (size_t i = 0; i < s->linux.n_namespaces; i++)
      if (s->linux.namespaces[i].clone_flag == CLONE_NEWNS && s->linux.namespaces[i].path)
        return an_error_set(err, EINVAL, "linux.namespaces: joining the mount namespace %s is "
                            "refused: a deliberate difference from runc, every container gets "
                            "a new mount namespace (see agentnest-oci(1))",
                            s->linux.namespaces[i].path);
    return an_error_set(err, EINVAL, "linux.namespaces: a config without a mount namespace is "
                        "refused: a deliberate difference from runc, every container gets a "
                        "new mount namespace (see agentnest-oci(1))");
  }
  if (s->hostname && *s->hostname && !(l->ns.all_flags & CLONE_NEWUTS))
    return an_error_set(err, EINVAL, "hostname: needs a uts namespace");
  if (s->domainname && *s->domainname && !(l->ns.all_flags & CLONE_NEWUTS))
    return an_error_set(err, EINVAL, "domainname: needs a uts namespace");
  if (l->ns.clone_flags & CLONE_NEWUSER) {
    if (!s->linux.n_uid_mappings || !s->linux.n_gid_mappings)
      return an_error_set(err, EINVAL, "linux.uidMappings/gidMappings: a new user namespace "
                          "needs both");
  }
  /* runc: kernel.hostname is namespaced but conflicts with the hostname
   * field; refused when both would set it */
  for (size_t i = 0; s->hostname && *s->hostname && i < s->linux.n_sysctl; i++) {
    const char *k = s->linux.sysctl[i].key;
    if (k && (strcmp(k, "kernel.hostname") == 0 || strcmp(k, "kernel/hostname") == 0))
      return an_error_set(err, EINVAL, "linux.sysctl \"kernel.hostname\": conflicts with the "
                          "hostname field (\"%s\")", s->hostname);
  }
  return an_sysctl_validate(&s->linux, l->ns.all_flags, err);
}

static int make_start_socket(struct launch *l, an_error_t *err) {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return an_error_set(err, errno, "start socket");
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/%s", l->dirfd, AN_STATE_START_SOCK);
  if (bind(s, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(s, 1) < 0) {
    int e = errno;
    close(s);
    return an_error_set(err, e, "bind start socket in %s/%s", l->state_root, l->opts->id);
  }
  l->start_fd = s;
  return 0;
}

static int state_json_for_hooks(struct launch *l, enum an_container_status status, char **json,
                                an_error_t *err) {
  l->st.status = status;
  l->st.pid = l->pid;
  return an_state_to_json(&l->st, false, json, err);
}

static bool spec_has_child_hooks(const struct an_spec *s) {
  return s->hooks.n_create_container || s->hooks.n_start_container;
}

/* clone3 the init, entering a pid/time namespace to join around the call
 * (setns on those only affects children, see setns(2)), and a network
 * namespace to join (this thread moves; the child inherits it: the child,
 * inside a new user namespace, could not join a netns owned by the initial
 * one, see namespaces.h).  Our own ones are entered again after. */
static int clone_init(struct launch *l, const struct an_init_config *cfg, int cgroup_fd, an_error_t *err) {
  cleanup_close int own_pid = -1, own_time = -1, own_net = -1;
  if (l->ns.pidns_fd >= 0) {
    own_pid = open("/proc/thread-self/ns/pid", O_RDONLY | O_CLOEXEC);
    if (own_pid < 0 || setns(l->ns.pidns_fd, CLONE_NEWPID) < 0)
      return an_error_set(err, errno, "join pid namespace");
  }
  if (l->ns.timens_fd >= 0) {
    own_time = open("/proc/thread-self/ns/time", O_RDONLY | O_CLOEXEC);
    if (own_time < 0 || setns(l->ns.timens_fd, CLONE_NEWTIME) < 0)
      return an_error_set(err, errno, "join time namespace");
  }
  if (l->ns.netns_fd >= 0) {
    own_net = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (own_net < 0 || setns(l->ns.netns_fd, CLONE_NEWNET) < 0) {
      int e = errno;
      if (own_pid >= 0) setns(own_pid, CLONE_NEWPID);
      if (own_time >= 0) setns(own_time, CLONE_NEWTIME);
      return an_error_set(err, e, "join network namespace");
    }
  }
  /* A new user namespace is owned by the host ids container root maps to,
   * not host root: per-user kernel budgets are then the container's own
   * (userns.h, an_userns_owner_enter). */
  struct an_userns_owner owner = {0};
  int r = (l->ns.clone_flags & CLONE_NEWUSER) ? an_userns_owner_enter(&l->spec->linux, &owner, err) : 0;
  if (r < 0) {
    if (own_pid >= 0) setns(own_pid, CLONE_NEWPID);
    if (own_time >= 0) setns(own_time, CLONE_NEWTIME);
    if (own_net >= 0) setns(own_net, CLONE_NEWNET);
    return r;
  }
  /* a new time namespace with offsets is made by init itself (procview.h) */
  uint64_t flags = (uint64_t) l->ns.clone_flags;
  if (an_procview_timens_zero(l->spec)) flags &= ~(uint64_t) CLONE_NEWTIME;
  int pidfd = -1;
  pid_t pid = an_process_clone(flags, cgroup_fd, &pidfd, err);
  if (pid == 0) an_init_main(cfg);
  an_userns_owner_leave(&owner);
  if (own_pid >= 0) setns(own_pid, CLONE_NEWPID);
  if (own_time >= 0) setns(own_time, CLONE_NEWTIME);
  if (own_net >= 0 && setns(own_net, CLONE_NEWNET) < 0) {
    /* this thread must never stay in the container's netns */
    if (pid > 0) kill(pid, SIGKILL);
    return an_error_set(err, errno, "re-enter the runtime's network namespace");
  }
  if (pid < 0) return pid;
  l->pid = pid;
  l->pidfd = pidfd;
  return 0;
}

static int launch(struct launch *l, enum launch_mode mode, an_error_t *err) {
  const struct an_spec *s = l->spec;
  const struct an_container_opts *o = l->opts;
  int r;
  int sp[2] = {-1, -1};
  /* declared before the first goto: a cleanup variable jumped over would be
   * closed uninitialised */
  cleanup_close int master = -1;

  if ((r = validate(l, err)) < 0) return r;
  if ((r = resolve_paths(l, err)) < 0) return r;
  /* The root is cloned here, by the runtime, and only attached by init: init
   * runs as the container's ids by then and may not be able to search the
   * path (an image store is 0700), and nothing is ever mounted in the host's
   * namespace. */
  l->root_mnt_fd = open_tree(AT_FDCWD, l->rootfs, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
  if (l->root_mnt_fd < 0) return an_error_set(err, errno, "root.path %s: open_tree", l->rootfs);
  if ((r = an_ns_plan_make(&s->linux, &l->ns, err)) < 0) return r;
  if ((r = validate_namespaces(l, err)) < 0) goto fail;
  if (s->process->capabilities && (r = an_caps_check(s->process->capabilities, NULL, err)) < 0)
    goto fail;
  /* The compiled program is kept in the container's state (exec reuses
   * it); a shared cache only where the caller keeps one (the sandbox store),
   * never a directory left in an engine's state root. */
  if (s->linux.seccomp &&
      (r = an_seccomp_prepare(s->linux.seccomp, o->seccomp_cache, &l->seccomp, err)) < 0)
    goto fail;
  if (s->n_mounts) {
    l->idmap_fds = malloc(s->n_mounts * sizeof *l->idmap_fds);
    if (!l->idmap_fds) { r = an_error_set(err, ENOMEM, "mounts"); goto fail; }
    for (size_t i = 0; i < s->n_mounts; i++) l->idmap_fds[i] = -1;
    /* a netns joined from a user namespace of the container's own, which
     * cannot mount sysfs for it: made here (an_mount_prepare_sysfs) */
    const char *netns_path = NULL;
    bool own_userns = false;
    for (size_t i = 0; i < s->linux.n_namespaces; i++) {
      if (s->linux.namespaces[i].clone_flag == CLONE_NEWNET) netns_path = s->linux.namespaces[i].path;
      if (s->linux.namespaces[i].clone_flag == CLONE_NEWUSER) own_userns = true;
    }
    if (!own_userns) netns_path = NULL;
    for (size_t i = 0; i < s->n_mounts; i++) {
      const struct an_spec_mount *m = &s->mounts[i];
      if (netns_path && m->type && !strcmp(m->type, "sysfs") && !m->n_uid_mappings && !m->n_gid_mappings &&
          !mount_has_bind_option(m)) {
        r = an_mount_prepare_sysfs(netns_path, &l->idmap_fds[i], err);
        if (r < 0) { an_error_prefix(err, "mounts[%zu]", i); goto fail; }
        continue;
      }
      if (!m->n_uid_mappings && !m->n_gid_mappings) continue;
      cleanup_close int userns = -1;
      r = an_userns_for_idmap(m->uid_mappings, m->n_uid_mappings, m->gid_mappings,
                              m->n_gid_mappings, &userns, err);
      if (r == 0) r = an_mount_prepare_idmapped(m, l->bundle, userns, &l->idmap_fds[i], err);
      if (r < 0) { an_error_prefix(err, "mounts[%zu]", i); goto fail; }
    }
  }

  /* From here on, everything made is removed on failure. */
  if ((r = an_state_dir_create(l->state_root, o->id, &l->dirfd, err)) < 0) goto fail;
  if (s->linux.cgroups_path && *s->linux.cgroups_path)
    snprintf(l->cg_path, sizeof l->cg_path, "%s", s->linux.cgroups_path);
  else
    snprintf(l->cg_path, sizeof l->cg_path, "agentnest/%s", o->id);
  l->st.oci_version = s->oci_version;
  l->st.id = (char *) o->id;
  l->st.bundle = l->bundle;
  l->st.rootfs = l->rootfs;
  l->st.created = an_state_now_rfc3339();
  l->st.owner = strdup("");
  l->st.cgroup_path = l->cg_path;
  l->st.annotations = s->annotations;
  l->st.n_annotations = s->n_annotations;
  /* runtime.md "creating": recorded before anything else is made, so that if
   * this process is killed from here on, `delete` finds the cgroup to remove
   * (a pid of 0 reads back as stopped). */
  l->st.status = AN_STATUS_CREATING;
  if ((r = an_state_write(l->dirfd, &l->st, err)) < 0) goto fail;
  if ((r = (o->cgroup_used_only ? an_cgroup_create_used : an_cgroup_create)(
           l->cg_path, s->linux.resources, &l->cg, err)) < 0)
    goto fail;
  {
    cleanup_free char *config = NULL;
    /* what is recorded may leave values out (opts->config_env) */
    char **env = s->process ? s->process->env : NULL;
    if (o->config_env && s->process) s->process->env = (char **) o->config_env;
    r = an_spec_to_json(s, &config, err);
    if (s->process) s->process->env = env;
    if (r < 0) goto fail;
    if ((r = an_state_write_file(l->dirfd, AN_STATE_CONFIG, config, strlen(config), err)) < 0)
      goto fail;
  }
  /* exec installs the same filter: keep it, so exec neither hashes the
   * profile nor looks it up in the cache again. */
  if (l->seccomp && (r = an_seccomp_program_save(l->dirfd, AN_STATE_SECCOMP, l->seccomp, err)) < 0)
    goto fail;
  if (mode == LAUNCH_CREATE && (r = make_start_socket(l, err)) < 0) goto fail;
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
    r = an_error_set(err, errno, "sync socketpair for container %s", o->id);
    goto fail;
  }
  l->sync_fd = sp[0];

  bool new_userns = l->ns.clone_flags & CLONE_NEWUSER;
  /* pid 1 steps into its v1 cgroups itself (cgroup.h: no grace period);
   * opened here, as host root.  Else it is moved at [1]. */
  struct an_cgroup_birth birth;
  bool born = an_cgroup_birth_try(l->cg, &birth);
  struct an_init_config cfg = {
    .birth = born ? &birth : NULL,
    .spec = s, .process = s->process, .rootfs = l->rootfs, .bundle = l->bundle,
    .parent_pid = getpid(), .sync_fd = sp[1], .parent_sync_fd = sp[0],
    .start_fd = l->start_fd, .state_dirfd = l->dirfd, .ns = &l->ns, .cgroup = l->cg,
    .in_userns = new_userns || l->ns.userns_fd >= 0,
    .become_root_early = new_userns && an_userns_maps_root(&s->linux),
    .idmap_fds = l->idmap_fds, .root_mnt_fd = l->root_mnt_fd, .seccomp = l->seccomp, .no_pivot = o->no_pivot,
    .no_new_keyring = o->no_new_keyring, .preserve_fds = o->preserve_fds,
    .stdio = {o->stdio[0], o->stdio[1], o->stdio[2]},
    .needs_hook_state = spec_has_child_hooks(s),
  };
  r = clone_init(l, &cfg, born ? birth.clone_fd : -1, err);
  if (born) an_cgroup_birth_end(&birth);
  close(sp[1]);
  if (r < 0) goto fail;

  /* [1] move into the cgroup (where clone3 could not), write the maps */
  if (!born && (r = an_cgroup_enter(l->cg, l->pid, err)) < 0) goto fail;
  if (new_userns &&
      (r = an_userns_write_maps(l->pid, s->linux.uid_mappings, s->linux.n_uid_mappings,
                                s->linux.gid_mappings, s->linux.n_gid_mappings, err)) < 0)
    goto fail;
  if (s->process->has_oom_score_adj &&
      (r = an_oom_score_adj_write(l->pid, s->process->oom_score_adj, err)) < 0)
    goto fail;
  if ((r = an_sync_send(l->sync_fd, AN_SYNC_IDMAPPED, -1, err)) < 0) goto fail;

  /* [2] mounts done: prestart + createRuntime hooks in the runtime's namespaces */
  if ((r = an_sync_wait(l->sync_fd, AN_SYNC_MOUNTED, NULL, err)) < 0) goto fail;
  {
    cleanup_free char *json = NULL;
    if (s->hooks.n_prestart || s->hooks.n_create_runtime || spec_has_child_hooks(s)) {
      if ((r = state_json_for_hooks(l, AN_STATUS_CREATING, &json, err)) < 0) goto fail;
      if ((r = an_hooks_run(s->hooks.prestart, s->hooks.n_prestart, "prestart", json, err)) < 0 ||
          (r = an_hooks_run(s->hooks.create_runtime, s->hooks.n_create_runtime, "createRuntime",
                            json, err)) < 0)
        goto fail;
    }
    /* [3] */
    if (spec_has_child_hooks(s)) r = an_sync_send_payload(l->sync_fd, AN_SYNC_HOOKS_DONE, json, err);
    else r = an_sync_send(l->sync_fd, AN_SYNC_HOOKS_DONE, -1, err);
    if (r < 0) goto fail;
  }

  /* [4] ready */
  if ((r = an_sync_wait(l->sync_fd, AN_SYNC_READY, &master, err)) < 0) goto fail;
  if (master >= 0 && o->console_socket &&
      (r = an_terminal_send_master(o->console_socket, master, err)) < 0)
    goto fail;

  uint64_t start_time = 0;
  if ((r = an_process_start_time(l->pid, &start_time, err)) < 0) goto fail;
  l->st.start_time = start_time;
  l->st.pid = l->pid;
  l->st.status = AN_STATUS_CREATED;
  if ((r = an_state_write(l->dirfd, &l->st, err)) < 0) goto fail;
  if (o->pid_file && *o->pid_file && (r = an_pid_file_write(o->pid_file, l->pid, err)) < 0)
    goto fail;
  return 0;
fail:
  an_error_prefix(err, "create container %s", o->id);
  launch_teardown(l);
  return r;
}

int an_container_create(const struct an_spec *spec, const struct an_container_opts *opts,
                        an_error_t *err) {
  if (!spec || !opts || !opts->id) return an_error_set(err, EINVAL, "create: no spec or id");
  struct launch l;
  launch_init(&l);
  l.spec = spec;
  l.opts = opts;
  l.state_root = an_state_root_or_default(opts->state_root);
  int r = launch(&l, LAUNCH_CREATE, err);
  if (r < 0) return r;
  /* [5] detach; [8] init has disarmed its parent-death signal and waits
   * on the start socket: returning (and exiting) no longer kills it */
  r = an_sync_send(l.sync_fd, AN_SYNC_DETACH, -1, err);
  if (r == 0) r = an_sync_wait(l.sync_fd, AN_SYNC_DETACHED, NULL, err);
  if (r < 0) {
    an_error_prefix(err, "create container %s", opts->id);
    launch_teardown(&l);
    return r;
  }
  launch_release(&l);
  return 0;
}

/* --- run ------------------------------------------------------------------ */

static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
                                        SIGWINCH};

/* Wait for init, forwarding the signals the caller receives (run in the
 * foreground, like runc).  The mask was blocked before clone3. */
static int wait_forwarding(int pidfd, const sigset_t *set, an_error_t *err) {
  cleanup_close int sfd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) return an_process_wait(pidfd, err);
  for (;;) {
    struct pollfd p[2] = {{.fd = pidfd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
    int n = poll(p, 2, -1);
    if (n < 0 && errno != EINTR) return an_error_set(err, errno, "poll");
    if (n > 0 && p[1].revents & POLLIN) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == sizeof si) {
        an_error_t e = NULL;
        an_process_signal(pidfd, (int) si.ssi_signo, &e);
        an_error_free(&e);
      }
    }
    if (n > 0 && p[0].revents & (POLLIN | POLLHUP)) return an_process_wait(pidfd, err);
  }
}

int an_container_run(const struct an_spec *spec, const struct an_container_opts *opts,
                     an_error_t *err) {
  if (!spec || !opts || !opts->id) return an_error_set(err, EINVAL, "run: no spec or id");
  struct launch l;
  launch_init(&l);
  l.spec = spec;
  l.opts = opts;
  l.state_root = an_state_root_or_default(opts->state_root);

  sigset_t set, old;
  sigemptyset(&set);
  for (size_t i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
    sigaddset(&set, forwarded_signals[i]);
  bool block = !opts->detach;
  if (block) pthread_sigmask(SIG_BLOCK, &set, &old);

  int r = launch(&l, LAUNCH_RUN, err);
  if (r < 0) goto out;
  /* [5] go; [6] EOF when execve succeeded */
  if ((r = an_sync_send(l.sync_fd, AN_SYNC_GO, -1, err)) < 0 ||
      (r = an_sync_wait_exec(l.sync_fd, NULL, err)) < 0) {
    an_error_prefix(err, "run container %s", opts->id);
    launch_teardown(&l);
    goto out;
  }
  l.st.status = AN_STATUS_RUNNING;
  {
    an_error_t e = NULL;
    an_state_write(l.dirfd, &l.st, &e);
    an_error_free(&e);
  }
  if (spec->hooks.n_poststart) {
    cleanup_free char *json = NULL;
    an_error_t e = NULL;
    if (an_state_to_json(&l.st, false, &json, &e) == 0)
      an_hooks_run(spec->hooks.poststart, spec->hooks.n_poststart, "poststart", json, &e);
    an_error_free(&e);  /* runtime.md: a poststart failure is only a warning */
  }
  if (opts->detach) {
    launch_release(&l);
    r = 0;
    goto out;
  }
  /* Drop the lock while the container runs so state/kill work. */
  flock(l.dirfd, LOCK_UN);
  r = wait_forwarding(l.pidfd, &set, err);
  while (flock(l.dirfd, LOCK_EX) < 0 && errno == EINTR) {}
  l.st.status = AN_STATUS_STOPPED;
  if (spec->hooks.n_poststop) {
    cleanup_free char *json = NULL;
    an_error_t e = NULL;
    if (an_state_to_json(&l.st, false, &json, &e) == 0)
      an_hooks_run(spec->hooks.poststop, spec->hooks.n_poststop, "poststop", json, &e);
    an_error_free(&e);
  }
  close(l.pidfd);
  l.pidfd = -1;
  if (opts->keep) {
    an_error_t e = NULL;
    an_state_write(l.dirfd, &l.st, &e);
    an_error_free(&e);
    launch_release(&l);
  } else {
    launch_teardown(&l);
  }
out:
  if (block) pthread_sigmask(SIG_SETMASK, &old, NULL);
  return r;
}
