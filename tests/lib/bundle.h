/* tests/lib/bundle.h — shared test helper: a temporary OCI bundle with a
 * busybox rootfs (busybox-static plus one symlink per applet) and an
 * in-memory spec from an_spec_new_default with the args set; unique
 * container ids (getpid() + counter) so tests of several helpers can run on
 * this machine at once; cleanup that removes the container, its cgroup and
 * the bundle even after a failed assertion. */
#ifndef AN_TEST_BUNDLE_H
#define AN_TEST_BUNDLE_H

#include <stdbool.h>
#include "agentnest/container.h"
#include "agentnest/spec.h"

struct an_test_bundle {
  char dir[256];         /* the bundle directory */
  char rootfs[300];      /* <dir>/rootfs */
  char state_root[300];  /* <dir>/state: a private state root per bundle */
  char id[64];           /* unique container id */
};

/* Make the bundle (asserts on failure).  `tag` goes into the names. */
void an_test_bundle_make(struct an_test_bundle *b, const char *tag);

/* A default spec for the bundle: root.path = rootfs (absolute), readonly
 * root, args = the NULL-terminated list.  Caller frees with an_spec_free. */
struct an_spec *an_test_bundle_spec(const struct an_test_bundle *b, const char *arg0, ...);

/* Replace the spec's process.args with a NULL-terminated list. */
void an_test_set_args(struct an_spec *spec, const char *arg0, ...);

/* Options for the bundle's container (stdio inherited). */
struct an_container_opts an_test_bundle_opts(const struct an_test_bundle *b);

/* Copy build/tests/helpers/<name> into <rootfs>/bin/<name>. */
void an_test_bundle_install_helper(const struct an_test_bundle *b, const char *name);

/* Write a file below the rootfs (parents made), mode as given. */
void an_test_bundle_write(const struct an_test_bundle *b, const char *rel, const char *content,
                          unsigned mode);

/* an_container_run with stdout+stderr captured (stdin /dev/null).  Returns
 * the run's result; *out (may be NULL) receives the output (heap), *err the
 * error. */
int an_test_run_capture(const struct an_spec *spec, const struct an_test_bundle *b, char **out,
                        an_error_t *err);

/* True when the cgroup "agentnest/<id>" exists in any hierarchy. */
bool an_test_cgroup_exists(const char *id);

/* Remove the cgroup `path` ("agentnest/x" or "/agentnest/x") whatever the
 * runtime under test left: the library kills its processes and removes it,
 * then the directory is removed from every mounted cgroup hierarchy (also
 * name=systemd, where reference runtimes such as runc create it) together
 * with an empty "agentnest" parent.  Best effort; never fails the test. */
void an_test_cgroup_remove(const char *path);

/* True when the state directory of the container exists. */
bool an_test_state_exists(const struct an_test_bundle *b);

/* an_container_create of `spec` in bundle b fails with -want_errno and a
 * message holding want_msg, and leaves no state directory or cgroup.
 * Asserts. */
void an_test_assert_create_refused(const struct an_test_bundle *b, struct an_spec *spec, int want_errno,
                                   const char *want_msg);

/* A seccomp section (x86_64, default SCMP_ACT_ALLOW) whose one rule gives
 * syscall `name` the action `action` (SCMP_ACT_ERRNO(EPERM), ...); owned by
 * the caller (an_spec_seccomp_free, or by the spec it is put in). */
struct an_spec_seccomp *an_test_seccomp_one_rule(const char *name, uint32_t action);

/* Force-delete the container if it is still there and remove the bundle. */
void an_test_bundle_remove(struct an_test_bundle *b);

#endif
