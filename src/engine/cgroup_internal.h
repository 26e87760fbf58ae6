/* engine/cgroup_internal.h — what the cgroup manager (cgroup.c) shares with
 * its helpers: the host layout (cgroup_layout.c), file access
 * (cgroup_fs.c), value checks (cgroup_validate.c) and the one-file-per-
 * controller writers cgroup_v1_*.c / cgroup_v2_*.c.  Not a public API. */
#ifndef AN_ENGINE_CGROUP_INTERNAL_H
#define AN_ENGINE_CGROUP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "agentnest/cgroup.h"
#include "agentnest/error.h"
#include "agentnest/spec.h"

/* Controllers, as bit numbers.  AN_CG_IO is "blkio" on v1 and "io" on v2;
 * AN_CG_DEVICES and AN_CG_FREEZER have no v2 controller (eBPF program and
 * the core cgroup.freeze file instead). */
enum an_cg_ctrl {
  AN_CG_CPU, AN_CG_CPUACCT, AN_CG_CPUSET, AN_CG_MEMORY, AN_CG_PIDS, AN_CG_IO,
  AN_CG_HUGETLB, AN_CG_DEVICES, AN_CG_FREEZER, AN_CG_RDMA, AN_CG_MISC,
  AN_CG_NET_CLS, AN_CG_NET_PRIO, AN_CG_PERF_EVENT,
  AN_CG__COUNT
};
#define AN_CG_BIT(c) (1u << (c))

/* Name of a controller in v1 mount options / v2 cgroup.controllers (NULL
 * when that version has no such controller). */
const char *an_cg_ctrl_v1_name(enum an_cg_ctrl c);
const char *an_cg_ctrl_v2_name(enum an_cg_ctrl c);

#define AN_CG_MAX_HIER 16

struct an_cg_hier {            /* one mounted hierarchy */
  int version;                 /* 1 or 2 */
  char *mount;                 /* mount point, e.g. /sys/fs/cgroup/memory */
  uint32_t ctrls;              /* AN_CG_BIT set it enforces (v2: root cgroup.controllers) */
};

struct an_cg_layout {
  enum an_cgroup_layout layout;
  struct an_cg_hier h[AN_CG_MAX_HIER];
  size_t n;
  int unified;                 /* index of the cgroup2 hierarchy in h, or -1 */
};

/* Read /proc/self/mountinfo (and the cgroup2 root's cgroup.controllers).
 * Named v1 hierarchies without controllers (name=systemd) are skipped; a
 * hierarchy mounted twice is used once. Errors: -ENOENT none mounted. */
int an_cg_layout_read(struct an_cg_layout *l, an_error_t *err);
void an_cg_layout_clear(struct an_cg_layout *l);
/* A deep copy of `src` (a layout already read), so that handles made from
 * another one do not read mountinfo again.  Errors: -ENOMEM. */
int an_cg_layout_copy(struct an_cg_layout *dst, const struct an_cg_layout *src, an_error_t *err);
/* Index of the hierarchy enforcing `c` (a v1 one first, else the cgroup2
 * one if its root lists it), or -1. */
int an_cg_layout_find(const struct an_cg_layout *l, enum an_cg_ctrl c);

struct an_cgroup {
  char *path;                  /* normalized relative path, "agentnest/abc" */
  size_t base_depth;           /* components of the container cgroup this handle belongs to */
  struct an_cg_layout l;
  char *dir[AN_CG_MAX_HIER];   /* absolute directory per hierarchy (all of them) */
  uint32_t present;            /* bit i: the cgroup exists in hierarchy i (all of them, except
                                  after an_cgroup_create_used: only those its controllers use) */
  int tracking;                /* hierarchy used for procs/kill/freeze: cgroup2 if mounted */
  int unified_fd;              /* O_DIRECTORY of dir[l.unified] or -1 */
};

/* Whether the cgroup exists in hierarchy i (AN_CG_MAX_HIER <= 32 bits). */
static inline bool an_cg_has(const struct an_cgroup *cg, size_t i) {
  return i < cg->l.n && (cg->present & (1u << i)) != 0;
}

/* --- cgroup_fs.c: files in a cgroup directory ------------------------- */
/* Write `value` to dir/file (one write(2), as the kernel wants).
 * Errors: errno of open/write, message "write VALUE to DIR/FILE". */
int an_cg_write(const char *dir, const char *file, const char *value, an_error_t *err);
int an_cg_writef(an_error_t *err, const char *dir, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Read dir/file into a heap string (owned by the caller), trailing newline kept. */
int an_cg_read(const char *dir, const char *file, char **out, an_error_t *err);
/* Value of "key N" in a flat-keyed file (memory.events, cgroup.events,
 * memory.oom_control).  Errors: -ENOENT key absent, read errors. */
int an_cg_read_key(const char *dir, const char *file, const char *key, uint64_t *val,
                   an_error_t *err);
bool an_cg_file_exists(const char *dir, const char *file);
/* Whether /proc/swaps lists any swap area. */
bool an_cg_host_has_swap(void);
/* Visit `dir` and every cgroup directory below it: pre(dir) before its
 * children, post(dir) after them (either may be NULL).  A cgroup that
 * vanishes during the walk (ENOENT, e.g. an exec's child cgroup removed
 * meanwhile) is skipped.  The first error stops the walk, or with
 * `keep_going` the walk visits everything and returns the first error.
 * Errors: what a visitor returned; errno of opendir; -ENOMEM. */
typedef int (*an_cg_visit_fn)(const char *dir, void *arg, an_error_t *err);
int an_cg_walk(const char *dir, an_cg_visit_fn pre, an_cg_visit_fn post, void *arg,
               bool keep_going, an_error_t *err);

/* --- cgroup_birth.c ---------------------------------------------------- */
/* Mark cgroup2 directory `dir` and every cgroup below it as reached by
 * cgroup.kill (an xattr): an_cgroup_birth_begin then refuses them, since
 * Linux 6.18 kills a child cloned into them.  Best effort. */
void an_cg_mark_killed(const char *dir);
/* Remove dir and every cgroup below it, deepest first (retrying EBUSY a
 * little while exiting tasks leave).  A missing dir is not an error. */
int an_cg_rmdir_tree(const char *dir, an_error_t *err);
/* Append the pids of cgroup.procs of dir and of every cgroup below it. */
int an_cg_collect_pids(const char *dir, pid_t **pids, size_t *n, size_t *cap, an_error_t *err);

/* --- cgroup_validate.c --------------------------------------------------- */
/* Check every value of `res` for range and form; -EINVAL naming the field
 * (linux.resources.memory.limit, ...). */
int an_cg_validate_resources(const struct an_spec_resources *res, an_error_t *err);
/* The controllers `res` asks for (AN_CG_BIT set).  `with_devices`: the
 * device policy is installed too (always at create). */
uint32_t an_cg_wanted_ctrls(const struct an_spec_resources *res, bool with_devices);
/* Field name used in messages for a controller ("linux.resources.memory"). */
const char *an_cg_ctrl_field(enum an_cg_ctrl c);

/* --- controllers named alike on both versions (dir: the cgroup's directory
 * in that controller's hierarchy; version: 1 or 2) ------------------------ */
int an_cg_cpuset_apply(const char *dir, const struct an_spec_resources *res, an_error_t *err);
int an_cg_hugetlb_apply(const char *dir, int version, const struct an_spec_resources *res,
                        an_error_t *err);

/* --- controllers: v1 (one directory of that controller's hierarchy) ------ */
int an_cg_v1_memory_apply(const char *dir, const struct an_spec_resources *res, an_error_t *err);
int an_cg_v1_cpu_apply(const char *cpu_dir, const char *cpuacct_dir,
                       const struct an_spec_resources *res, an_error_t *err);
int an_cg_v1_cpuset_init(const char *dir, an_error_t *err);   /* copy parent's cpus/mems when empty */
int an_cg_v1_pids_apply(const char *dir, const struct an_spec_resources *res, an_error_t *err);
int an_cg_v1_devices_apply(const char *dir, const struct an_spec_resources *res, an_error_t *err);
int an_cg_v1_blkio_apply(const char *dir, const struct an_spec_resources *res, an_error_t *err);
int an_cg_v1_freezer_set(const char *dir, bool frozen, an_error_t *err);

/* --- controllers: v2 (the cgroup's directory in the cgroup2 hierarchy) --- */
int an_cg_v2_memory_apply(const char *dir, const struct an_spec_resources *res, an_error_t *err);
int an_cg_v2_cpu_apply(const char *dir, const struct an_spec_resources *res, an_error_t *err);
int an_cg_v2_pids_apply(const char *dir, const struct an_spec_resources *res, an_error_t *err);
int an_cg_v2_io_apply(const char *dir, const struct an_spec_resources *res, an_error_t *err);
int an_cg_v2_devices_apply(int dirfd, const char *dir, const struct an_spec_resources *res,
                           an_error_t *err);
int an_cg_v2_unified_apply(const char *dir, const struct an_spec_resources *res, an_error_t *err);
int an_cg_v2_freeze_set(const char *dir, bool frozen, an_error_t *err);

/* The device rules every container gets after its own (runc's
 * AllowedDevices: null zero full random urandom tty console ptmx pts, and
 * mknod of any c/b node), in order; the last matching rule wins. */
extern const struct an_spec_device_cgroup an_cg_default_device_rules[];
extern const size_t an_cg_n_default_device_rules;

/* Conversions (runc libcontainer/cgroups/utils.go). */
uint64_t an_cg_shares_to_weight(uint64_t shares);
uint64_t an_cg_blkio_weight_to_io_weight(uint64_t w);

/* Wait (polling, at most timeout_ms) until `key` in dir/file equals want. */
int an_cg_wait_key(const char *dir, const char *file, const char *key, uint64_t want,
                   int timeout_ms, an_error_t *err);

#endif
