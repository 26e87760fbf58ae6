/* agentnest/cgroup.h — one cgroup manager for cgroup v2 (unified) and v1 /
 * hybrid hosts.  Kernel doc: Documentation/admin-guide/cgroup-v2.rst and
 * cgroup-v1/; runtime-spec config-linux.md "Control groups".
 *
 * A container's cgroup is named by a path (`cgroupsPath`, or
 * "agentnest/<id>" when none is given).  "/a/b" and "a/b" both name a/b
 * below the ROOT of each hierarchy (runc resolves a relative path against
 * its own cgroup; we do not, so that every process of the runtime finds the
 * same cgroup from the same string and nothing nests inside cgroups the
 * runtime did not create; see src/engine/cgroup.c).  Paths must have no
 * empty, "." or ".." component and no control character.
 *
 * On a unified host the cgroup is one directory under the cgroup2 mount; on
 * a v1/hybrid host it is one directory per mounted v1 controller plus, when
 * a cgroup2 hierarchy is also mounted (as on hybrid hosts), one in it used
 * for tracking, freezing and killing.  Each limit goes to the hierarchy that
 * enforces its controller.  The manager only creates, writes and removes
 * cgroups at or below the path it was given, except that on cgroup v2 it
 * enables the controllers it needs ("+memory", ...) in cgroup.subtree_control
 * of the hierarchy root and of the path's ancestors, and leaves them enabled.
 *
 * Devices: every cgroup made by an_cgroup_create gets a deny-by-default
 * device policy: the spec's linux.resources.devices rules in order, then
 * runc's default allow list (null zero full random urandom tty console ptmx
 * pts, mknod of any node); the last matching rule wins.  v1: the devices
 * controller; v2: an eBPF program (BPF_PROG_TYPE_CGROUP_DEVICE).
 *
 * Thread-safety: no global state.  Calls on distinct handles may run in
 * parallel on any threads; one handle is used by one thread at a time
 * (an_cgroup_path and an_cgroup_clone_fd only read it).  Two handles of the
 * same cgroup write the same kernel files: the last write wins.
 */
#ifndef AGENTNEST_CGROUP_H
#define AGENTNEST_CGROUP_H

/* GCC predefines `linux` as 1 in GNU modes; spec.h has a member so named. */
#undef linux
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

enum an_cgroup_layout {
  AN_CGROUP_UNIFIED = 2,   /* cgroup2 only, at /sys/fs/cgroup */
  AN_CGROUP_HYBRID = 3,    /* v1 controllers + a cgroup2 mount (e.g. /sys/fs/cgroup/unified) */
  AN_CGROUP_LEGACY = 1,    /* v1 only */
};

struct an_cgroup;          /* opaque handle; free with an_cgroup_free() */

/* Detect the host's layout by reading /proc/self/mountinfo (proc(5)): v1
 * hierarchies without a controller (name=systemd) do not count.
 * Errors: -ENOENT no cgroup filesystem mounted; read errors of mountinfo. */
int an_cgroup_detect(enum an_cgroup_layout *layout, an_error_t *err);

/* "unified", "hybrid" or "legacy" (for `agentnest doctor`).  Static string. */
const char *an_cgroup_layout_name(enum an_cgroup_layout layout);

/* Create the cgroup `path` (e.g. "agentnest/abc"; see above) in every
 * hierarchy, missing ancestors included, apply `res` (may be NULL: no
 * limits) and install the device policy.  Units are the spec's: bytes, µs,
 * shares.  Conversions follow runc: v2 cpu.weight from shares
 * (1 + (shares-2)*9999/262142), cpu.max "quota period" ("max" for -1),
 * memory.swap.max = swap - limit (v1: memory.memsw = swap), pids 0 = unset,
 * -1 = "max".  Controllers asked for by `res` that the host cannot enforce
 * make the call fail with -EOPNOTSUPP naming the controller or knob (fail
 * closed), checked before anything is created; on any failure nothing is
 * left behind (directories this call made are removed).  *out is owned by
 * the caller (an_cgroup_free).  Errors: -EINVAL bad path or absurd value
 * (message names the field: memory.limit below 1 MiB, cpu.period outside
 * 1000..1000000 µs, cpu.quota below 1000 µs, negative pids/reservation,
 * swap below limit, bad unified key, ...), -EEXIST path already exists,
 * -EOPNOTSUPP controller/knob missing (e.g. realtime or disableOOMKiller on
 * v2, unified keys on v1, a hugepage size the kernel lacks), or the errno
 * of the failing mkdir/write with the cgroup file named. */
int an_cgroup_create(const char *path, const struct an_spec_resources *res,
                     struct an_cgroup **out, an_error_t *err);

/* As an_cgroup_create, but the cgroup is made only in the hierarchies that
 * enforce a controller `res` names, plus those of memory and pids (OOM and
 * pids-limit reporting), freezer (pause; kill without cgroup.kill), devices
 * (the device policy) and the cgroup2 hierarchy (tracking, cgroup.kill).
 * On a v1 or hybrid host a container without a cpuset or blkio limit then
 * has no cgroup in the cpuset, blkio and cpuacct hierarchies: one mkdir,
 * one v1 migration per joining process and one rmdir fewer for each; its
 * processes stay in the creating process's cgroup there (no limit of theirs
 * is lost: none was asked for).  On a cgroup2-only host it is
 * an_cgroup_create.  an_cgroup_open later finds the same set, and
 * an_cgroup_apply of a limit for a missing hierarchy fails (-EOPNOTSUPP)
 * rather than write it nowhere.  Errors: as an_cgroup_create. */
int an_cgroup_create_used(const char *path, const struct an_spec_resources *res,
                          struct an_cgroup **out, an_error_t *err);

/* Open an existing cgroup created earlier (e.g. from a state file), same
 * path rules as create.  *out is owned by the caller.  Errors: -EINVAL bad
 * path, -ENOENT it does not exist. */
int an_cgroup_open(const char *path, struct an_cgroup **out, an_error_t *err);

/* Create a child cgroup `name` (one path component) below `parent` in
 * every hierarchy, with no limits of its own (used for one exec's process
 * tree: kill/freeze/pids of the child reach that tree only; the parent's
 * limits still apply).  On v2 the child has no controllers enabled (the
 * parent holds processes), so an_cgroup_oom_kills on it reports the
 * parent's count.  *out is owned by the caller; destroying the parent
 * removes the child too.  Errors: -EINVAL bad name, -EEXIST, mkdir errno. */
int an_cgroup_create_child(struct an_cgroup *parent, const char *name,
                           struct an_cgroup **out, an_error_t *err);

/* Open the existing child cgroup `name` (one path component) of `parent`,
 * as an_cgroup_open does, but with the parent's view of the mounted
 * hierarchies (no second read of /proc/self/mountinfo).  *out is owned by
 * the caller.  Errors: -EINVAL bad name, -ENOENT it does not exist. */
int an_cgroup_open_child(const struct an_cgroup *parent, const char *name, struct an_cgroup **out,
                         an_error_t *err);

/* Apply (or re-apply, for `update`) resource limits to a live cgroup.
 * Unset fields are left as they are.  The device policy is replaced only
 * when res lists devices (on v1 that fails with EINVAL once the cgroup has
 * children).  Controllers newly needed are enabled on v2.  Errors as
 * create, except -EEXIST. */
int an_cgroup_apply(struct an_cgroup *cg, const struct an_spec_resources *res, an_error_t *err);

/* Move `pid` (a process; all its threads move) into the cgroup in every
 * hierarchy (cgroup.procs; the cgroup2 one last).  Errors: errno of the
 * write with the file named (-ESRCH no such process, -EBUSY v2 "no internal
 * processes" rule). */
int an_cgroup_enter(struct an_cgroup *cg, pid_t pid, an_error_t *err);

/* An O_DIRECTORY fd of the unified-hierarchy cgroup for clone3
 * CLONE_INTO_CGROUP, or -1 where the unified hierarchy does not hold the
 * controllers (v1/hybrid: the caller must use an_cgroup_enter).  Owned by cg. */
int an_cgroup_clone_fd(const struct an_cgroup *cg);

/* What an_cgroup_birth_begin opens for a child (below). */
#define AN_CGROUP_BIRTH_MAX 16
struct an_cgroup_birth {
  int clone_fd;                            /* for CLONE_INTO_CGROUP, or -1 */
  size_t n;                                /* v1 hierarchies to step into */
  int tasks[AN_CGROUP_BIRTH_MAX];          /* cg's `tasks`, per hierarchy */
  const char *where[AN_CGROUP_BIRTH_MAX];  /* that hierarchy's mount point (cg's memory) */
  const char *path;                        /* cg's path, for messages (cg's memory) */
};

/* A child that enters the cgroup itself instead of being moved there (v1
 * and hybrid hosts).  Moving a process from outside (an_cgroup_enter,
 * cgroup.procs) takes the kernel's cgroup_threadgroup_rwsem for write and
 * waits for an RCU grace period (about 7 ms measured on a 2-core hybrid
 * host); a thread that moves only itself ("0" to v1 `tasks`) does not, and
 * the kernel checks a v1 move with the credentials of the file's opener
 * (Linux >= 5.16), so a child in a new user namespace may do it.  Use:
 *
 *   struct an_cgroup_birth b;
 *   bool born = an_cgroup_birth_try(cg, &b);   // in the parent, as host root
 *   pid = clone3(..., CLONE_INTO_CGROUP b.clone_fd when >= 0);
 *   child:  an_cgroup_birth_enter(&b, &e) first (it closes its copies)
 *   parent: an_cgroup_birth_end(&b);   // closes the parent's copies
 *   not born: clone with an_cgroup_clone_fd and an_cgroup_enter, as before
 *
 * begin opens (O_WRONLY, close-on-exec) `tasks` of cg in every v1
 * hierarchy cg exists in; b->clone_fd is cg's cgroup2 directory for
 * CLONE_INTO_CGROUP (-1 on a v1-only host; owned by cg, valid while cg is).
 * On a unified host it only sets clone_fd.  No thread of the caller ever
 * enters cg.  Errors (nothing left open): -EOPNOTSUPP no cgroup2 handle or
 * more than AN_CGROUP_BIRTH_MAX hierarchies; -ESTALE an_cgroup_kill's
 * cgroup.kill reached cg before (Linux 6.18, seen here, kills a child
 * cloned into such a cgroup at birth; an_cgroup_kill marks them with the xattr
 * trusted.agentnest.killed), or a child cloned into cg from this process
 * is (this process's own cgroup was killed before; probed at each begin
 * by a child that only exits, not a vfork: ~0.1 ms); -EBUSY cg's cgroup2
 * cgroup is frozen (that child did not exit and was killed: the caller
 * enters its child the old way, which a frozen cgroup does not hold up);
 * errno of an open, "open <dir>/tasks" (-ENOENT the cgroup is gone).
 * enter (writes and closes; allocates only for an error): the calling
 * thread steps into cg everywhere;
 * errno of a write, "step into cgroup P in MOUNT" (the child must then
 * fail: it may be in some hierarchies and not others).
 * end: closes what begin opened; any number of times.
 * Thread-safety: b belongs to one thread (and its child's copy to the
 * child); cg is only read, and must outlive b. */
int an_cgroup_birth_begin(struct an_cgroup *cg, struct an_cgroup_birth *b, an_error_t *err);
int an_cgroup_birth_enter(struct an_cgroup_birth *b, an_error_t *err);
void an_cgroup_birth_end(struct an_cgroup_birth *b);

/* an_cgroup_birth_begin for a caller that falls back on any refusal (the
 * old way is always correct, only slower): true when b is ready (end it),
 * false when cg is NULL or begin refused (b holds nothing; the reason is
 * dropped).  Same thread-safety as begin. */
bool an_cgroup_birth_try(struct an_cgroup *cg, struct an_cgroup_birth *b);

/* The relative path given at create/open.  Owned by cg. */
const char *an_cgroup_path(const struct an_cgroup *cg);

/* Send `sig` to every process in the cgroup and below.  SIGKILL uses
 * cgroup.kill when the kernel has it (5.14+, also on hybrid hosts);
 * otherwise the cgroup is frozen, every listed pid signalled and thawed
 * (runc's signalAllProcesses), except that a paused cgroup stays paused for
 * signals other than SIGKILL (which thaws it: frozen v1 tasks die only
 * once thawed).  A cgroup frozen only by a frozen ancestor is not thawed:
 * its tasks die at that ancestor's thaw (an_cgroup_reap_killed lets a
 * child of the caller out sooner).  What cgroup.kill reached is marked for
 * an_cgroup_birth_begin (-ESTALE).  Does not wait.  Errors: errno of the
 * write or of kill(2) other than ESRCH. */
int an_cgroup_kill(struct an_cgroup *cg, int sig, an_error_t *err);

/* Freeze (true) or thaw (false) every process in the cgroup and below
 * (the v1 freezer controller where one is mounted, hybrid hosts included,
 * as runc; else cgroup.freeze of the cgroup2 hierarchy); waits until cgroup.events says
 * "frozen 1"/"frozen 0" or freezer.state reads FROZEN/THAWED (at most
 * 5000 ms; a v1 thaw under a frozen ancestor ends once its own freeze is
 * lifted).  Errors: -ETIMEDOUT, -EOPNOTSUPP no freezer available, write
 * errors. */
int an_cgroup_freeze(struct an_cgroup *cg, bool frozen, an_error_t *err);

/* Let process `pid` of cg, already sent SIGKILL, die although cg is frozen
 * by a v1 freezer (a hybrid host): such a task acts on the signal only once
 * thawed, so it is moved to the root of the freezer hierarchy, which the
 * kernel thaws it for (it stays in cg's other hierarchies until it is
 * gone).  Nothing to do on cgroup2's freezer, whose frozen tasks die of
 * SIGKILL, or without a freezer.  Call only for a process of the caller's
 * own making (a child it is about to reap), as host root.  Errors: the
 * errno of the cgroup.procs write (ESRCH, the process is gone, is not one:
 * returns 0), prefixed "thaw process PID out of cgroup PATH".  Thread-safe
 * for distinct processes. */
int an_cgroup_thaw_out(const struct an_cgroup *cg, pid_t pid, an_error_t *err);

/* Reap the caller's child `pidfd` (pidfd_open(2)/CLONE_PIDFD; `pid` its pid
 * here, or <= 0 to read it from the pidfd), which exited or was already
 * sent SIGKILL (never pass a live one that was not: being let out of the
 * freezer would free it from a pause), waiting
 * at most `timeout_ms` milliseconds: waitid(2) WNOHANG polled; after
 * 100 ms, if cg (may be NULL) is frozen by a v1 freezer, the child is let
 * out of it (an_cgroup_thaw_out).  The exit is stored in *si (may be NULL).
 * Returns 0 reaped, -ETIMEDOUT not within the time (still frozen in an
 * ancestor's freezer, or a tracer in the sandbox holds its zombie: it stays
 * unreaped and the caller moves on), or the errno of waitid (-ECHILD not a
 * child, reaped already).  The pidfd stays open (the caller closes it).
 * Thread-safe for distinct children. */
int an_cgroup_reap_killed(const struct an_cgroup *cg, int pidfd, pid_t pid, unsigned timeout_ms,
                          siginfo_t *si);

/* Pids (in the runtime's pid namespace) of the processes in the cgroup and
 * its descendants, from cgroup.procs of the tracking hierarchy.  *pids is
 * heap-allocated (free()), owned by the caller; *n may be 0.  Errors: errno
 * of reading cgroup.procs (-ENOENT the cgroup is gone). */
int an_cgroup_pids(struct an_cgroup *cg, pid_t **pids, size_t *n, an_error_t *err);

/* Number of OOM kills of processes in this cgroup or below since it was
 * created: memory.events "oom_kill" on v2 (hierarchical, so a victim in an
 * exec child cgroup counts; memory.events.local would miss it), the sum of
 * memory.oom_control "oom_kill" over the subtree on v1 (per cgroup there).
 * Compare before/after a command to report `oom_killed` (BL-35).
 * Errors: -EOPNOTSUPP no memory controller for this cgroup, read errors. */
int an_cgroup_oom_kills(struct an_cgroup *cg, uint64_t *count, an_error_t *err);

/* Number of forks refused because a pids limit was reached (pids.events
 * "max"), for this cgroup and below: summed over the subtree on v1; on v2
 * the nearest cgroup with the pids controller inside the container (the
 * kernel counts it where the fork failed, hierarchically since 6.12).
 * Compare before/after a command to report "pids limit reached" (BL-34).
 * Errors: -EOPNOTSUPP no pids controller, read errors. */
int an_cgroup_pids_max_events(struct an_cgroup *cg, uint64_t *count, an_error_t *err);

/* Kill everything left (SIGKILL; cgroup.kill where available, else SIGKILL
 * of every pid, repeated), wait until empty (cgroup.events "populated 0", or
 * no pid listed on v1; at most 5000 ms), and remove the cgroup directories
 * (children first) in every hierarchy.  Ancestors ("agentnest") are kept.
 * The handle stays valid (free it after).  A cgroup already gone is not an
 * error.  Errors: -EBUSY processes remain, errno of rmdir. */
int an_cgroup_destroy(struct an_cgroup *cg, an_error_t *err);

/* Release the handle (does not remove anything).  NULL allowed. */
void an_cgroup_free(struct an_cgroup *cg);

#ifdef __cplusplus
}
#endif
#endif
