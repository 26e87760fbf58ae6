/* sandbox/doctor.c — an_doctor_probe(): probe what this host offers a
 * sandbox (kernel, namespaces, cgroups, seccomp, Landlock, nftables,
 * idmapped mounts, openat2, image store, state directory, workspace quota
 * mechanism) and describe it as
 * JSON.  Each probe is a real syscall whose errno is the answer (ENOSYS: the
 * kernel lacks it); nothing is left behind.  Printing is the CLI's job. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <nftables/libnftables.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "agentnest/doctor.h"
#include "agentnest/image.h"
#include "engine/cgroup_internal.h"
#include "net/egress.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/json_gen.h"

/* What is required and missing, collected while probing. */
struct missing {
  const char *what[32];
  size_t n;
};

static void miss(struct missing *m, const char *what) {
  if (m->n < sizeof m->what / sizeof m->what[0]) m->what[m->n++] = what;
}

/* A small /proc or /sys file as a trimmed string (NULL when unreadable). */
static char *read_small(const char *path) {
  cleanup_fclose FILE *f = fopen(path, "re");
  if (!f) return NULL;
  char buf[4096];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = 0;
  return strdup(buf);
}

/* An integer sysctl as a JSON number, or null when the file is absent. */
static void key_sysctl(struct an_jgen *g, const char *k, const char *path) {
  cleanup_free char *s = read_small(path);
  an_jgen_key(g, k);
  if (s) an_jgen_i64(g, strtoll(s, NULL, 10));
  else an_jgen_null(g);
}

static void probe_kernel(struct an_jgen *g) {
  struct utsname u;
  an_jgen_key(g, "kernel");
  an_jgen_map_open(g);
  if (uname(&u) == 0) {
    an_jgen_kv_str(g, "release", u.release);
    an_jgen_kv_str(g, "version", u.version);
    an_jgen_kv_str(g, "machine", u.machine);
  }
  an_jgen_map_close(g);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Namespace types from /proc/self/ns (namespaces(7)); each required one
 * that is absent is missing. */
static void probe_namespaces(struct an_jgen *g, struct missing *m) {
  static const char *const required[] = {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"};
  static const char *const missing_names[] = {"user namespace", "mount namespace",
                                              "pid namespace", "network namespace",
                                              "ipc namespace", "uts namespace",
                                              "cgroup namespace"};
  char *names[32];
  size_t n = 0;
  cleanup_closedir DIR *d = opendir("/proc/self/ns");
  struct dirent *e;
  while (d && (e = readdir(d)) && n < 32) {
    if (e->d_name[0] == '.' || strstr(e->d_name, "_for_children")) continue;
    names[n] = strdup(e->d_name);
    if (names[n]) n++;
  }
  qsort(names, n, sizeof names[0], cmp_str);
  an_jgen_key(g, "namespaces");
  an_jgen_map_open(g);
  an_jgen_key(g, "available");
  an_jgen_array_open(g);
  for (size_t i = 0; i < n; i++) an_jgen_str(g, names[i]);
  an_jgen_array_close(g);
  for (size_t r = 0; r < sizeof required / sizeof required[0]; r++) {
    bool found = false;
    for (size_t i = 0; i < n; i++) found |= !strcmp(names[i], required[r]);
    if (!found) miss(m, missing_names[r]);
  }
  for (size_t i = 0; i < n; i++) free(names[i]);
  key_sysctl(g, "user_max", "/proc/sys/user/max_user_namespaces");
  key_sysctl(g, "unprivileged_userns_clone", "/proc/sys/kernel/unprivileged_userns_clone");
  key_sysctl(g, "apparmor_restrict_unprivileged_userns",
             "/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
  cleanup_free char *max = read_small("/proc/sys/user/max_user_namespaces");
  if (max && strtoll(max, NULL, 10) == 0) miss(m, "user namespaces (user.max_user_namespaces is 0)");
  an_jgen_map_close(g);
}

static void probe_cgroup(struct an_jgen *g, struct missing *m) {
  struct an_cg_layout l = {0};
  cleanup_error an_error_t err = NULL;
  an_jgen_key(g, "cgroup");
  an_jgen_map_open(g);
  if (an_cg_layout_read(&l, &err) < 0) {
    an_jgen_kv_str(g, "layout", NULL);
    an_jgen_kv_str(g, "error", err->msg);
    an_jgen_map_close(g);
    miss(m, "cgroup filesystem");
    return;
  }
  an_jgen_kv_str(g, "layout", l.layout == AN_CGROUP_UNIFIED  ? "unified"
                              : l.layout == AN_CGROUP_HYBRID ? "hybrid"
                                                             : "legacy");
  an_jgen_key(g, "hierarchies");
  an_jgen_array_open(g);
  for (size_t i = 0; i < l.n; i++) {
    an_jgen_map_open(g);
    an_jgen_kv_i64(g, "version", l.h[i].version);
    an_jgen_kv_str(g, "mount", l.h[i].mount);
    an_jgen_key(g, "controllers");
    an_jgen_array_open(g);
    for (int c = 0; c < AN_CG__COUNT; c++) {
      if (!(l.h[i].ctrls & AN_CG_BIT(c))) continue;
      const char *name = l.h[i].version == 2 ? an_cg_ctrl_v2_name(c) : an_cg_ctrl_v1_name(c);
      if (name) an_jgen_str(g, name);
    }
    an_jgen_array_close(g);
    an_jgen_map_close(g);
  }
  an_jgen_array_close(g);
  an_jgen_map_close(g);
  if (an_cg_layout_find(&l, AN_CG_MEMORY) < 0) miss(m, "cgroup memory controller");
  if (an_cg_layout_find(&l, AN_CG_PIDS) < 0) miss(m, "cgroup pids controller");
  an_cg_layout_clear(&l);
}

/* seccomp(2): SECCOMP_GET_ACTION_AVAIL for SECCOMP_RET_ALLOW succeeds when
 * filter mode is built in; the list of actions is in
 * /proc/sys/kernel/seccomp/actions_avail. */
static void probe_seccomp(struct an_jgen *g, struct missing *m) {
  bool avail = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
  uint32_t action = SECCOMP_RET_ALLOW;
  bool filter = syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
  an_jgen_key(g, "seccomp");
  an_jgen_map_open(g);
  an_jgen_kv_bool(g, "available", avail);
  an_jgen_kv_bool(g, "filter", filter);
  an_jgen_key(g, "actions");
  an_jgen_array_open(g);
  cleanup_free char *acts = read_small("/proc/sys/kernel/seccomp/actions_avail");
  char *save = NULL;
  for (char *t = acts ? strtok_r(acts, " ", &save) : NULL; t; t = strtok_r(NULL, " ", &save))
    an_jgen_str(g, t);
  an_jgen_array_close(g);
  an_jgen_map_close(g);
  if (!filter) miss(m, "seccomp filter mode");
}

/* Whether this process may make sandboxes: the runtime works as host root
 * (euid 0, CAP_SYS_ADMIN effective, in the initial user namespace: clone
 * namespaces, write other uid maps, create cgroups, own the store).  As
 * another user every create fails later with EPERM, so say it here. */
static bool initial_userns(void) {
  cleanup_free char *map = read_small("/proc/self/uid_map");
  unsigned long a, b, c;
  return map && sscanf(map, "%lu %lu %lu", &a, &b, &c) == 3 && a == 0 && b == 0 &&
         c == 4294967295ul;
}

/* Whether the caller is host root; *msg (size n) says why not. */
static bool privileged(bool *sys_admin_out, bool *init_ns_out, char *msg, size_t n) {
  bool sys_admin = false;
  cap_t caps = cap_get_proc();
  cap_flag_value_t v = CAP_CLEAR;
  if (caps && cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &v) == 0) sys_admin = v == CAP_SET;
  if (caps) cap_free(caps);
  bool init_ns = initial_userns();
  if (sys_admin_out) *sys_admin_out = sys_admin;
  if (init_ns_out) *init_ns_out = init_ns;
  snprintf(msg, n, "running as uid %u%s%s: sandboxes are made by host root "
           "(euid 0 with CAP_SYS_ADMIN in the initial user namespace); run agentnest as root",
           (unsigned) geteuid(), sys_admin ? "" : " without CAP_SYS_ADMIN",
           init_ns ? "" : " inside a user namespace");
  return geteuid() == 0 && sys_admin && init_ns;
}

int an_doctor_check_privilege(an_error_t *err) {
  char msg[256];
  if (privileged(NULL, NULL, msg, sizeof msg)) return 0;
  return an_error_set(err, EPERM, "%s", msg);
}

static void probe_privilege(struct an_jgen *g, struct missing *m) {
  bool sys_admin = false, init_ns = false;
  char msg[256];
  bool ok = privileged(&sys_admin, &init_ns, msg, sizeof msg);
  an_jgen_key(g, "privilege");
  an_jgen_map_open(g);
  an_jgen_kv_i64(g, "euid", (int64_t) geteuid());
  an_jgen_kv_bool(g, "cap_sys_admin", sys_admin);
  an_jgen_kv_bool(g, "initial_user_namespace", init_ns);
  an_jgen_kv_bool(g, "ok", ok);
  if (!ok) {
    an_jgen_kv_str(g, "error", msg);
    miss(m, "privilege: host root (euid 0, CAP_SYS_ADMIN, initial user namespace)");
  }
  an_jgen_map_close(g);
}

/* landlock_create_ruleset(2) with LANDLOCK_CREATE_RULESET_VERSION returns
 * the highest ABI version supported. */
static void probe_landlock(struct an_jgen *g) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  int e = errno;
  an_jgen_key(g, "landlock");
  an_jgen_map_open(g);
  an_jgen_kv_i64(g, "abi", abi > 0 ? abi : 0);
  if (abi < 0)
    an_jgen_kv_str(g, "error", e == ENOSYS ? "not built into this kernel (ENOSYS)"
                               : e == EOPNOTSUPP ? "disabled at boot (EOPNOTSUPP)"
                                                 : an_errno_name(e));
  an_jgen_map_close(g);
}

static void probe_nftables(struct an_jgen *g) {
  struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
  an_jgen_key(g, "nftables");
  an_jgen_map_open(g);
  an_jgen_kv_bool(g, "available", ctx != NULL);
  an_jgen_map_close(g);
  if (ctx) nft_ctx_free(ctx);
}

/* What --network allowlist|full needs, tried for real in a scratch netns
 * under the store root (net/egress.h): reported, not required (egress is
 * opt-in; a sandbox asking for it is refused where it cannot be enforced). */
static void probe_egress(struct an_jgen *g, const char *root) {
  an_error_t e = NULL;
  const char *step = NULL;
  int r = an_egress_probe(root, &step, &e);
  an_jgen_key(g, "egress");
  an_jgen_map_open(g);
  an_jgen_kv_bool(g, "netns", r >= 0 || (step && strcmp(step, "netns") != 0));
  an_jgen_kv_bool(g, "veth", r >= 0 || (step && strcmp(step, "nftables") == 0));
  an_jgen_kv_bool(g, "nftables", r >= 0);
  an_jgen_kv_bool(g, "available", r >= 0);
  if (r < 0) an_jgen_kv_str(g, "error", e ? e->msg : "?");
  an_jgen_map_close(g);
  an_error_free(&e);
}

/* mount_setattr(2) (Linux 5.12, with MOUNT_ATTR_IDMAP) answers an invalid
 * call with EBADF/EINVAL when it exists and ENOSYS when not.  Whether a
 * given filesystem supports idmapping is only known when mounting. */
static void probe_idmap(struct an_jgen *g) {
  long r = syscall(SYS_mount_setattr, -1, "", 0, NULL, (size_t) 0);
  bool has = !(r < 0 && errno == ENOSYS);
  struct utsname u;
  int maj = 0, min = 0;
  if (uname(&u) == 0) sscanf(u.release, "%d.%d", &maj, &min);
  an_jgen_key(g, "idmapped_mounts");
  an_jgen_map_open(g);
  an_jgen_kv_bool(g, "mount_setattr", has);
  an_jgen_kv_bool(g, "available", has && (maj > 5 || (maj == 5 && min >= 12)));
  an_jgen_map_close(g);
}

static void probe_openat2(struct an_jgen *g, struct missing *m) {
  struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS};
  long fd = syscall(SYS_openat2, AT_FDCWD, ".", &how, sizeof how);
  bool has = fd >= 0 || errno != ENOSYS;
  if (fd >= 0) close((int) fd);
  an_jgen_key(g, "openat2");
  an_jgen_map_open(g);
  an_jgen_kv_bool(g, "available", has);
  an_jgen_map_close(g);
  if (!has) miss(m, "openat2");
}

static void probe_pidfd_clone3(struct an_jgen *g, struct missing *m) {
  long fd = syscall(SYS_pidfd_open, getpid(), 0);
  bool pidfd = fd >= 0;
  if (fd >= 0) close((int) fd);
  /* clone3 with a NULL args pointer: EFAULT/EINVAL when it exists. */
  long r = syscall(SYS_clone3, NULL, 0);
  bool clone3 = !(r < 0 && errno == ENOSYS);
  an_jgen_key(g, "pidfd");
  an_jgen_map_open(g);
  an_jgen_kv_bool(g, "available", pidfd);
  an_jgen_map_close(g);
  an_jgen_key(g, "clone3");
  an_jgen_map_open(g);
  an_jgen_kv_bool(g, "available", clone3);
  an_jgen_map_close(g);
  if (!pidfd) miss(m, "pidfd_open");
}

static void probe_image_store(struct an_jgen *g, const char *root) {
  struct an_image_info **list = NULL;
  size_t n = 0;
  cleanup_error an_error_t err = NULL;
  int r = an_image_list(root, &list, &n, &err);
  an_jgen_key(g, "image_store");
  an_jgen_map_open(g);
  an_jgen_kv_str(g, "path", root);
  an_jgen_kv_i64(g, "images", r < 0 ? 0 : (int64_t) n);
  if (r < 0) an_jgen_kv_str(g, "error", err->msg);
  an_jgen_map_close(g);
  an_image_list_free(list, n);
}

/* mkdir -p root (0755: sandboxes traverse it under their own uids), then an unnamed O_TMPFILE in it proves writes. */
static int make_dirs(const char *path) {
  cleanup_free char *p = strdup(path);
  if (!p) return -ENOMEM;
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(p, 0755) < 0 && errno != EEXIST) return -errno;
    *s = '/';
  }
  if (mkdir(p, 0755) < 0 && errno != EEXIST) return -errno;
  return 0;
}

static void probe_state_dir(struct an_jgen *g, const char *root, struct missing *m) {
  char msg[256] = "";
  int r = make_dirs(root);
  if (r < 0) snprintf(msg, sizeof msg, "mkdir %s: %s", root, an_errno_name(-r));
  if (r == 0) {
    int fd = open(root, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
      r = -errno;
      snprintf(msg, sizeof msg, "create a file in %s: %s", root, an_errno_name(-r));
    } else {
      close(fd);
    }
  }
  an_jgen_key(g, "state_dir");
  an_jgen_map_open(g);
  an_jgen_kv_str(g, "path", root);
  an_jgen_kv_bool(g, "writable", r == 0);
  if (r < 0) an_jgen_kv_str(g, "error", msg);
  /* the parents must let the sandboxes' own host ids through (store_access.c) */
  cleanup_error an_error_t perr = NULL;
  bool reachable = an_sb_check_store_parents(root, &perr) == 0;
  an_jgen_kv_bool(g, "reachable_by_sandboxes", reachable);
  if (!reachable) an_jgen_kv_str(g, "reachable_error", perr->msg);
  an_jgen_map_close(g);
  if (r < 0) miss(m, "writable state directory");
  if (!reachable) miss(m, "store root reachable by sandboxes (parent directories searchable by others)");
}

/* How a workspace's --disk/--inodes would be enforced under this store
 * (workspace_quota.c); none of them refuses every sandbox. */
static void probe_workspace_quota(struct an_jgen *g, const char *root, struct missing *m) {
  char why[256];
  enum an_sb_ws_kind k = an_sb_ws_mechanism(root, why, sizeof why);
  an_jgen_key(g, "workspace_quota");
  an_jgen_map_open(g);
  an_jgen_kv_str(g, "mechanism", k == AN_SB_WS_PROJECT_QUOTA ? "project_quota"
                                 : k == AN_SB_WS_IMAGE ? "image" : "none");
  an_jgen_kv_str(g, "detail", why);
  an_jgen_map_close(g);
  if (k == AN_SB_WS_NONE) miss(m, "workspace quota (a project quota on the store, or loop devices, mke2fs and ext4)");
}

int an_doctor_probe(const char *root, char **json, bool *ok, an_error_t *err) {
  if (!root || !*root) return an_error_set(err, EINVAL, "doctor: no store root given");
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, true) < 0) return an_error_set(err, ENOMEM, "doctor report: JSON");
  struct an_jgen *g = &j;
  struct missing m = {.n = 0};
  an_jgen_map_open(g);
  probe_kernel(g);
  probe_privilege(g, &m);
  probe_namespaces(g, &m);
  probe_cgroup(g, &m);
  probe_seccomp(g, &m);
  probe_landlock(g);
  probe_nftables(g);
  probe_idmap(g);
  probe_openat2(g, &m);
  probe_pidfd_clone3(g, &m);
  probe_image_store(g, root);
  probe_state_dir(g, root, &m);
  probe_workspace_quota(g, root, &m);
  probe_egress(g, root);
  /* The verdict last: it is only known once every probe ran. */
  an_jgen_key(g, "missing");
  an_jgen_array_open(g);
  for (size_t i = 0; i < m.n; i++) an_jgen_str(g, m.what[i]);
  an_jgen_array_close(g);
  an_jgen_kv_bool(g, "ok", m.n == 0);
  an_jgen_map_close(g);

  int r = an_jgen_finish(&j, json, NULL);
  if (r < 0) return an_error_set(err, -r, "doctor report: JSON");
  *ok = m.n == 0;
  return 0;
}
