/* agentnest/sandbox_opts.h — sandbox options, profiles, the OCI spec a
 * sandbox runs with, and host id ranges.
 *
 * A builder in minijail's style: make an options object with
 * an_sandbox_opts_new() (it starts at DESIGN.md's secure defaults), call one
 * small setter per control (each validates its value and refuses absurd ones
 * with -EINVAL and a message naming the option and the value), optionally
 * load a profile first (later setters overwrite what it set, so command-line
 * flags override the profile), then turn the options into the same in-memory
 * OCI runtime-spec config the engine runs for `agentnest-oci`
 * (an_sandbox_build_spec; DESIGN.md "ONE engine").
 *
 * Defaults (DESIGN.md "Secure defaults of a sandbox"):
 *   memory 512 MiB, no swap       cpus 1.0 (1000 millicpus)    pids 256
 *   /tmp 64 MiB                   lifetime 300 s               exec timeout = remaining lifetime
 *   output 10 MiB (stdout+stderr) file read 64 MiB             network "none"
 *   user 65532:65532, no supplementary groups                  workdir /workspace
 *   seccomp: <profiles dir>/seccomp/default.json
 *
 * Sizes are bytes, durations milliseconds, CPUs millicpus (1000 = 1 CPU).
 * Strings passed in are copied; strings returned by getters are owned by the
 * options object and valid until the next setter call or an_sandbox_opts_free.
 * An options object is not thread-safe.
 */
#ifndef AGENTNEST_SANDBOX_OPTS_H
#define AGENTNEST_SANDBOX_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

struct an_sandbox_opts;

/* ---- limits of the setters (documented refusals) ---------------------------------------- */
#define AN_SANDBOX_MEMORY_MIN       (4ull << 20)        /* 4 MiB; max: host RAM */
#define AN_SANDBOX_MILLICPUS_MIN    10                  /* 0.01 CPU: the kernel's 1 ms CFS quota floor */
#define AN_SANDBOX_MILLICPUS_MAX    (1024u * 1000u)     /* 1024 CPUs */
#define AN_SANDBOX_PIDS_MAX         4194304             /* PID_MAX_LIMIT on 64-bit */
#define AN_SANDBOX_TMP_SIZE_MIN     (1ull << 20)        /* 1 MiB; max: host RAM */
#define AN_SANDBOX_SHM_SIZE_DEFAULT (64ull << 20)       /* /dev/shm: 64 MiB */
#define AN_SANDBOX_SHM_SIZE_MIN     (1ull << 20)        /* 1 MiB; max: host RAM */
#define AN_SANDBOX_DURATION_MAX_MS  (366ull * 24 * 3600 * 1000) /* lifetime/exec timeout: 366 days */
#define AN_SANDBOX_MAX_OUTPUT_MAX   (1ull << 30)        /* 1 GiB (held in memory) */
#define AN_SANDBOX_MAX_READ_MAX     (16ull << 30)       /* 16 GiB */
#define AN_SANDBOX_SECRET_FILE_MAX  (64u << 10)         /* --secret NAME=@FILE: 64 KiB */
#define AN_SANDBOX_DISK_MIN         (8ull << 20)        /* workspace quota: 8 MiB .. 16 TiB */
#define AN_SANDBOX_DISK_MAX         (16ull << 40)
#define AN_SANDBOX_INODES_MIN       64u                 /* workspace inode quota: 64 .. 2^32-1 */
#define AN_SANDBOX_INODES_MAX       4294967295u

#define AN_SANDBOX_DEFAULT_UID      65532
#define AN_SANDBOX_DEFAULT_GID      65532
#define AN_SANDBOX_WORKSPACE        "/workspace"

/* Make an options object holding the defaults above, for the library
 * context `ctx` (agentnest/ctx.h; borrowed: it must outlive the options, the
 * copies an_sandbox_opts_dup makes and the sandboxes made from them; NULL:
 * the built-in defaults).  The default seccomp profile path is resolved now
 * from an_ctx_profiles_dir(ctx); named profiles are looked up there, a
 * secret given as NAME through the context's secret_env, and a sandbox made
 * from the options finds agentnest-init and reserves its id range as the
 * context says.  an_sandbox_opts_new is an_sandbox_opts_new_ctx(NULL, ...).
 * *opts is owned by the caller (an_sandbox_opts_free).  Errors: -ENOMEM.
 * Thread-safety: one options object is used by one thread at a time;
 * distinct ones (of one context too) from any threads. */
struct an_ctx;
int an_sandbox_opts_new_ctx(const struct an_ctx *ctx, struct an_sandbox_opts **opts, an_error_t *err);
int an_sandbox_opts_new(struct an_sandbox_opts **opts, an_error_t *err);
/* Make options (e.g. an_pool_options') use context `ctx` (borrowed, as above):
 * the default seccomp profile becomes the one of an_ctx_profiles_dir(ctx)
 * (and the chosen one too while it was the old default).  Errors: -ENOMEM. */
int an_sandbox_opts_set_ctx(struct an_sandbox_opts *opts, const struct an_ctx *ctx, an_error_t *err);

/* Free the object and every string it holds (secret values are zeroed
 * first); NULL allowed. */
void an_sandbox_opts_free(struct an_sandbox_opts *opts);

/* ---- setters: each returns 0, or -EINVAL with "<option> <value>: <why>" --------------- */

/* Image reference as the image store names it ("python", "debian:12",
 * "sha256:..."): 1..255 printable non-space characters (-EINVAL else). */
int an_sandbox_opts_set_image(struct an_sandbox_opts *opts, const char *image, an_error_t *err);

/* Memory limit in bytes (cgroup memory.max); swap is always off
 * (memory.swap.max 0).  Refused: < 4 MiB, > host RAM (sysinfo(2)). */
int an_sandbox_opts_set_memory(struct an_sandbox_opts *opts, uint64_t bytes, an_error_t *err);

/* CPU bandwidth in millicpus (1500 = 1.5 CPUs), applied as a CFS quota per
 * 100 ms period.  Refused: < 10, > 1024000. */
int an_sandbox_opts_set_cpus(struct an_sandbox_opts *opts, uint64_t millicpus, an_error_t *err);

/* Maximum number of tasks (pids.max).  Refused: 0, > 4194304, more than
 * the host's /proc/sys/kernel/pid_max (a limit that could never be reached;
 * the message names the value and the bound). */
int an_sandbox_opts_set_pids(struct an_sandbox_opts *opts, uint64_t pids, an_error_t *err);

/* Size of the /tmp tmpfs in bytes.  Refused: < 1 MiB (0 would mean
 * "unlimited" to tmpfs), > host RAM. */
int an_sandbox_opts_set_tmp_size(struct an_sandbox_opts *opts, uint64_t bytes, an_error_t *err);

/* Mount /tmp noexec (true) or exec (false, the default: /workspace is
 * executable anyway, so noexec on /tmp stops nothing and breaks programs
 * that run what they write there).  Never fails; returns 0. */
int an_sandbox_opts_set_tmp_noexec(struct an_sandbox_opts *opts, bool noexec, an_error_t *err);

/* Size of the /dev/shm tmpfs in bytes (default 64 MiB; one inode per 4 KiB,
 * at least 1024).  Its pages count against the memory limit like any tmpfs.
 * Refused: < 1 MiB, > host RAM. */
int an_sandbox_opts_set_shm_size(struct an_sandbox_opts *opts, uint64_t bytes, an_error_t *err);

/* Sandbox lifetime in ms (destroyed at expiry).  Refused: 0, > 366 days. */
int an_sandbox_opts_set_lifetime(struct an_sandbox_opts *opts, uint64_t ms, an_error_t *err);

/* The longest whole lifetime (from creation) that `extend` may give the
 * sandbox, in ms (profile key max_lifetime).  0 (the default): the larger
 * of AN_SANDBOX_DEFAULT_MAX_LIFETIME_MS and the lifetime.  Refused: > 366
 * days. */
#define AN_SANDBOX_DEFAULT_MAX_LIFETIME_MS (3600ull * 1000)
/* ms: milliseconds.  Errors: -EINVAL over 366 days. */
int an_sandbox_opts_set_max_lifetime(struct an_sandbox_opts *opts, uint64_t ms, an_error_t *err);
/* The effective bound in milliseconds (never 0). */
uint64_t an_sandbox_opts_max_lifetime(const struct an_sandbox_opts *opts);  /* ms */

/* Default per-exec timeout in ms; an exec is limited to the smaller of this
 * and the remaining lifetime.  Refused: 0, > 366 days. */
int an_sandbox_opts_set_exec_timeout(struct an_sandbox_opts *opts, uint64_t ms, an_error_t *err);

/* Cap on captured output per exec, stdout+stderr together, in bytes.
 * Refused: 0, > 1 GiB. */
int an_sandbox_opts_set_max_output(struct an_sandbox_opts *opts, uint64_t bytes, an_error_t *err);

/* Cap on one file read out of the sandbox (get/cp/artifacts), in bytes.
 * Refused: 0, > 16 GiB. */
int an_sandbox_opts_set_max_read(struct an_sandbox_opts *opts, uint64_t bytes, an_error_t *err);

/* The workspace's quota (default 1 GiB and 100000 inodes), enforced by the
 * kernel at create (sandbox.h: a project quota on the store's file system
 * where it has one, else a file system image of its own).  Refused here:
 * disk < 8 MiB or > 16 TiB; inodes < 64 or > 2^32-1.  Refused at create:
 * a quota the host cannot enforce (see an_sandbox_create). */
int an_sandbox_opts_set_disk(struct an_sandbox_opts *opts, uint64_t bytes, an_error_t *err);
int an_sandbox_opts_set_inodes(struct an_sandbox_opts *opts, uint64_t inodes, an_error_t *err);

/* Add "KEY=value" to the process environment; a later entry with the same
 * KEY replaces the earlier one.  KEY: [A-Za-z_][A-Za-z0-9_]*; value: any
 * bytes but NUL.  Refused: no "=", empty or malformed KEY. */
int an_sandbox_opts_add_env(struct an_sandbox_opts *opts, const char *key_value, an_error_t *err);

/* Add a secret: exposed to the sandbox's processes as the environment
 * variable NAME=value (after every add_env entry, so it wins), and
 * redacted from captured output by the output module (see
 * an_sandbox_opts_secret_values).  A later secret of the same NAME replaces
 * the earlier one.  Refused (-EINVAL): malformed NAME (as env KEY), empty
 * value.  The message names the secret, never its value. */
int an_sandbox_opts_add_secret(struct an_sandbox_opts *opts, const char *name, const char *value,
                               an_error_t *err);

/* The CLI's `--secret` argument: "NAME" takes the value of NAME from the
 * caller's environment, which only the options' context's secret_env gives
 * (agentnest/ctx.h; the CLI's is getenv, the servers have none: -ENOENT when
 * there is no callback or the value is unset or empty); "NAME=@FILE" reads FILE
 * (at most 64 KiB, -EFBIG beyond; one trailing newline dropped; open/read
 * errno with a message naming FILE).  Anything else: -EINVAL (a literal
 * value on the command line would leak through ps(1) and shell history). */
int an_sandbox_opts_add_secret_arg(struct an_sandbox_opts *opts, const char *arg, an_error_t *err);

/* Working directory of the sandbox's processes: absolute, no "." or ".."
 * components, not under /proc, /sys or /dev (CVE-2024-21626: a cwd must
 * never be a magic link), < 4096 bytes.  Default /workspace.  Errors:
 * -EINVAL (the rule broken, named). */
int an_sandbox_opts_set_workdir(struct an_sandbox_opts *opts, const char *path, an_error_t *err);

/* Egress mode (agentnest(1) NETWORK): "none" (default: an empty netns with
 * loopback only), "allowlist" (only the --allow entries, under the deny set)
 * or "full" (any public destination, under the deny set); anything else
 * -EINVAL.  The mode is recorded here; whether it can be enforced is checked
 * when the sandbox is created (an_sandbox_create: -EOPNOTSUPP where this
 * build or host cannot enforce it, never an unfiltered sandbox). */
int an_sandbox_opts_set_network(struct an_sandbox_opts *opts, const char *mode, an_error_t *err);

/* Add an egress allowlist entry (repeatable; a duplicate is kept once):
 * NAME[:PORTS] (that name only), *.ZONE[:PORTS] (strict subdomains of ZONE),
 * ADDR, CIDR[:PORTS], [IPV6]:PORTS or [IPV6/LEN]:PORTS; PORTS "443",
 * "80,443", "1-1024" (default 80,443).  An entry inside a deny range (RFC
 * 1918, loopback, link-local, ...) opens that part of it.  Checked now for
 * syntax, and at create against the mode (an entry needs allowlist, or full
 * for CIDRs).  Errors: -EINVAL naming the entry and the reason (bad name,
 * bad port, host bits set, too wide: 0.0.0.0/0, shorter than /8 or IPv6
 * /16); -E2BIG more than 256 entries; -ENOMEM. */
int an_sandbox_opts_add_allow(struct an_sandbox_opts *opts, const char *entry, an_error_t *err);

/* Add a DNS upstream for the sandbox's DNS filter: "ADDR", "ADDR:PORT",
 * "[IPV6]:PORT" (default port 53; default upstreams: the host's
 * /etc/resolv.conf).  Queried from the host, never by the sandbox.
 * Errors: -EINVAL not an address or bad port; -E2BIG more than 4; -ENOMEM. */
int an_sandbox_opts_add_dns_upstream(struct an_sandbox_opts *opts, const char *addr, an_error_t *err);

/* seccomp profile file in the Docker/OCI profile format.  Must name an
 * existing regular file (-ENOENT / -EINVAL "not a regular file", stat(2)
 * errno otherwise); it is stored as an absolute path (realpath(3)) and
 * parsed by an_sandbox_build_spec.  There is no
 * "unconfined": seccomp cannot be switched off (fail closed). */
int an_sandbox_opts_set_seccomp_profile(struct an_sandbox_opts *opts, const char *path,
                                        an_error_t *err);

/* Whether a seccomp profile that allows what the default profile denies
 * (see an_sandbox_build_spec) is accepted.  Default false: refused. */
void an_sandbox_opts_set_seccomp_unsafe(struct an_sandbox_opts *opts, bool unsafe);

/* Landlock (engine/landlock.h: writes confined to the writable mounts):
 *   best-effort  applied where the kernel has Landlock, skipped where not
 *                (the default; `agentnest policy explain` says which);
 *   required     applied; a kernel without Landlock refuses the sandbox
 *                (-EOPNOTSUPP at create, fail closed);
 *   off          not applied.
 * Set from text: "best-effort" (or its synonym "if-available", the engine
 * annotation's word), "required", "off"; anything else -EINVAL. */
enum an_sandbox_landlock {
  AN_SANDBOX_LANDLOCK_BEST_EFFORT = 0, AN_SANDBOX_LANDLOCK_REQUIRED, AN_SANDBOX_LANDLOCK_OFF,
};
/* Set the Landlock mode from its text form; -EINVAL another text. */
int an_sandbox_opts_set_landlock(struct an_sandbox_opts *opts, const char *mode, an_error_t *err);
/* The text form of a mode ("best-effort", "required", "off"); static. */
const char *an_sandbox_landlock_name(enum an_sandbox_landlock mode);

/* Human name of the sandbox: [A-Za-z0-9][A-Za-z0-9_.-]{0,62} (-EINVAL
 * else; whether it is free is checked by create). */
int an_sandbox_opts_set_name(struct an_sandbox_opts *opts, const char *name, an_error_t *err);

/* Set one option from its text form, as a command-line flag gives it, with
 * the grammar of util/units.h for sizes and durations:
 *   image name workdir network seccomp_profile   the string as is
 *   memory tmp_size shm_size max_output max_read size  ("512m", "4096")
 *   timeout (the lifetime) exec_timeout          duration ("300", "1.5s", "500ms")
 *   max_lifetime (extend's bound)                duration
 *   cpus                                         "1.5" (up to 3 decimals)
 *   pids inodes                                  decimal integer
 *   disk                                         size
 *   landlock                                     "required", "best-effort", "off"
 *   seccomp_unsafe                               "true" or "false"
 *   tmp_noexec                                   "true" or "false"
 *   env                                          "K=V" (add_env)
 *   gpu, cdi_spec_dir                            add_gpu, add_cdi_spec_dir
 *   cdi_allow_hooks                              "true" or "false"
 *   secret                                       "NAME" or "NAME=@FILE" (add_secret_arg)
 *   allow, dns_upstream                          add_allow, add_dns_upstream
 * Errors: -EINVAL unknown option (`unknown option "memroy"`) or bad text;
 * -ERANGE overflow; otherwise the setter's errors.  Messages name the
 * option and the value; callers add "--memory" or a profile key. */
int an_sandbox_opts_set_option(struct an_sandbox_opts *opts, const char *option, const char *text,
                               an_error_t *err);

/* ---- getters (no errors; strings owned by opts) ------------------------------------------ */
const char *an_sandbox_opts_image(const struct an_sandbox_opts *opts);      /* NULL: unset */
const char *an_sandbox_opts_name(const struct an_sandbox_opts *opts);       /* NULL: unset */
const char *an_sandbox_opts_profile(const struct an_sandbox_opts *opts);    /* last profile loaded, or NULL */
uint64_t an_sandbox_opts_memory(const struct an_sandbox_opts *opts);        /* bytes */
uint64_t an_sandbox_opts_cpus(const struct an_sandbox_opts *opts);          /* millicpus */
uint64_t an_sandbox_opts_pids(const struct an_sandbox_opts *opts);
uint64_t an_sandbox_opts_tmp_size(const struct an_sandbox_opts *opts);      /* bytes */
bool an_sandbox_opts_tmp_noexec(const struct an_sandbox_opts *opts);
uint64_t an_sandbox_opts_shm_size(const struct an_sandbox_opts *opts);      /* bytes */
uint64_t an_sandbox_opts_lifetime(const struct an_sandbox_opts *opts);      /* ms */
uint64_t an_sandbox_opts_exec_timeout(const struct an_sandbox_opts *opts);  /* ms; 0 = remaining lifetime */
uint64_t an_sandbox_opts_max_output(const struct an_sandbox_opts *opts);    /* bytes */
uint64_t an_sandbox_opts_max_read(const struct an_sandbox_opts *opts);      /* bytes */
uint64_t an_sandbox_opts_disk(const struct an_sandbox_opts *opts);          /* bytes */
uint64_t an_sandbox_opts_inodes(const struct an_sandbox_opts *opts);
/* Strings and arrays below are owned by opts (valid until it is changed
 * or freed). */
const char *an_sandbox_opts_workdir(const struct an_sandbox_opts *opts);    /* never NULL */
const char *an_sandbox_opts_network(const struct an_sandbox_opts *opts);    /* never NULL */
const char *an_sandbox_opts_seccomp_profile(const struct an_sandbox_opts *opts); /* never NULL */
bool an_sandbox_opts_seccomp_unsafe(const struct an_sandbox_opts *opts);
enum an_sandbox_landlock an_sandbox_opts_landlock(const struct an_sandbox_opts *opts);
uid_t an_sandbox_opts_uid(const struct an_sandbox_opts *opts);              /* in the sandbox */
gid_t an_sandbox_opts_gid(const struct an_sandbox_opts *opts);
/* "KEY=value" entries from add_env, NULL-terminated (never NULL; owned by opts). */
char *const *an_sandbox_opts_env(const struct an_sandbox_opts *opts);
/* Secret values, NULL-terminated (never NULL; owned by opts): what the
 * output module redacts.  Secret names with their values are in the built spec's env. */
char *const *an_sandbox_opts_secret_values(const struct an_sandbox_opts *opts);
/* --allow entries and --dns-upstream addresses as given, NULL-terminated
 * (never NULL; owned by opts, valid until it is changed or freed). */
char *const *an_sandbox_opts_allow(const struct an_sandbox_opts *opts);
char *const *an_sandbox_opts_dns_upstreams(const struct an_sandbox_opts *opts);

/* Copy an options object, secrets included.  *copy is owned by the caller
 * (an_sandbox_opts_free).  Errors: -ENOMEM. */
int an_sandbox_opts_dup(const struct an_sandbox_opts *opts, struct an_sandbox_opts **copy,
                        an_error_t *err);

/* Write the options as a profile document (the keys of
 * an_sandbox_opts_load_profile; sizes in bytes, durations as "<n>ms", cpus
 * as "1.500", seccomp_profile as its path) for the state store, `inspect`
 * and `fork`.  Loading it into fresh options gives the same values, except
 * name and secrets: secrets are never written.  *json is heap-allocated,
 * NUL-terminated, owned by the caller.  Errors: -EINVAL a string is not
 * valid UTF-8; -ENOMEM. */
int an_sandbox_opts_to_json(const struct an_sandbox_opts *opts, char **json, an_error_t *err);

/* ---- devices through CDI (src/sandbox/cdi_opts.c; agentnest/cdi.h) ---------------------- */

/* Ask for CDI devices: "all" (every nvidia.com/gpu device, or its "all"
 * device), "INDEX[,INDEX...]" (nvidia.com/gpu=INDEX each) or a qualified
 * name "vendor/class=name".  Repeatable; the devices are resolved and their
 * containerEdits applied when the spec is built (an_sandbox_build_spec), so
 * a name no spec defines fails there.  Errors: -EINVAL any other text
 * (`gpu "x": expected all, INDEX[,INDEX] or vendor/class=name`); -ENOMEM. */
int an_sandbox_opts_add_gpu(struct an_sandbox_opts *opts, const char *spec, an_error_t *err);
/* Add a CDI spec directory (absolute path); the first call replaces the
 * defaults (/etc/cdi, /var/run/cdi).  Later directories take priority.
 * Errors: -EINVAL a relative path; -ENOMEM. */
int an_sandbox_opts_add_cdi_spec_dir(struct an_sandbox_opts *opts, const char *dir, an_error_t *err);
/* Let CDI hooks (host programs run as root by the engine) be applied;
 * without it a device whose spec has hooks is refused. */
void an_sandbox_opts_set_cdi_allow_hooks(struct an_sandbox_opts *opts, bool allow);
/* Qualified device names asked for, NULL-terminated (never NULL; owned by
 * opts, valid until it is changed or freed; also for the directories). */
char *const *an_sandbox_opts_cdi_devices(const struct an_sandbox_opts *opts);
/* The CDI spec directories, NULL-terminated (never NULL; the defaults unless
 * set; owned by opts or static). */
const char *const *an_sandbox_opts_cdi_spec_dirs(const struct an_sandbox_opts *opts);
bool an_sandbox_opts_cdi_allow_hooks(const struct an_sandbox_opts *opts);

/* ---- profiles (src/sandbox/profile.c) ---------------------------------------------------- */

/* The default directory named profiles are looked up in: AN_DATADIR
 * "/profiles" (an_ctx_profiles_dir(NULL); the front ends put
 * $AGENTNEST_PROFILES in their context).  Static storage; do not free. */
const char *an_sandbox_profiles_dir(void);

/* Apply a JSON profile to opts.  name_or_path is a file path if it contains
 * '/' or ends in ".json", else a name [a-z0-9][a-z0-9_-]* looked up as
 * <profiles_dir>/<name>.json (profiles_dir NULL: the options' context's,
 * an_ctx_profiles_dir).
 *
 * A profile is one JSON object (at most 1 MiB) with only these keys:
 *   image (string), memory, tmp_size, shm_size, max_output, max_read, disk (size: a string in
 *   util/units.h's grammar or an integer of bytes), cpus (number or string,
 *   e.g. 1.5), pids and inodes (integer), timeout (the lifetime) and exec_timeout
 *   (duration: a string in the units grammar or a number of seconds), env
 *   (object {"K": "V"} or array ["K=V"]), network (string), seccomp_profile
 *   (path; relative paths are relative to the profile's directory),
 *   seccomp_unsafe (boolean), landlock (string), workdir
 *   (string), tmp_noexec (boolean), gpu (string, as an_sandbox_opts_add_gpu), devices (array of
 *   qualified CDI names), cdi_spec_dirs (array of paths), cdi_allow_hooks
 *   (boolean), allow and dns_upstream (arrays of strings, as
 *   an_sandbox_opts_add_allow / add_dns_upstream), description (string, ignored), unsupported (string: the profile
 *   exists but cannot run yet; loading it fails with -EOPNOTSUPP and that
 *   text).
 * Each value goes through the matching setter, so the same limits apply.
 * Keys are applied in document order; on error opts may hold some of the
 * profile's values (discard it).
 *
 * Errors, all prefixed `profile "<name>": `:
 *   -EINVAL  invalid name; not JSON (also: a string or key holding U+0000,
 *            a duplicate key: util/json_tree.h); not an object; `key "memroy": unknown
 *            key`; `key "memory": <setter's message>`; wrong JSON type
 *   -EOPNOTSUPP the profile carries "unsupported"
 *   -ENOENT / -EACCES / -EFBIG  the file cannot be read (message names it)
 *   -ERANGE  a size or duration overflows */
int an_sandbox_opts_load_profile(struct an_sandbox_opts *opts, const char *name_or_path,
                                 const char *profiles_dir, an_error_t *err);

/* ---- the shipped profiles (src/sandbox/profile_list.c) ---------------------------------- */

/* One profile of a profiles directory, as `agentnest profiles` shows it. */
struct an_sandbox_profile_info {
  char *name;                /* file name less ".json" */
  char *description;         /* its "description" member, or NULL */
  char *error;               /* NULL: it loads; else why it is refused (its "unsupported"
                                text, a bad key...) and the limits below are the defaults */
  struct an_sandbox_opts *opts;   /* the options it gives on top of the defaults */
};

/* Every "<name>.json" of profiles_dir (NULL: an_sandbox_profiles_dir()),
 * sorted by name, each loaded into fresh options.  A profile that does not
 * load is listed with its error, not skipped.  *out (n entries) is owned by
 * the caller (an_sandbox_profiles_free).  Errors: the opendir errno naming
 * the directory; -ENOMEM. */
int an_sandbox_profiles_list(const char *profiles_dir, struct an_sandbox_profile_info **out,
                             size_t *n, an_error_t *err);
void an_sandbox_profiles_free(struct an_sandbox_profile_info *list, size_t n);
/* The list as JSON: {"profiles": [{"name", "description", "runnable",
 * "error" (when not runnable), "options": an_sandbox_opts_to_json's object}]}.
 * *json is heap-allocated, owned by the caller.  Errors: -EINVAL invalid
 * UTF-8; -ENOMEM. */
int an_sandbox_profiles_to_json(const struct an_sandbox_profile_info *list, size_t n, char **json,
                                an_error_t *err);

/* ---- the OCI spec of a sandbox (src/sandbox/spec_build.c) -------------------------------- */

/* What the image store says about an image (borrowed, not copied). */
struct an_sandbox_image {
  const char *rootfs;        /* absolute host path of the unpacked read-only root */
  char **env;                /* image config Env, "K=V", NULL-terminated; may be NULL */
  const char *working_dir;   /* image config WorkingDir; not used: sandboxes start in workdir */
};

/* The sandbox's own host id range (an_idrange_alloc): container ids
 * 0..size-1 map to host ids host_uid_base..host_uid_base+size-1, for uids
 * and gids alike. */
struct an_sandbox_ids {
  uint32_t host_uid_base;
  uint32_t size;
};

/* Build the OCI runtime-spec config of a sandbox (runtime-spec config.md and
 * config-linux.md), to be run by the engine.
 *   opts                the options (defaults, profile, flags)
 *   img                 image rootfs and env (rootfs required)
 *   ids                 host id range; size must be >= 65536 so that 65532
 *                       and the devpts gid 5 are mapped
 *   sandbox_id          short id for the hostname "agentnest-<id>"
 *                       ([A-Za-z0-9]{1,52}); NULL: hostname "agentnest"
 *   workspace_host_path absolute host directory bind-mounted rw at
 *                       /workspace.  The caller owns it and must chown it to
 *                       host_uid_base+65532 : host_uid_base+65532 (the
 *                       sandbox user's host ids); no idmapped mount is used
 *                       for it, so files the sandbox writes carry its own
 *                       host ids and no one else's.
 *   argv                process.args, NULL-terminated, argv[0] non-empty
 * The result (owned by the caller, free with an_spec_free):
 *   namespaces user mount pid network ipc uts cgroup; uid/gid maps as above;
 *   process.user 65532:65532, no additionalGids; no capabilities in any
 *   set; noNewPrivileges; rlimits NOFILE 1024 soft / 4096 hard, CORE 0 and
 *   SIGPENDING 1024; sysctls user.max_*_namespaces 0 (user pid net ipc uts
 *   cgroup), user.max_inotify_instances 128, user.max_inotify_watches
 *   65536 (in the sandbox's user namespace);
 *   env = image env, then opts env, then secrets (later KEY wins), plus
 *   PATH (Debian's default) and HOME=/workspace when absent; cwd = workdir;
 *   root = rootfs, readonly; mounts /proc /dev /dev/pts (newinstance,
 *   max=64) /dev/shm (shm_size, default 64 MiB, one inode per 4 KiB and at
 *   least 1024) /dev/mqueue /sys (ro) /tmp
 *   (tmp_size, one inode per 4 KiB and at least 1024, exec unless
 *   tmp_noexec) /run (16 MiB, 4096 inodes) /workspace;
 *   maskedPaths and readonlyPaths of /proc and /sys (runc/Docker's lists);
 *   resources: memory limit = swap limit (no swap), CFS quota =
 *   millicpus*100 µs per 100000 µs period, pids limit, device cgroup deny all
 *   but null zero full random urandom tty ptmx and pts; devices null zero
 *   full random urandom tty; linux.seccomp loaded from opts'
 *   seccomp_profile with an_seccomp_profile_load; annotation
 *   org.agentnest.landlock = "if-available" (best-effort), "required" or
 *   "off" from opts' landlock mode.
 * A seccomp profile other than the default that allows a call the default
 * profile denies (new namespaces through clone/unshare flags, setns, mount
 * and the new mount API, bpf, perf_event_open, userfaultfd, keyctl, ptrace,
 * modules, kexec, io_uring, socket(AF_VSOCK), TIOCSTI, ...: both filters
 * are compiled and run on probe calls, src/sandbox/seccomp_check.h) is
 * refused with -EPERM naming the profile and the first such call, unless
 * opts' seccomp_unsafe is set.
 * Errors: -EINVAL a missing or invalid argument (message names it);
 *   -EPERM the seccomp profile widens the default (above); for a profile
 *   other than the default, the errors of loading the default one (it is
 *   what the profile is compared with: fail closed, unless seccomp_unsafe);
 *   the errors of an_seccomp_profile_load (agentnest/seccomp_profile.h) for
 *   opts' seccomp profile, e.g. -ENOENT when it is missing, -EINVAL when it
 *   is malformed: fail closed, never a spec without a seccomp filter;
 *   -ENOMEM.  On error *out is untouched. */
int an_sandbox_build_spec(const struct an_sandbox_opts *opts, const struct an_sandbox_image *img,
                          const struct an_sandbox_ids *ids, const char *sandbox_id,
                          const char *workspace_host_path, char **argv, struct an_spec **out,
                          an_error_t *err);

/* ---- host id ranges (src/sandbox/idrange.c) ---------------------------------------------- */

#define AN_IDRANGE_SIZE       65536u
#define AN_IDRANGE_BASE       0x10000000u   /* 268435456: far above login and system ids */
/* ranges from 0x10000000 up to 0x50000000: room for DESIGN.md's 5,000 live
 * sandboxes (4096 slots refused the 4097th) with the random-start probe
 * still finding a free slot in ~1 try at that load; every id stays below
 * 2^31, so no tool that reads ids as signed ints sees a negative one */
#define AN_IDRANGE_SLOTS      16384u
/* Reservations are machine-wide (host uids are): one directory for every
 * store root.  /run is emptied at boot, as are the processes that used the
 * ids. */
#define AN_IDRANGE_ROOT_DEFAULT "/run/agentnest"

/* Where ranges are reserved by default: AN_IDRANGE_ROOT_DEFAULT
 * (an_ctx_idrange_root(NULL); a context's idrange_root overrides it: tests
 * keep theirs apart).  Static memory; do not free. */
const char *an_idrange_root(void);

/* Where ranges come from; tests point the host id files elsewhere.  A field
 * left 0/NULL takes the default (AN_IDRANGE_BASE, AN_IDRANGE_SLOTS,
 * /etc/passwd, /etc/group, /etc/subuid, /etc/subgid, /proc/self/uid_map,
 * /proc/self/gid_map). */
struct an_idrange_config {
  uint32_t base;             /* first id of slot 0; multiple of 65536 */
  uint32_t slots;            /* number of 65536-id slots */
  const char *passwd, *group, *subuid, *subgid, *uid_map, *gid_map;
};

/* Reserve a host uid/gid range of 65536 ids that no other live sandbox, no
 * user or group in passwd/group, and no /etc/subuid or /etc/subgid range
 * uses, and that lies inside this process's own uid_map and gid_map (so
 * the engine can write it).  The same numbers serve as uid and gid range.
 * state_root is the reservation root: NULL means an_idrange_root(), the
 * machine-wide one every sandbox uses (others only in tests).
 * The reservation is the file <state_root>/idranges/<base>.lock, created
 * with O_CREAT|O_EXCL, holding the allocating pid and `owner` (an absolute
 * path that exists for as long as the holder lives, e.g. the sandbox's
 * state directory; NULL: none): it outlives a crash on purpose, because
 * processes of a crashed sandbox may still run with those ids; teardown or
 * `prune` (an_idrange_stale) releases it with an_idrange_free.  The search
 * starts at a random slot, so freed ranges are not reused at once.  The
 * root is created (0700) if missing.
 * Errors: -EINVAL bad config or owner not absolute; -ENOSPC every slot is
 * taken or excluded; the mkdir/open errno with a message naming the path;
 * the read errno of a host id file other than ENOENT (a missing subuid file
 * means no ranges). */
int an_idrange_alloc(const char *state_root, const char *owner, struct an_sandbox_ids *ids,
                     an_error_t *err);
int an_idrange_alloc_config(const char *state_root, const struct an_idrange_config *config,
                            const char *owner, struct an_sandbox_ids *ids, an_error_t *err);

/* Release a range reserved by an_idrange_alloc (remove its lock file);
 * state_root as there (NULL: an_idrange_root()).
 * Errors: -EINVAL ids not a range this allocator hands out; -ENOENT not
 * reserved; the unlink errno otherwise. */
int an_idrange_free(const char *state_root, const struct an_sandbox_ids *ids, an_error_t *err);

/* A reservation on disk: the range, the pid that made it (0 if the file
 * holds none; -1 if it is empty and less than 60 s old: being written by
 * an_idrange_alloc) and its owner path (heap; NULL if none). */
struct an_idrange_reservation {
  struct an_sandbox_ids ids;
  pid_t pid;
  char *owner;
};

/* List the reservations under <state_root>/idranges (NULL: an_idrange_root()),
 * for `prune`, which releases the stale ones (an_idrange_stale) with
 * an_idrange_free.  Files that are not "<base>.lock" are ignored.  *out
 * (heap, owned by the caller: an_idrange_list_free) has *n entries, in no
 * particular order; a missing directory gives none.
 * Errors: the opendir/read errno with a message naming the directory;
 * -ENOMEM. */
int an_idrange_list(const char *state_root, struct an_idrange_reservation **out, size_t *n,
                    an_error_t *err);

/* Free a list from an_idrange_list (NULL allowed). */
void an_idrange_list_free(struct an_idrange_reservation *list, size_t n);

/* True when nothing can hold the reservation any more: it is not being
 * written (pid -1), the allocating pid
 * is gone (kill(2) ESRCH) and its owner path is gone (lstat ENOENT) or it
 * has none.  A live sandbox of any store keeps its state directory, so
 * prune of one store never releases another store's range. */
bool an_idrange_stale(const struct an_idrange_reservation *r);

#ifdef __cplusplus
}
#endif
#endif
