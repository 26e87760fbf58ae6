/* engine/cgroup.c — the cgroup manager behind agentnest/cgroup.h: names and
 * creates a container's cgroup in every mounted hierarchy, routes each
 * resource to the hierarchy that enforces its controller (the per-
 * controller writers live in cgroup_v1_*.c and cgroup_v2_*.c), and
 * tracks, freezes, kills and removes the processes inside.
 *
 * Where a cgroup lives (decision, differs from runc on purpose):
 *   cgroupsPath "/a/b" (absolute) and "a/b" (relative) both name a/b below
 *   the ROOT of every hierarchy (the mount's root; under a cgroup namespace
 *   that is the namespace root).  runc resolves a relative path against the
 *   runtime's own cgroup; we do not, because (1) on hybrid/v1 hosts the own
 *   cgroup differs per hierarchy (here memory:/process_api/<x> but cpu:/),
 *   (2) a later `delete`, the monitor and `agentnest prune` run in other
 *   cgroups and must find the same directory from the same string in the
 *   state file, and (3) on cgroup v2 nesting below the own cgroup would
 *   require enabling controllers in cgroups the runtime did not create.
 *   The engine's default is "agentnest/<id>", so every sandbox lives in
 *   <hierarchy>/agentnest/<id>.
 *
 * cgroup v2 controllers: the controllers a cgroup needs are enabled with
 * "+ctrl" in cgroup.subtree_control of the hierarchy root (the one cgroup
 * the runtime did not create that it writes, and only when the controller
 * is not already enabled there) and of every ancestor named by the path
 * (e.g. "agentnest"), never in the container cgroup itself (it holds
 * processes, so "no internal processes" forbids it; exec children carry no
 * controllers and are limited by their parent).  Enabled controllers are
 * left enabled on failure and destroy, as runc and crun do: they are
 * shared by sibling containers.  memory and pids are enabled whenever the
 * hierarchy has them, so that memory.events (OOM reporting) and
 * pids.current always exist.
 *
 * Which hierarchies (an_cgroup_create_used, the sandbox layer's choice):
 * on v1 and hybrid hosts every mounted hierarchy is one more mkdir, and
 * every process that enters the cgroup one more cgroup.procs write (a v1
 * migration, the costly part of an exec's join) and one more rmdir at the
 * end; a sandbox without a cpuset or blkio limit gains nothing from its
 * own cgroup in those hierarchies (nor ever from cpuacct, which only
 * counts).  So the cgroup is made in the hierarchies of the controllers
 * its resources name, plus memory and pids (OOM and pids-limit reporting,
 * always), freezer (pause, and kill without cgroup.kill), devices (the
 * device policy every container gets) and the cgroup2 hierarchy
 * (tracking, cgroup.kill).  Elsewhere its processes stay in the creator's
 * cgroup, which limits nothing of theirs either way; an_cgroup_open finds
 * the hierarchies a cgroup exists in (one stat each), so every later call
 * (exec's child cgroup, join, kill, destroy, prune) uses the same set.
 * an_cgroup_create (agentnest-oci: `update` may add any limit later, as
 * with runc) still makes it everywhere.
 *
 * Hybrid hosts: limits go to the v1 hierarchy of their controller; the
 * cgroup2 hierarchy, even without controllers, is used for tracking
 * (cgroup.procs), cgroup.kill and cgroup.freeze; a controller mounted only
 * in the cgroup2 hierarchy (hugetlb on this host) is used there. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "engine/cgroup_internal.h"
#include "util/cleanup.h"

#define WAIT_MS 5000

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Relative form of a cgroupsPath: one leading '/' dropped; no empty, "." or
 * ".." component; no control characters; each component at most 255 bytes. */
static int normalize_path(const char *in, char **out, size_t *depth, an_error_t *err) {
  if (!in || !*in) return an_error_set(err, EINVAL, "cgroup path is empty");
  const char *p = in[0] == '/' ? in + 1 : in;
  if (!*p) return an_error_set(err, EINVAL, "cgroup path \"%s\" names the hierarchy root", in);
  if (strlen(p) > 1024) return an_error_set(err, EINVAL, "cgroup path \"%s\" is too long", in);
  size_t n = 0;
  for (const char *c = p;;) {
    size_t len = strcspn(c, "/");
    if (len == 0) return an_error_set(err, EINVAL, "cgroup path \"%s\" has an empty component", in);
    if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
      return an_error_set(err, EINVAL, "cgroup path \"%s\" has a \"%.*s\" component", in, (int) len, c);
    if (len > 255) return an_error_set(err, EINVAL, "cgroup path \"%s\": component too long", in);
    for (size_t i = 0; i < len; i++)
      if ((unsigned char) c[i] < 0x20 || c[i] == 0x7f)
        return an_error_set(err, EINVAL, "cgroup path \"%s\" has a control character", in);
    n++;
    if (!c[len]) break;
    c += len + 1;
  }
  char *s = strdup(p);
  if (!s) return an_error_set(err, ENOMEM, "cgroup path");
  *out = s;
  *depth = n;
  return 0;
}

static void cg_free(struct an_cgroup *cg) {
  if (!cg) return;
  for (size_t i = 0; i < AN_CG_MAX_HIER; i++) free(cg->dir[i]);
  if (cg->unified_fd >= 0) close(cg->unified_fd);
  an_cg_layout_clear(&cg->l);
  free(cg->path);
  free(cg);
}

void an_cgroup_free(struct an_cgroup *cg) { cg_free(cg); }
static void cg_freep(struct an_cgroup **cg) { cg_free(*cg); }
#define cleanup_cgroup __attribute__((cleanup(cg_freep)))

/* A handle for normalized `path` (owned: taken over) with directories in
 * every hierarchy of the host's layout. */
/* A handle for `path` (taken); the layout is `from`'s (a handle of the
 * same process) or, when NULL, read from /proc/self/mountinfo. */
static int cg_new(char *path, size_t depth, const struct an_cg_layout *from,
                  struct an_cgroup **out, an_error_t *err) {
  struct an_cgroup *cg = calloc(1, sizeof *cg);
  if (!cg) { free(path); return an_error_set(err, ENOMEM, "cgroup handle"); }
  cg->path = path;
  cg->base_depth = depth;
  cg->unified_fd = -1;
  int r = from ? an_cg_layout_copy(&cg->l, from, err) : an_cg_layout_read(&cg->l, err);
  if (r < 0) { cg->l.n = 0; cg_free(cg); return r; }
  cg->present = cg->l.n >= 32 ? ~0u : (1u << cg->l.n) - 1;
  for (size_t i = 0; i < cg->l.n; i++)
    if (asprintf(&cg->dir[i], "%s/%s", cg->l.h[i].mount, path) < 0) {
      cg->dir[i] = NULL;
      cg_free(cg);
      return an_error_set(err, ENOMEM, "cgroup path");
    }
  /* tracking: the cgroup2 hierarchy when mounted, else a v1 one (pids,
   * freezer or memory preferred: they are the usual ones). */
  cg->tracking = cg->l.unified;
  if (cg->tracking < 0) {
    static const enum an_cg_ctrl pref[] = {AN_CG_PIDS, AN_CG_FREEZER, AN_CG_MEMORY};
    for (size_t k = 0; k < sizeof pref / sizeof pref[0] && cg->tracking < 0; k++)
      cg->tracking = an_cg_layout_find(&cg->l, pref[k]);
    if (cg->tracking < 0) cg->tracking = 0;
  }
  *out = cg;
  return 0;
}

static int open_unified_fd(struct an_cgroup *cg, an_error_t *err) {
  if (cg->l.unified < 0) return 0;
  cg->unified_fd = open(cg->dir[cg->l.unified], O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (cg->unified_fd < 0) return an_error_set(err, errno, "open cgroup %s", cg->dir[cg->l.unified]);
  return 0;
}

/* Index of the hierarchy enforcing `c` if the cgroup exists there, or -1. */
static int find_has(const struct an_cgroup *cg, enum an_cg_ctrl c) {
  int i = an_cg_layout_find(&cg->l, c);
  return i >= 0 && an_cg_has(cg, (size_t) i) ? i : -1;
}

/* The hierarchies a cgroup asking for `want` is made in by
 * an_cgroup_create_used (see the header comment): those enforcing a wanted
 * controller or memory, pids, freezer, devices, and the tracking one. */
static uint32_t used_hierarchies(const struct an_cgroup *cg, uint32_t want) {
  uint32_t need = want | AN_CG_BIT(AN_CG_MEMORY) | AN_CG_BIT(AN_CG_PIDS) |
                  AN_CG_BIT(AN_CG_FREEZER) | AN_CG_BIT(AN_CG_DEVICES);
  uint32_t m = 0;
  for (size_t i = 0; i < cg->l.n; i++)
    if ((cg->l.h[i].ctrls & need) || (int) i == cg->l.unified || (int) i == cg->tracking)
      m |= 1u << i;
  return m;
}

/* Fail closed: every controller `want` names must be enforceable here. */
static int check_available(const struct an_cg_layout *l, uint32_t want,
                           const struct an_spec_resources *res, an_error_t *err) {
  /* linux.resources.unified writes cgroup v2 files: each key's controller
   * must be in the cgroup2 hierarchy (runc refuses unified on v1 too). */
  for (size_t i = 0; res && i < res->n_unified; i++) {
    const char *k = res->unified[i].key;
    if (l->unified < 0)
      return an_error_set(err, EOPNOTSUPP, "linux.resources.unified: \"%s\" needs cgroup v2, "
                          "which is not mounted", k);
    if (!strncmp(k, "cgroup.", 7)) continue;
    size_t len = strcspn(k, ".");
    bool ok = false;
    for (int c = 0; c < AN_CG__COUNT; c++) {
      const char *n = an_cg_ctrl_v2_name(c);
      if (n && strlen(n) == len && !strncmp(n, k, len))
        ok = (l->h[l->unified].ctrls & AN_CG_BIT(c)) != 0;
    }
    if (!ok)
      return an_error_set(err, EOPNOTSUPP, "linux.resources.unified: cgroup controller \"%.*s\" "
                          "(for \"%s\") is not in the cgroup v2 hierarchy of this host", (int) len, k, k);
  }
  /* a huge page size the kernel does not offer, before anything is made */
  for (size_t i = 0; res && i < res->n_hugepage_limits; i++) {
    const char *ps = res->hugepage_limits[i].page_size;   /* validated: digits + K|M|G + "B" */
    char *end;
    unsigned long long kb = strtoull(ps, &end, 10) << (*end == 'G' ? 20 : *end == 'M' ? 10 : 0);
    char sys[96];
    snprintf(sys, sizeof sys, "/sys/kernel/mm/hugepages/hugepages-%llukB", kb);
    if (access(sys, F_OK) < 0)
      return an_error_set(err, EOPNOTSUPP, "linux.resources.hugepageLimits[%zu]: page size %s is "
                          "not offered by this kernel (no %s)", i, ps, sys);
  }
  for (int c = 0; c < AN_CG__COUNT; c++) {
    if (!(want & AN_CG_BIT(c))) continue;
    if (c == AN_CG_DEVICES) {
      if (an_cg_layout_find(l, AN_CG_DEVICES) < 0 && l->unified < 0)
        return an_error_set(err, EOPNOTSUPP, "%s: no devices cgroup controller and no cgroup2 "
                            "hierarchy for a device eBPF program on this host", an_cg_ctrl_field(c));
      continue;
    }
    if (an_cg_layout_find(l, c) < 0) {
      const char *name = an_cg_ctrl_v1_name(c);
      return an_error_set(err, EOPNOTSUPP, "%s: cgroup controller \"%s\" is not available on this host",
                          an_cg_ctrl_field(c), name ? name : "?");
    }
  }
  return 0;
}

/* "+memory" etc. into subtree_control of the root and of every ancestor of
 * the cgroup named by the path, for each v2 controller in `v2want`. */
static int enable_v2_controllers(struct an_cgroup *cg, uint32_t v2want, an_error_t *err) {
  if (cg->l.unified < 0 || !v2want) return 0;
  const char *mnt = cg->l.h[cg->l.unified].mount;
  cleanup_free char *dir = strdup(mnt);
  if (!dir) return an_error_set(err, ENOMEM, "cgroup path");
  const char *rest = cg->path;
  for (;;) {
    cleanup_free char *have = NULL;
    int r = an_cg_read(dir, "cgroup.subtree_control", &have, err);
    if (r < 0) return r;
    for (int c = 0; c < AN_CG__COUNT; c++) {
      const char *n = an_cg_ctrl_v2_name(c);
      if (!n || !(v2want & AN_CG_BIT(c))) continue;
      bool on = false;
      for (char *t = have; *t;) {
        size_t len = strcspn(t, " \n");
        if (len == strlen(n) && !strncmp(t, n, len)) on = true;
        t += len;
        while (*t == ' ' || *t == '\n') t++;
      }
      if (!on && (r = an_cg_writef(err, dir, "cgroup.subtree_control", "+%s", n)) < 0) return r;
    }
    const char *slash = strchr(rest, '/');
    if (!slash) return 0;                         /* next would be the leaf itself */
    char *nd = NULL;
    if (asprintf(&nd, "%s/%.*s", dir, (int) (slash - rest), rest) < 0)
      return an_error_set(err, ENOMEM, "cgroup path");
    free(dir);
    dir = nd;
    rest = slash + 1;
  }
}

static uint32_t v2_ctrls_of(const struct an_cg_layout *l, uint32_t want) {
  if (l->unified < 0) return 0;
  uint32_t v2 = 0;
  for (int c = 0; c < AN_CG__COUNT; c++)
    if ((want & AN_CG_BIT(c)) && an_cg_ctrl_v2_name(c) && an_cg_layout_find(l, c) == l->unified)
      v2 |= AN_CG_BIT(c);
  return v2;
}

/* Write every limit of `res` to the hierarchy enforcing it. */
static int apply_resources(struct an_cgroup *cg, const struct an_spec_resources *res,
                           bool with_devices, an_error_t *err) {
  const struct an_cg_layout *l = &cg->l;
  int r, i;
  if (with_devices) {
    if ((i = find_has(cg, AN_CG_DEVICES)) >= 0)
      r = an_cg_v1_devices_apply(cg->dir[i], res, err);
    else
      r = an_cg_v2_devices_apply(cg->unified_fd, cg->dir[l->unified], res, err);
    if (r < 0) return r;
  }
  if (!res) return 0;
#define V(ctrl) ((i = find_has(cg, ctrl)) >= 0)
#define IS2 (l->h[i].version == 2)
  if (V(AN_CG_MEMORY) && (r = IS2 ? an_cg_v2_memory_apply(cg->dir[i], res, err)
                                  : an_cg_v1_memory_apply(cg->dir[i], res, err)) < 0) return r;
  if (V(AN_CG_CPUSET) && (r = an_cg_cpuset_apply(cg->dir[i], res, err)) < 0) return r;
  if (V(AN_CG_CPU)) {
    if (IS2)
      r = an_cg_v2_cpu_apply(cg->dir[i], res, err);
    else {
      int a = find_has(cg, AN_CG_CPUACCT);
      r = an_cg_v1_cpu_apply(cg->dir[i], a >= 0 ? cg->dir[a] : NULL, res, err);
    }
    if (r < 0) return r;
  }
  if (V(AN_CG_PIDS) && (r = IS2 ? an_cg_v2_pids_apply(cg->dir[i], res, err)
                                : an_cg_v1_pids_apply(cg->dir[i], res, err)) < 0) return r;
  if (V(AN_CG_IO) && (r = IS2 ? an_cg_v2_io_apply(cg->dir[i], res, err)
                              : an_cg_v1_blkio_apply(cg->dir[i], res, err)) < 0) return r;
  if (V(AN_CG_HUGETLB) && (r = an_cg_hugetlb_apply(cg->dir[i], l->h[i].version, res, err)) < 0)
    return r;
#undef V
#undef IS2
  if (l->unified >= 0 && (r = an_cg_v2_unified_apply(cg->dir[l->unified], res, err)) < 0) return r;
  return 0;
}

/* mkdir every component of path below `mount`; *first_created is the index
 * of the first component this call created (depth if none). */
static int mkdir_path(const char *mount, const char *path, size_t depth, size_t *first_created,
                      an_error_t *err) {
  *first_created = depth;
  for (int attempt = 0;; attempt++) {
    size_t k = 0;
    int again = 0;
    for (const char *c = path;; k++) {
      size_t len = strcspn(c, "/");
      cleanup_free char *d = NULL;
      if (asprintf(&d, "%s/%.*s", mount, (int) (c - path + len), path) < 0)
        return an_error_set(err, ENOMEM, "cgroup path");
      if (mkdir(d, 0755) == 0) {
        if (*first_created == depth) *first_created = k;
        /* A kernfs inode's times are those of its instantiation, made again
         * when the inode is evicted and looked up; times that were set are
         * kept with the node.  So the leaf's mtime stays its creation time
         * (later raised by child cgroups made or removed), which prune's
         * grace for a create in progress reads. */
        if (!c[len]) (void) utimensat(AT_FDCWD, d, NULL, 0);
      } else if (errno == EEXIST) {
        if (!c[len]) return an_error_set(err, EEXIST, "create cgroup %s", d);
      } else if (errno == ENOENT && attempt < 3) {
        again = 1;                 /* an ancestor vanished under a sibling's cleanup: retry */
        break;
      } else
        return an_error_set(err, errno, "create cgroup %s", d);
      if (!c[len]) break;
      c += len + 1;
    }
    if (!again) return 0;
  }
}

/* Remove what mkdir_path created: the leaf (and anything below it), then
 * each created ancestor if still empty (a sibling may have appeared). */
static void rmdir_created(const char *mount, const char *path, size_t depth, size_t first) {
  cleanup_free char *p = NULL;
  if (asprintf(&p, "%s/%s", mount, path) < 0) return;
  an_error_t e = NULL;
  an_cg_rmdir_tree(p, &e);
  an_error_free(&e);
  size_t mlen = strlen(mount);
  for (size_t k = depth; k-- > first + 1;) {
    char *slash = strrchr(p + mlen + 1, '/');
    if (!slash) break;
    *slash = '\0';
    rmdir(p);
  }
}

static int v1_cpuset_init_path(const char *mount, const char *path, an_error_t *err) {
  for (const char *c = path;;) {
    size_t len = strcspn(c, "/");
    cleanup_free char *d = NULL;
    if (asprintf(&d, "%s/%.*s", mount, (int) (c - path + len), path) < 0)
      return an_error_set(err, ENOMEM, "cgroup path");
    int r = an_cg_v1_cpuset_init(d, err);
    if (r < 0) return r;
    if (!c[len]) return 0;
    c += len + 1;
  }
}

static int cg_create(const char *path, const struct an_spec_resources *res, bool used_only,
                     struct an_cgroup **out, an_error_t *err) {
  char *norm = NULL;
  size_t depth = 0;
  int r = normalize_path(path, &norm, &depth, err);
  if (r < 0) return r;
  cleanup_cgroup struct an_cgroup *cg = NULL;
  if ((r = cg_new(norm, depth, NULL, &cg, err)) < 0) return r;
  if ((r = an_cg_validate_resources(res, err)) < 0) return r;
  uint32_t want = an_cg_wanted_ctrls(res, true);
  if ((r = check_available(&cg->l, want, res, err)) < 0) return r;
  if (used_only) cg->present = used_hierarchies(cg, want);
  for (size_t i = 0; i < cg->l.n; i++) {
    struct stat st;
    if (an_cg_has(cg, i) && stat(cg->dir[i], &st) == 0)
      return an_error_set(err, EEXIST, "create cgroup %s", cg->dir[i]);
  }
  size_t first[AN_CG_MAX_HIER];
  for (size_t i = 0; i < AN_CG_MAX_HIER; i++) first[i] = depth;   /* nothing made there */
  size_t made = 0;
  for (; made < cg->l.n; made++) {
    if (!an_cg_has(cg, made)) continue;
    r = mkdir_path(cg->l.h[made].mount, cg->path, depth, &first[made], err);
    if (r < 0) break;
    if (cg->l.h[made].version == 1 && (cg->l.h[made].ctrls & AN_CG_BIT(AN_CG_CPUSET)) &&
        (r = v1_cpuset_init_path(cg->l.h[made].mount, cg->path, err)) < 0) {
      made++;
      break;
    }
  }
  if (r >= 0) {
    uint32_t v2want = v2_ctrls_of(&cg->l, want | AN_CG_BIT(AN_CG_MEMORY) | AN_CG_BIT(AN_CG_PIDS));
    r = enable_v2_controllers(cg, v2want, err);
  }
  if (r >= 0) r = open_unified_fd(cg, err);
  if (r >= 0) r = apply_resources(cg, res, true, err);
  if (r < 0) {
    for (size_t i = 0; i < made; i++)
      if (first[i] < depth) rmdir_created(cg->l.h[i].mount, cg->path, depth, first[i]);
    return an_error_prefix(err, "cgroup %s", cg->path);
  }
  *out = an_steal(&cg);
  return 0;
}

int an_cgroup_create(const char *path, const struct an_spec_resources *res,
                     struct an_cgroup **out, an_error_t *err) {
  return cg_create(path, res, false, out, err);
}

int an_cgroup_create_used(const char *path, const struct an_spec_resources *res,
                          struct an_cgroup **out, an_error_t *err) {
  return cg_create(path, res, true, out, err);
}

int an_cgroup_open(const char *path, struct an_cgroup **out, an_error_t *err) {
  char *norm = NULL;
  size_t depth = 0;
  int r = normalize_path(path, &norm, &depth, err);
  if (r < 0) return r;
  cleanup_cgroup struct an_cgroup *cg = NULL;
  if ((r = cg_new(norm, depth, NULL, &cg, err)) < 0) return r;
  struct stat st;
  if (stat(cg->dir[cg->tracking], &st) < 0) return an_error_set(err, errno, "open cgroup %s", cg->dir[cg->tracking]);
  /* the hierarchies it was made in (an_cgroup_create_used: not all) */
  for (size_t i = 0; i < cg->l.n; i++)
    if ((int) i != cg->tracking && stat(cg->dir[i], &st) < 0) cg->present &= ~(1u << i);
  if ((r = open_unified_fd(cg, err)) < 0) return r;
  *out = an_steal(&cg);
  return 0;
}

/* A handle for `parent`/`name`, with the parent's layout. */
static int child_new(const struct an_cgroup *parent, const char *name, struct an_cgroup **out,
                     an_error_t *err) {
  if (!name || !*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
    return an_error_set(err, EINVAL, "child cgroup name \"%s\" is not one path component",
                        name ? name : "");
  char *p = NULL;
  if (asprintf(&p, "%s/%s", parent->path, name) < 0) return an_error_set(err, ENOMEM, "cgroup path");
  char *norm = NULL;
  size_t depth = 0;
  int r = normalize_path(p, &norm, &depth, err);
  free(p);
  if (r < 0) return r;
  if ((r = cg_new(norm, parent->base_depth, &parent->l, out, err)) < 0) return r;
  (*out)->present = parent->present;   /* a child lives where its parent does */
  return 0;
}

int an_cgroup_open_child(const struct an_cgroup *parent, const char *name, struct an_cgroup **out,
                         an_error_t *err) {
  cleanup_cgroup struct an_cgroup *cg = NULL;
  int r = child_new(parent, name, &cg, err);
  if (r < 0) return r;
  struct stat st;
  if (stat(cg->dir[cg->tracking], &st) < 0)
    return an_error_set(err, errno, "open cgroup %s", cg->dir[cg->tracking]);
  if ((r = open_unified_fd(cg, err)) < 0) return r;
  *out = an_steal(&cg);
  return 0;
}

int an_cgroup_create_child(struct an_cgroup *parent, const char *name,
                           struct an_cgroup **out, an_error_t *err) {
  cleanup_cgroup struct an_cgroup *cg = NULL;
  int r = child_new(parent, name, &cg, err);
  if (r < 0) return r;
  size_t made = 0;
  for (; made < cg->l.n; made++) {
    if (!an_cg_has(cg, made)) continue;
    if (mkdir(cg->dir[made], 0755) < 0) { r = an_error_set(err, errno, "create cgroup %s", cg->dir[made]); break; }
    if (cg->l.h[made].version == 1 && (cg->l.h[made].ctrls & AN_CG_BIT(AN_CG_CPUSET)) &&
        (r = an_cg_v1_cpuset_init(cg->dir[made], err)) < 0) { made++; break; }
  }
  if (r >= 0) r = open_unified_fd(cg, err);
  if (r < 0) {
    for (size_t i = 0; i < made; i++)
      if (an_cg_has(cg, i)) rmdir(cg->dir[i]);
    return r;
  }
  *out = an_steal(&cg);
  return 0;
}

int an_cgroup_apply(struct an_cgroup *cg, const struct an_spec_resources *res, an_error_t *err) {
  int r = an_cg_validate_resources(res, err);
  if (r < 0) return r;
  bool devices = res && res->n_devices > 0;
  uint32_t want = an_cg_wanted_ctrls(res, devices);
  if ((r = check_available(&cg->l, want, res, err)) < 0) return r;
  /* fail closed: a limit for a hierarchy the cgroup was not made in
   * (an_cgroup_create_used) would be written nowhere */
  for (int c = 0; c < AN_CG__COUNT; c++) {
    int i = an_cg_layout_find(&cg->l, c);
    if ((want & AN_CG_BIT(c)) && i >= 0 && !an_cg_has(cg, (size_t) i))
      return an_error_set(err, EOPNOTSUPP, "update cgroup %s: %s: the cgroup was made without the "
                          "%s hierarchy (only those its limits used at create)", cg->path,
                          an_cg_ctrl_field(c), cg->l.h[i].mount);
  }
  if ((r = enable_v2_controllers(cg, v2_ctrls_of(&cg->l, want), err)) < 0) return r;
  if ((r = apply_resources(cg, res, devices, err)) < 0)
    return an_error_prefix(err, "update cgroup %s", cg->path);
  return 0;
}

int an_cgroup_enter(struct an_cgroup *cg, pid_t pid, an_error_t *err) {
  /* v1 hierarchies first, the cgroup2 one (tracking) last. */
  for (size_t i = 0; i < cg->l.n; i++)
    if ((int) i != cg->l.unified && an_cg_has(cg, i)) {
      int r = an_cg_writef(err, cg->dir[i], "cgroup.procs", "%d", (int) pid);
      if (r < 0) return r;
    }
  if (cg->l.unified >= 0) return an_cg_writef(err, cg->dir[cg->l.unified], "cgroup.procs", "%d", (int) pid);
  return 0;
}

int an_cgroup_clone_fd(const struct an_cgroup *cg) {
  return cg->l.layout == AN_CGROUP_UNIFIED ? cg->unified_fd : -1;
}

const char *an_cgroup_path(const struct an_cgroup *cg) { return cg->path; }

int an_cgroup_pids(struct an_cgroup *cg, pid_t **pids, size_t *n, an_error_t *err) {
  pid_t *v = NULL;
  size_t cnt = 0, cap = 0;
  int r = an_cg_collect_pids(cg->dir[cg->tracking], &v, &cnt, &cap, err);
  if (r < 0) { free(v); return r; }
  *pids = v;
  *n = cnt;
  return 0;
}

/* The hierarchy that holds the freezer: a v1 freezer controller where one
 * is mounted (hybrid hosts: what runc uses and what engines read back in
 * freezer.state), else cgroup2's cgroup.freeze. */
static int freeze_dir(struct an_cgroup *cg, bool frozen, an_error_t *err) {
  int i = find_has(cg, AN_CG_FREEZER);
  if (i >= 0 && cg->l.h[i].version == 1) return an_cg_v1_freezer_set(cg->dir[i], frozen, err);
  if (cg->l.unified >= 0 && an_cg_file_exists(cg->dir[cg->l.unified], "cgroup.freeze"))
    return an_cg_v2_freeze_set(cg->dir[cg->l.unified], frozen, err);
  return an_error_set(err, EOPNOTSUPP, "freeze cgroup %s: no cgroup.freeze and no freezer controller",
                      cg->path);
}

int an_cgroup_freeze(struct an_cgroup *cg, bool frozen, an_error_t *err) {
  return freeze_dir(cg, frozen, err);
}

static int signal_all(struct an_cgroup *cg, int sig, size_t *sent, an_error_t *err) {
  cleanup_free pid_t *pids = NULL;
  size_t n = 0;
  int r = an_cgroup_pids(cg, &pids, &n, err);
  if (r < 0) return r;
  for (size_t k = 0; k < n; k++)
    if (kill(pids[k], sig) < 0 && errno != ESRCH)
      return an_error_set(err, errno, "kill %d (cgroup %s)", (int) pids[k], cg->path);
  *sent = n;
  return 0;
}

/* Whether the cgroup itself is frozen now (by an earlier an_cgroup_freeze
 * of it): a v1 cgroup whose ancestor is frozen reads FROZEN in
 * freezer.state too, but only the ancestor's thaw ends that
 * (freezer.self_freezing 0), as cgroup2's cgroup.freeze is its own. */
static bool is_frozen(struct an_cgroup *cg) {
  an_error_t e = NULL;
  bool frozen = false;
  int i = find_has(cg, AN_CG_FREEZER);   /* as freeze_dir */
  if (i >= 0 && cg->l.h[i].version == 1) {
    cleanup_free char *s = NULL;
    if (an_cg_read(cg->dir[i], "freezer.self_freezing", &s, &e) == 0) frozen = s[0] == '1';
    else {
      an_error_free(&e);
      frozen = an_cg_read(cg->dir[i], "freezer.state", &s, &e) == 0 && strncmp(s, "THAWED", 6);
    }
  } else if (cg->l.unified >= 0 && an_cg_file_exists(cg->dir[cg->l.unified], "cgroup.freeze")) {
    cleanup_free char *s = NULL;
    frozen = an_cg_read(cg->dir[cg->l.unified], "cgroup.freeze", &s, &e) == 0 && s[0] == '1';
  }
  an_error_free(&e);
  return frozen;
}

int an_cgroup_kill(struct an_cgroup *cg, int sig, an_error_t *err) {
  if (sig == SIGKILL && cg->l.unified >= 0 && an_cg_file_exists(cg->dir[cg->l.unified], "cgroup.kill")) {
    int r = an_cg_write(cg->dir[cg->l.unified], "cgroup.kill", "1", err);
    if (r >= 0) an_cg_mark_killed(cg->dir[cg->l.unified]);
    /* cgroup.kill does not thaw a v1 freezer (a hybrid host): its frozen
     * tasks act on the SIGKILL only once thawed (a sandbox destroyed while
     * a snapshot froze it stayed alive) */
    if (r >= 0 && is_frozen(cg)) {
      an_error_t terr = NULL;
      int t = freeze_dir(cg, false, &terr);
      if (t < 0) { r = t; if (err && !*err) *err = terr; else an_error_free(&terr); }
      else an_error_free(&terr);
    }
    return r;
  }
  /* No cgroup.kill: freeze so that nothing forks between listing and
   * signalling (runc's signalAllProcesses), signal every pid, thaw.  A
   * cgroup paused by the caller stays paused, except for SIGKILL (frozen
   * v1 tasks only die once thawed). */
  bool paused = is_frozen(cg);
  if (paused && sig != SIGKILL) {
    size_t sent = 0;
    return signal_all(cg, sig, &sent, err);
  }
  an_error_t ferr = NULL;
  bool frozen = freeze_dir(cg, true, &ferr) == 0;
  an_error_free(&ferr);
  size_t sent = 0;
  int r = signal_all(cg, sig, &sent, err);
  if (frozen) {
    an_error_t terr = NULL;
    int t = freeze_dir(cg, false, &terr);
    if (r >= 0 && t < 0) { r = t; if (err && !*err) *err = terr; else an_error_free(&terr); }
    else an_error_free(&terr);
  }
  return r;
}

/* Event counters of a controller, for a container or exec cgroup:
 *  - v1 counts per cgroup only, so the subtree is summed;
 *  - v2 memory.events "oom_kill" counts the kills of victims in the cgroup
 *    and all its descendants (hierarchical unless cgroup2 is mounted with
 *    memory_localevents); memory.events.local would miss a victim in an
 *    exec's child cgroup, so it is not used.  pids.events "max" is counted
 *    where the fork failed (kernels < 6.12) or hierarchically (later).  A
 *    cgroup without the controller enabled (an exec child on v2) reports
 *    its nearest ancestor inside the container, which has it. */
struct event_sum { const char *file, *key; uint64_t *sum; };

static int event_visit(const char *dir, void *arg, an_error_t *err) {
  struct event_sum *e = arg;
  uint64_t v = 0;
  int r = an_cg_read_key(dir, e->file, e->key, &v, err);
  if (r < 0) return r;
  *e->sum += v;
  return 0;
}

static int v1_event_sum(const char *dir, const char *file, const char *key, uint64_t *sum,
                        an_error_t *err) {
  struct event_sum e = {file, key, sum};
  return an_cg_walk(dir, event_visit, NULL, &e, false, err);
}

/* `v1_from_base`: on v1 sum from the container cgroup down, not from this
 * (exec) cgroup: kernels >= 6.12 count pids "max" at the cgroup whose limit
 * was hit (the container's), older ones where the fork failed. */
static int read_event(struct an_cgroup *cg, enum an_cg_ctrl c, const char *v1file,
                      const char *v2file, const char *key, bool v1_from_base, uint64_t *count,
                      an_error_t *err) {
  int i = find_has(cg, c);
  if (i < 0)
    return an_error_set(err, EOPNOTSUPP, "cgroup %s: no %s controller", cg->path, an_cg_ctrl_v1_name(c));
  cleanup_free char *dir = strdup(cg->dir[i]);
  if (!dir) return an_error_set(err, ENOMEM, "cgroup path");
  size_t depth = 1;
  for (const char *s = cg->path; *s; s++) depth += *s == '/';
  if (cg->l.h[i].version == 1) {
    for (; v1_from_base && depth > cg->base_depth; depth--) *strrchr(dir, '/') = '\0';
    *count = 0;
    return v1_event_sum(dir, v1file, key, count, err);
  }
  while (!an_cg_file_exists(dir, v2file)) {
    if (depth <= cg->base_depth)
      return an_error_set(err, EOPNOTSUPP, "cgroup %s: %s controller not enabled", cg->path,
                          an_cg_ctrl_v2_name(c));
    *strrchr(dir, '/') = '\0';
    depth--;
  }
  return an_cg_read_key(dir, v2file, key, count, err);
}

int an_cgroup_oom_kills(struct an_cgroup *cg, uint64_t *count, an_error_t *err) {
  return read_event(cg, AN_CG_MEMORY, "memory.oom_control", "memory.events", "oom_kill", false, count,
                    err);
}

int an_cgroup_pids_max_events(struct an_cgroup *cg, uint64_t *count, an_error_t *err) {
  return read_event(cg, AN_CG_PIDS, "pids.events", "pids.events", "max", true, count, err);
}

static int wait_empty(struct an_cgroup *cg, an_error_t *err) {
  if (cg->l.unified >= 0 && an_cg_file_exists(cg->dir[cg->l.unified], "cgroup.events")) {
    int r = an_cg_wait_key(cg->dir[cg->l.unified], "cgroup.events", "populated", 0, WAIT_MS, err);
    return r == -ETIMEDOUT ? -EBUSY : r;
  }
  for (long waited = 0;; waited += 10) {
    cleanup_free pid_t *pids = NULL;
    size_t n = 0;
    int r = an_cgroup_pids(cg, &pids, &n, err);
    if (r < 0) return r;
    if (n == 0) return 0;
    if (waited >= WAIT_MS)
      return an_error_set(err, EBUSY, "cgroup %s: %zu processes remain after SIGKILL", cg->path, n);
    size_t sent;
    if ((r = signal_all(cg, SIGKILL, &sent, err)) < 0) return r;
    sleep_ms(10);
  }
}

/* The "agentnest" subtree is the runtime's own (DESIGN.md, "Host
 * realities"): once a cgroup below it is gone, its ancestors up to and
 * including "agentnest" are removed when empty, so an idle host keeps no
 * trace.  rmdir fails harmlessly (ENOTEMPTY/EBUSY) while siblings live; a
 * concurrent create that loses its parent this way retries (mkdir_path).
 * Ancestors of any other cgroupsPath may be someone else's and stay. */
static void rmdir_owned_ancestors(const char *mount, const char *path) {
  static const char owned[] = "agentnest/";
  if (strncmp(path, owned, sizeof owned - 1) != 0) return;
  cleanup_free char *p = NULL;
  if (asprintf(&p, "%s/%s", mount, path) < 0) return;
  size_t stop = strlen(mount) + 1 + sizeof owned - 2;   /* p[stop] ends ".../agentnest" */
  for (char *slash; (slash = strrchr(p, '/')) && (size_t) (slash - p) >= stop;) {
    *slash = '\0';
    if (rmdir(p) < 0) return;
  }
}

int an_cgroup_destroy(struct an_cgroup *cg, an_error_t *err) {
  struct stat st;
  if (stat(cg->dir[cg->tracking], &st) == 0) {
    int r = an_cgroup_kill(cg, SIGKILL, err);
    if (r < 0) return an_error_prefix(err, "destroy cgroup %s", cg->path);
    if ((r = wait_empty(cg, err)) < 0) return an_error_prefix(err, "destroy cgroup %s", cg->path);
  }
  int ret = 0;
  for (size_t i = 0; i < cg->l.n; i++) {
    if (!an_cg_has(cg, i)) continue;
    int r = an_cg_rmdir_tree(cg->dir[i], err);
    if (r < 0 && ret == 0) ret = r;
    if (r == 0) rmdir_owned_ancestors(cg->l.h[i].mount, cg->path);
  }
  return ret;
}
