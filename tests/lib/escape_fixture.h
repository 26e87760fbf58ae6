/* tests/lib/escape_fixture.h — shared setup of the escape suite
 * (tests/escapes/): a real sandbox made the way the sandbox layer makes one
 * (an_sandbox_build_spec with every secure default, the seccomp profile
 * profiles/seccomp/default.json, a host id range from an_idrange_alloc, a
 * workspace owned by the sandbox user's host ids) and run by the engine
 * (an_container_run) on an image rootfs built by `make images`
 * (/var/cache/agentnest/images/NAME/rootfs, or $AN_IMAGE_CACHE).
 *
 * The static probes of tests/helpers are copied into the workspace as
 * /workspace/probes/NAME, owned by host root (unmapped inside: the sandbox
 * cannot change them).  Host-side evidence: a CANARY directory on the host
 * (digest checked at teardown), host sysctls and hostname recorded at setup.
 *
 * Names are unique per process (getpid()) so that several helpers can run
 * the suite on this machine at once; teardown removes the container, its
 * cgroup, the id-range reservation and every file, also after a failed
 * assertion (call it from the suite's .fini). */
#ifndef AN_TEST_ESCAPE_FIXTURE_H
#define AN_TEST_ESCAPE_FIXTURE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "agentnest/sandbox_opts.h"
#include "agentnest/spec.h"

#define ESC_PROBE "/workspace/probes/probe"
#define ESC_SANDBOX_UID 65532

struct esc_sandbox {
  char dir[256];             /* /tmp/an-esc-<pid>-XXXXXX (0711) */
  char ws[PATH_MAX];         /* dir/ws: the workspace (owned by the sandbox user's host ids) */
  char bundle[PATH_MAX];     /* dir/bundle: the engine's bundle directory */
  char state[PATH_MAX];      /* dir/state: the engine's state root */
  char rootfs[PATH_MAX];     /* the image rootfs (read-only, shared) */
  char id[64];               /* container id */
  char image[32];
  struct an_sandbox_ids ids; /* host id range (reserved in the shared store) */
  bool have_ids;
  struct an_sandbox_opts *opts; /* tweak limits before esc_run (an_sandbox_opts_set_*) */
  bool detached;             /* a container started with esc_start is alive */
  pid_t init_pid;            /* host pid of the detached container's init */
  int run_count;
  int stdin_fd;              /* internal: stdin of the next run (-1: /dev/null) */
  bool closed_caller_fd;     /* a run closed one of the caller's fds 0-2 (then reopened) */
};

struct esc_result {
  int status;                /* exit status as a shell reports it (128+N: signal N) */
  char *out;                 /* stdout (heap, NUL-terminated) */
  char *err;                 /* stderr (heap, NUL-terminated) */
};

/* Host-side evidence recorded before a test and compared after it. */
struct esc_host_evidence {
  char canary[PATH_MAX];     /* /tmp/an-esc-canary-<pid>-XXXXXX with a secret file */
  char canary_digest[65];
  char sysrq[64], core_pattern[256], hostname[256], drop_caches_mtime[64];
  char busybox_sha[65];      /* /bin/busybox: the tree images link to */
};

/* True when `make images` built image NAME. */
bool esc_image_available(const char *image);
/* Skip the test (cr_skip_test) unless the image is built. */
void esc_require_image(const char *image);

/* Make a sandbox of `image` ("busybox" or "python"): directories, id range,
 * workspace with the probes, default options.  Asserts on failure. */
void esc_sandbox_init(struct esc_sandbox *s, const char *image);
/* Remove everything esc_sandbox_init/esc_run/esc_start made. */
void esc_sandbox_fini(struct esc_sandbox *s);

/* The built spec for argv with the sandbox's current options (owned by the
 * caller, an_spec_free); tests may edit it before esc_run_spec. */
struct an_spec *esc_build_spec(struct esc_sandbox *s, char **argv);

/* Run argv (NULL-terminated) as the sandbox's process and wait: one-shot
 * run, stdin /dev/null (or stdin_fd >= 0), stdout and stderr captured.
 * Returns the status; asserts that the runtime itself did not fail. */
int esc_run_spec(struct esc_sandbox *s, const struct an_spec *spec, int stdin_fd,
                 struct esc_result *res);
int esc_runv(struct esc_sandbox *s, char **argv, struct esc_result *res);
/* As esc_run_spec, but a runtime failure is returned (negative errno) with
 * its message in res->err instead of failing the test. */
int esc_try_run_spec(struct esc_sandbox *s, const struct an_spec *spec, struct esc_result *res);
/* Use a private copy of the image rootfs (dir/rootfs, `cp -a`) that a test
 * may then alter (crafted images); returns its path (s->rootfs). */
const char *esc_copy_rootfs(struct esc_sandbox *s);
/* Wait (bounded) until workspace file `name` exists; false if it never does. */
bool esc_wait_file(const struct esc_sandbox *s, const char *name);
/* `sh -c SCRIPT` (printf-style) in the sandbox. */
int esc_sh(struct esc_sandbox *s, struct esc_result *res, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Run the probe with the given actions; returns its output ("ACTION RESULT"
 * lines).  Caller frees. */
char *esc_probe(struct esc_sandbox *s, const char *actions);
void esc_result_free(struct esc_result *res);

/* Start `sh -c SCRIPT` detached (a live sandbox); s->init_pid is its host
 * pid.  Waits until the file `ready_file` (relative to the workspace) exists
 * if it is not NULL.  Stopped and removed by esc_stop or esc_sandbox_fini. */
void esc_start(struct esc_sandbox *s, const char *script, const char *ready_file);
void esc_stop(struct esc_sandbox *s);
/* Exec argv into the detached sandbox (the engine's exec: setns into its
 * namespaces, same identity, caps, no_new_privs and seccomp); stdout and
 * stderr captured.  Returns the status, or the negative errno of the
 * runtime (then res->err holds its message). */
int esc_exec(struct esc_sandbox *s, char **argv, struct esc_result *res);
/* Read FILE of the detached sandbox's cgroup in hierarchy CONTROLLER
 * (/sys/fs/cgroup/CONTROLLER/agentnest/ID/FILE, or the unified hierarchy);
 * false if missing. */
bool esc_cgroup_read(const struct esc_sandbox *s, const char *controller, const char *file,
                     char *buf, size_t len);
/* Whether the detached sandbox's cgroup exists in CONTROLLER. */
bool esc_cgroup_exists(const struct esc_sandbox *s, const char *controller);

/* The result word the probe printed for `action` in `out` ("EPERM", "OK",
 * "SIGSYS", ...), into buf; asserts the action is present. */
const char *esc_probe_result(const char *out, const char *action, char *buf, size_t len);
/* Assert the probe's result for `action` is one of the space-separated
 * words in `allowed`. */
void esc_assert_probe(const char *out, const char *action, const char *allowed);
/* The same for every action of `actions` (space separated, "name[:arg]"). */
void esc_assert_probe_all(const char *out, const char *actions, const char *allowed);

/* Run the probe on the HOST (as root), the negative control: in a forked
 * child that first enters a private mount namespace (mount propagation
 * private) and, if mount_dir is not NULL, mounts a 1 MiB tmpfs there, so
 * mount/umount2/pivot_root controls change nothing outside.  Returns the
 * probe's output (heap). */
char *esc_host_probe(const char *mount_dir, const char *actions);

/* The negative control of an exec-privilege test (set-uid bit, file
 * capabilities): run the host file `path` with the one argument `arg` as
 * host uid/gid 65534 in a forked child; returns its stdout (heap) and its
 * wait status in *status. */
char *esc_host_exec_unprivileged(const char *path, const char *arg, int *status);

/* Evidence: record host state before, assert it unchanged after. */
void esc_evidence_record(struct esc_host_evidence *e);
void esc_evidence_assert_unchanged(const struct esc_host_evidence *e);
void esc_evidence_fini(struct esc_host_evidence *e);

/* Read a small host file into buf (trailing newline stripped); false if
 * unreadable. */
bool esc_read_file(const char *path, char *buf, size_t len);
/* Path of build/tests/helpers/NAME ($AN_TEST_BUILD or "build"). */
void esc_helper_path(const char *name, char *buf, size_t len);
/* Count of lines in s that contain needle. */
int esc_count_lines(const char *s, const char *needle);

#endif
