/* agentnest/spec.h — the OCI runtime-spec configuration as C structs, and its
 * parser (runtime-spec 1.0–1.2, config.md and config-linux.md).
 *
 * Names follow the spec's JSON keys so that a reader who knows config.json
 * finds every field at once.  All strings are heap-allocated NUL-terminated
 * UTF-8 owned by the enclosing struct; string arrays are NULL-terminated.
 * Optional scalars carry a `has_` flag.  Free the whole tree with
 * an_spec_free().  Parsing uses yajl; the in-memory spec is also what the
 * sandbox layer builds from a profile (DESIGN.md, "ONE engine").
 *
 * Thread-safety: no global state; parsing, building, serialising and
 * freeing may run in parallel on any threads, each on its own tree (a tree
 * is only read by the engine, so several threads may read one).
 */
#ifndef AGENTNEST_SPEC_H
#define AGENTNEST_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "agentnest/error.h"

/* GCC predefines `linux` as 1 in GNU modes (-std=gnu11); struct an_spec has a
 * member named after the spec's "linux" key. */
#undef linux

#ifdef __cplusplus
extern "C" {
#endif

struct an_spec_id_mapping {           /* linux.uidMappings[] / gidMappings[] */
  uint32_t container_id, host_id, size;
};

struct an_spec_mount {                /* mounts[] (config.md "Mounts") */
  char *destination;                  /* absolute path inside the container */
  char *type;                         /* may be NULL ("bind" implied by options) */
  char *source;                       /* may be NULL */
  char **options;                     /* NULL-terminated; may be NULL */
  struct an_spec_id_mapping *uid_mappings; size_t n_uid_mappings; /* idmapped mount */
  struct an_spec_id_mapping *gid_mappings; size_t n_gid_mappings;
};

struct an_spec_rlimit {               /* process.rlimits[] */
  int type;                           /* RLIMIT_* resource number (parsed from "RLIMIT_NOFILE") */
  uint64_t hard, soft;
};

/* capability sets: each a NULL-terminated list of names ("CAP_CHOWN") */
struct an_spec_capabilities {
  char **bounding, **effective, **inheritable, **permitted, **ambient;
};

struct an_spec_user {                 /* process.user */
  uid_t uid;
  gid_t gid;
  bool has_umask;
  mode_t umask;
  gid_t *additional_gids; size_t n_additional_gids;
  char *username;                     /* Windows-only in the spec; kept, unused */
};

struct an_spec_process {              /* process (config.md "Process") */
  bool terminal;
  bool has_console_size;
  unsigned console_height, console_width;
  char *cwd;                          /* absolute path inside the container */
  char **env;                         /* "KEY=value", NULL-terminated */
  char **args;                        /* NULL-terminated, at least one entry */
  struct an_spec_user user;
  struct an_spec_capabilities *capabilities; /* NULL: none given */
  struct an_spec_rlimit *rlimits; size_t n_rlimits;
  bool no_new_privileges;
  bool has_oom_score_adj;
  int oom_score_adj;
  char *apparmor_profile;             /* not enforced: a non-empty one is refused at create */
  char *selinux_label;                /* not enforced: a non-empty one is refused at create */
};

struct an_spec_root {                 /* root */
  char *path;                         /* as written; relative to the bundle or absolute */
  bool readonly;
};

struct an_spec_hook {                 /* hooks.*[] (config.md "POSIX-platform Hooks") */
  char *path;
  char **args;
  char **env;
  bool has_timeout;
  int timeout;                        /* seconds, > 0 */
};

struct an_spec_hooks {
  struct an_spec_hook *prestart; size_t n_prestart;                 /* deprecated, still run */
  struct an_spec_hook *create_runtime; size_t n_create_runtime;
  struct an_spec_hook *create_container; size_t n_create_container;
  struct an_spec_hook *start_container; size_t n_start_container;
  struct an_spec_hook *poststart; size_t n_poststart;
  struct an_spec_hook *poststop; size_t n_poststop;
};

/* linux.namespaces[] (type as its CLONE_NEW* flag; the OR of all of them is
 * kept in an_spec_linux.ns_flags) */
struct an_spec_namespace {
  int clone_flag;                     /* CLONE_NEWNS, CLONE_NEWPID, ... CLONE_NEWTIME */
  char *path;                         /* join this namespace if non-NULL */
};

struct an_spec_device {               /* linux.devices[] */
  char type;                          /* 'c', 'b', 'u' or 'p' */
  char *path;
  int64_t major, minor;
  bool has_file_mode; mode_t file_mode;
  bool has_uid; uid_t uid;
  bool has_gid; gid_t gid;
  char *host_path;                    /* AgentNest extension, never in config.json: the host
                                         node bound onto `path` in a user namespace (CDI
                                         deviceNodes[].hostPath); NULL: `path` itself */
};

struct an_spec_device_cgroup {        /* linux.resources.devices[] */
  bool allow;
  char type;                          /* 'a', 'c' or 'b' ('a' when absent) */
  int64_t major, minor;               /* -1 = wildcard */
  char *access;                       /* subset of "rwm"; NULL = "rwm" */
};

struct an_spec_hugepage_limit { char *page_size; uint64_t limit; };

struct an_spec_weight_device { int64_t major, minor; bool has_weight; uint16_t weight;
                               bool has_leaf_weight; uint16_t leaf_weight; };
struct an_spec_throttle_device { int64_t major, minor; uint64_t rate; };

struct an_spec_key_value { char *key; char *value; };

struct an_spec_resources {            /* linux.resources (config-linux.md "Control groups") */
  struct an_spec_device_cgroup *devices; size_t n_devices;
  /* memory (bytes; -1 = unlimited where the spec allows it) */
  bool has_memory_limit; int64_t memory_limit;
  bool has_memory_reservation; int64_t memory_reservation;
  bool has_memory_swap; int64_t memory_swap;        /* memory+swap, as in the spec */
  bool has_memory_kernel; int64_t memory_kernel;
  bool has_memory_kernel_tcp; int64_t memory_kernel_tcp; /* parsed to be refused: not enforced */
  bool has_memory_swappiness; uint64_t memory_swappiness;
  bool has_disable_oom_killer; bool disable_oom_killer;
  /* cpu */
  bool has_cpu_shares; uint64_t cpu_shares;
  bool has_cpu_quota; int64_t cpu_quota;            /* µs per period; -1 = unlimited */
  bool has_cpu_period; uint64_t cpu_period;         /* µs */
  bool has_cpu_realtime_runtime; int64_t cpu_realtime_runtime;
  bool has_cpu_realtime_period; uint64_t cpu_realtime_period;
  char *cpu_cpus;                                   /* cpuset list "0-1" */
  char *cpu_mems;
  bool has_cpu_idle; int64_t cpu_idle;
  /* pids */
  bool has_pids_limit; int64_t pids_limit;          /* -1 or 0 = unlimited per spec */
  /* blockIO */
  bool has_blkio_weight; uint16_t blkio_weight;
  bool has_blkio_leaf_weight; uint16_t blkio_leaf_weight;
  struct an_spec_weight_device *blkio_weight_device; size_t n_blkio_weight_device;
  struct an_spec_throttle_device *blkio_throttle_read_bps; size_t n_blkio_throttle_read_bps;
  struct an_spec_throttle_device *blkio_throttle_write_bps; size_t n_blkio_throttle_write_bps;
  struct an_spec_throttle_device *blkio_throttle_read_iops; size_t n_blkio_throttle_read_iops;
  struct an_spec_throttle_device *blkio_throttle_write_iops; size_t n_blkio_throttle_write_iops;
  struct an_spec_hugepage_limit *hugepage_limits; size_t n_hugepage_limits;
  struct an_spec_key_value *unified; size_t n_unified; /* cgroup v2 file -> value */
  bool has_network;                   /* linux.resources.network present: refused, not enforced */
};

struct an_spec_seccomp_arg {          /* linux.seccomp.syscalls[].args[] */
  unsigned index;                     /* 0..5 */
  uint64_t value, value_two;          /* SCMP_CMP_MASKED_EQ: value is the mask, value_two the datum */
  int op;                             /* enum scmp_compare value (SCMP_CMP_EQ, ...) */
};

struct an_spec_seccomp_syscall {
  char **names;                       /* as written; names libseccomp does not know are the
                                         loader's to skip */
  uint32_t action;                    /* libseccomp SCMP_ACT_* (errno folded in: errnoRet,
                                         else EPERM, for SCMP_ACT_ERRNO and SCMP_ACT_TRACE) */
  bool has_errno_ret; unsigned errno_ret;
  struct an_spec_seccomp_arg *args; size_t n_args;
};

struct an_spec_seccomp {              /* linux.seccomp (config-linux.md "Seccomp") */
  uint32_t default_action;            /* SCMP_ACT_*, errno folded in as for syscalls[].action:
                                         SCMP_ACT_ERRNO(defaultErrnoRet, else EPERM) */
  bool has_default_errno_ret; unsigned default_errno_ret;
  uint32_t *architectures; size_t n_architectures;  /* SCMP_ARCH_* tokens */
  char **flags;                       /* "SECCOMP_FILTER_FLAG_*" (known names only); may be NULL */
  char *listener_path;
  char *listener_metadata;
  struct an_spec_seccomp_syscall *syscalls; size_t n_syscalls;
};

struct an_spec_linux {                /* linux (config-linux.md) */
  struct an_spec_namespace *namespaces; size_t n_namespaces;
  int ns_flags;                       /* OR of namespaces[].clone_flag; set by an_spec_parse and
                                         an_spec_new_default — keep in sync when editing */
  struct an_spec_id_mapping *uid_mappings; size_t n_uid_mappings;
  struct an_spec_id_mapping *gid_mappings; size_t n_gid_mappings;
  struct an_spec_key_value *sysctl; size_t n_sysctl;
  struct an_spec_resources *resources; /* NULL: none */
  char *cgroups_path;
  struct an_spec_seccomp *seccomp;    /* NULL: no filter */
  char **masked_paths;
  char **readonly_paths;
  char *rootfs_propagation;           /* "private", "rslave", ... or NULL */
  char *mount_label;
  struct an_spec_device *devices; size_t n_devices;
};

struct an_spec {
  char *oci_version;
  struct an_spec_root root;
  struct an_spec_mount *mounts; size_t n_mounts;
  struct an_spec_process *process;    /* NULL allowed by the spec for create; required to start */
  char *hostname;
  char *domainname;
  struct an_spec_hooks hooks;
  struct an_spec_key_value *annotations; size_t n_annotations;
  struct an_spec_linux linux;         /* always present in memory; zeroed when absent */
};

/* Parse a config.json document held in memory (`len` bytes, need not be
 * NUL-terminated; runtime-spec 1.0–1.2, config.md and config-linux.md).
 * On success *out owns a new spec (free with an_spec_free).
 * Errors (errno in err, message without an errno suffix):
 *   -EINVAL  malformed JSON, a duplicate key, nesting deeper than 64, more
 *            than 1e6 values, U+0000 in a string, or a value of the wrong
 *            type/range; the message names the JSON path and the cause:
 *              `process.rlimits[2].type: unknown rlimit "RLIMIT_FOO"`
 *              `linux.namespaces[1].type: duplicate namespace "pid"`
 *              `mounts[0].destination: must be an absolute path`
 *              `process.user.uid: must not be negative (-1)`
 *              `process.user.uid: 4294967296 is out of range (0..4294967295)`
 *            Also refused: ociVersion missing or not 1.x, root or root.path
 *            missing, process without user/args/cwd, empty args, relative
 *            cwd, env entries without '=', unknown rlimit/namespace/
 *            capability/seccomp names, errnoRet on actions other than
 *            SCMP_ACT_ERRNO/SCMP_ACT_TRACE, hook timeout <= 0.
 *   -EFBIG   more than 16 MiB.
 *   -ENOMEM.
 * Unknown keys are ignored (config.md, "Extensibility"); JSON null counts
 * as absent.  Syscall names are not resolved here (see
 * an_spec_seccomp_syscall.names). */
int an_spec_parse(const char *json, size_t len, struct an_spec **out, an_error_t *err);

/* Read and parse `path` (at most 16 MiB); *out as an_spec_parse's (the
 * caller's, an_spec_free).  Errors: as an_spec_parse, plus the
 * open/read errno (-ENOENT, -EACCES, -EFBIG) with a message naming the file. */
int an_spec_load_file(const char *path, struct an_spec **out, an_error_t *err);

/* Serialize a spec to JSON (for `spec` and round-trip tests).  *json is
 * heap-allocated, NUL-terminated, owned by the caller.  Errors: -ENOMEM. */
int an_spec_to_json(const struct an_spec *spec, char **json, an_error_t *err);

/* A default config (runc's `spec` template, but with AgentNest's secure
 * defaults: user/mount/pid/net/ipc/uts/cgroup namespaces with container ids
 * 0..65535 mapped onto host ids 100000..165535, process.user 0:0 inside
 * that user namespace, args ["sh"], terminal false (so `run` needs no
 * console socket), no capabilities in any set, noNewPrivileges,
 * read-only root "rootfs", runc's mounts plus a 64 MiB /tmp, masked and
 * read-only paths, memory 512 MiB without swap, 1 CPU, 256 pids).  No
 * seccomp filter: attach profiles/seccomp/default.json with
 * an_seccomp_profile_load() (this function does no I/O).  See
 * src/engine/spec_default.c for the reasoning.  *out is owned by the
 * caller (an_spec_free).  Errors: -ENOMEM. */
int an_spec_new_default(struct an_spec **out, an_error_t *err);

/* Free a spec and everything it owns; NULL allowed. */
void an_spec_free(struct an_spec *spec);

/* Parse a LinuxResources JSON document (config-linux.md "Control groups";
 * what `runc update --resources` reads) into *out (free with
 * an_spec_resources_free).  Values in the spec's units (bytes, µs,
 * shares).  Members absent stay unset (has_* false).
 * Errors: -EINVAL bad JSON or a value out of range or of the wrong type,
 * naming the member ("resources.memory.limit"); -ENOMEM. */
int an_spec_resources_parse(const char *json, size_t len, struct an_spec_resources **out,
                            an_error_t *err);

/* Free a resources section and everything it owns; NULL allowed. */
void an_spec_resources_free(struct an_spec_resources *res);

/* Free a seccomp section (as returned by an_seccomp_profile_load, or
 * detached from a spec); NULL allowed. */
void an_spec_seccomp_free(struct an_spec_seccomp *seccomp);

#ifdef __cplusplus
}
#endif
#endif
