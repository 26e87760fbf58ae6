/* engine/cgroup_layout.c — which cgroup hierarchies the host mounts and
 * which controllers each enforces, read from /proc/self/mountinfo
 * (proc(5), "mountinfo") and the cgroup2 root's cgroup.controllers.
 * Also an_cgroup_detect() of the public API. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/cgroup_internal.h"
#include "util/cleanup.h"

static const char *const v1_names[AN_CG__COUNT] = {
  [AN_CG_CPU] = "cpu", [AN_CG_CPUACCT] = "cpuacct", [AN_CG_CPUSET] = "cpuset",
  [AN_CG_MEMORY] = "memory", [AN_CG_PIDS] = "pids", [AN_CG_IO] = "blkio",
  [AN_CG_HUGETLB] = "hugetlb", [AN_CG_DEVICES] = "devices", [AN_CG_FREEZER] = "freezer",
  [AN_CG_RDMA] = "rdma", [AN_CG_MISC] = "misc", [AN_CG_NET_CLS] = "net_cls",
  [AN_CG_NET_PRIO] = "net_prio", [AN_CG_PERF_EVENT] = "perf_event",
};
static const char *const v2_names[AN_CG__COUNT] = {
  [AN_CG_CPU] = "cpu", [AN_CG_CPUSET] = "cpuset", [AN_CG_MEMORY] = "memory",
  [AN_CG_PIDS] = "pids", [AN_CG_IO] = "io", [AN_CG_HUGETLB] = "hugetlb",
  [AN_CG_RDMA] = "rdma", [AN_CG_MISC] = "misc", [AN_CG_PERF_EVENT] = "perf_event",
};

const char *an_cg_ctrl_v1_name(enum an_cg_ctrl c) { return c < AN_CG__COUNT ? v1_names[c] : NULL; }
const char *an_cg_ctrl_v2_name(enum an_cg_ctrl c) { return c < AN_CG__COUNT ? v2_names[c] : NULL; }

static int ctrl_by_name(const char *const names[], const char *s, size_t len) {
  for (int c = 0; c < AN_CG__COUNT; c++)
    if (names[c] && strlen(names[c]) == len && !strncmp(names[c], s, len)) return c;
  return -1;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape_octal(char *s) {
  char *w = s;
  for (char *r = s; *r;) {
    if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' &&
        r[3] >= '0' && r[3] <= '7') {
      *w++ = (char) (((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
      r += 4;
    } else
      *w++ = *r++;
  }
  *w = '\0';
}

static uint32_t parse_ctrl_list(const char *const names[], const char *s, const char *seps) {
  uint32_t set = 0;
  while (*s) {
    size_t len = strcspn(s, seps);
    int c = ctrl_by_name(names, s, len);
    if (c >= 0) set |= AN_CG_BIT(c);
    s += len;
    while (*s && strchr(seps, *s)) s++;
  }
  return set;
}

static int add_hier(struct an_cg_layout *l, int version, const char *mnt, uint32_t ctrls,
                    an_error_t *err) {
  for (size_t i = 0; i < l->n; i++) {
    if (l->h[i].version != version) continue;
    if (version == 2 || l->h[i].ctrls == ctrls) return 0;   /* same hierarchy mounted again */
  }
  if (l->n == AN_CG_MAX_HIER) return 0;
  char *m = strdup(mnt);
  if (!m) return an_error_set(err, ENOMEM, "cgroup layout");
  l->h[l->n] = (struct an_cg_hier){version, m, ctrls};
  if (version == 2) l->unified = (int) l->n;
  l->n++;
  return 0;
}

/* Forget hierarchies mounted at or below `mnt` (mountinfo lists mounts in
 * the order they were made, so a later line shadows them; e.g. a tmpfs over
 * /sys/fs/cgroup/unified, as used to run crun here, hides cgroup2). */
static void hide_below(struct an_cg_layout *l, const char *mnt) {
  size_t len = strlen(mnt);
  for (size_t i = 0; i < l->n;) {
    const char *m = l->h[i].mount;
    bool below = !strncmp(m, mnt, len) && (m[len] == '\0' || m[len] == '/' || (len == 1 && mnt[0] == '/'));
    if (!below) { i++; continue; }
    free(l->h[i].mount);
    l->h[i] = l->h[--l->n];
  }
  l->unified = -1;
  for (size_t i = 0; i < l->n; i++)
    if (l->h[i].version == 2) l->unified = (int) i;
}

int an_cg_layout_read(struct an_cg_layout *l, an_error_t *err) {
  memset(l, 0, sizeof *l);
  l->unified = -1;
  /* stdio reads /proc files 1 KiB at a time (st_blksize): with a
   * workspace mount per live sandbox that was ~90 read(2)s at 500
   * sandboxes, per create and per exec; a 64 KiB buffer (glibc ignores
   * setvbuf's size without one) reads it in a few.  Freed after f. */
  enum { MOUNTINFO_BUF = 64 * 1024 };
  cleanup_free char *buf = malloc(MOUNTINFO_BUF);
  cleanup_fclose FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f) return an_error_set(err, errno, "open /proc/self/mountinfo");
  if (buf) setvbuf(f, buf, _IOFBF, MOUNTINFO_BUF);
  cleanup_free char *line = NULL;
  size_t cap = 0;
  int r = 0;
  while (getline(&line, &cap, f) > 0) {
    /* id parent maj:min root mountpoint opts [optional...] - fstype source superopts */
    char *sep = strstr(line, " - ");
    if (!sep) continue;
    *sep = '\0';
    char fstype[32], super[512];
    if (sscanf(sep + 3, "%31s %*s %511s", fstype, super) != 2) continue;
    bool v2 = !strcmp(fstype, "cgroup2"), v1 = !strcmp(fstype, "cgroup");
    char root[4096], mnt[4096];
    if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2) continue;
    unescape_octal(mnt);
    hide_below(l, mnt);           /* a later mount over a hierarchy hides it */
    if (!v1 && !v2) continue;
    if (v1) {
      uint32_t ctrls = parse_ctrl_list(v1_names, super, ",");
      if (!ctrls) continue;                           /* name=systemd and the like */
      r = add_hier(l, 1, mnt, ctrls, err);
    } else
      r = add_hier(l, 2, mnt, 0, err);
    if (r < 0) { an_cg_layout_clear(l); return r; }
  }
  if (l->unified >= 0) {
    cleanup_free char *ctl = NULL;
    struct an_cg_hier *u = &l->h[l->unified];
    r = an_cg_read(u->mount, "cgroup.controllers", &ctl, err);
    if (r < 0) { an_cg_layout_clear(l); return r; }
    u->ctrls = parse_ctrl_list(v2_names, ctl, " \n");
  }
  bool any_v1 = l->n > (l->unified >= 0 ? 1u : 0u);
  if (l->n == 0) return an_error_set(err, ENOENT, "no cgroup filesystem mounted (/proc/self/mountinfo)");
  l->layout = !any_v1 ? AN_CGROUP_UNIFIED : l->unified >= 0 ? AN_CGROUP_HYBRID : AN_CGROUP_LEGACY;
  return 0;
}

int an_cg_layout_copy(struct an_cg_layout *dst, const struct an_cg_layout *src, an_error_t *err) {
  *dst = *src;
  for (size_t i = 0; i < src->n; i++)
    if (!(dst->h[i].mount = strdup(src->h[i].mount))) {
      dst->n = i;
      an_cg_layout_clear(dst);
      return an_error_set(err, ENOMEM, "cgroup layout");
    }
  return 0;
}

void an_cg_layout_clear(struct an_cg_layout *l) {
  for (size_t i = 0; i < l->n; i++) free(l->h[i].mount);
  l->n = 0;
  l->unified = -1;
}

int an_cg_layout_find(const struct an_cg_layout *l, enum an_cg_ctrl c) {
  for (size_t i = 0; i < l->n; i++)
    if (l->h[i].version == 1 && (l->h[i].ctrls & AN_CG_BIT(c))) return (int) i;
  if (l->unified >= 0 && v2_names[c] && (l->h[l->unified].ctrls & AN_CG_BIT(c))) return l->unified;
  return -1;
}

int an_cgroup_detect(enum an_cgroup_layout *layout, an_error_t *err) {
  struct an_cg_layout l;
  int r = an_cg_layout_read(&l, err);
  if (r < 0) return r;
  *layout = l.layout;
  an_cg_layout_clear(&l);
  return 0;
}

const char *an_cgroup_layout_name(enum an_cgroup_layout layout) {
  switch (layout) {
  case AN_CGROUP_UNIFIED: return "unified";
  case AN_CGROUP_HYBRID: return "hybrid";
  case AN_CGROUP_LEGACY: return "legacy";
  }
  return "unknown";
}
