/* sandbox/opts_internal.h — the layout of struct an_sandbox_opts and helpers
 * shared by opts.c, profile.c and spec_build.c (not installed). */
#ifndef AN_SANDBOX_OPTS_INTERNAL_H
#define AN_SANDBOX_OPTS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "agentnest/ctx.h"
#include "agentnest/sandbox_opts.h"

struct an_ctx;

/* an_sandbox_opts_new_ctx whose default seccomp profile is the one of
 * profiles_dir (NULL: the context's): profile listing and explaining. */
int an_sb_opts_new_dir(const struct an_ctx *ctx, const char *profiles_dir, struct an_sandbox_opts **out,
                       an_error_t *err);

struct an_sandbox_opts {
  char *image;              /* NULL: unset (the caller picks its default image) */
  char *name;               /* NULL: unset */
  char *profile;            /* name or path of the last profile applied */
  uint64_t memory;          /* bytes */
  uint64_t millicpus;
  uint64_t pids;
  uint64_t tmp_size;        /* bytes */
  bool tmp_noexec;          /* /tmp mounted noexec (default: exec) */
  uint64_t shm_size;        /* /dev/shm tmpfs, bytes (default AN_SANDBOX_SHM_SIZE_DEFAULT) */
  uint64_t lifetime_ms;
  uint64_t exec_timeout_ms; /* 0: the remaining lifetime */
  uint64_t max_lifetime_ms; /* extend's bound on the whole lifetime; 0: default */
  uint64_t max_output;      /* bytes */
  uint64_t max_read;        /* bytes */
  uint64_t disk;            /* bytes: the workspace's quota */
  uint64_t inodes;          /* the workspace's inode quota */
  uid_t uid;
  gid_t gid;
  char *workdir;
  char *network;
  char *seccomp_profile;    /* path */
  char *seccomp_default;    /* the default profile's path (set by an_sandbox_opts_new): what
                               a chosen profile is checked against (seccomp_check.h) */
  bool seccomp_unsafe;      /* accept a profile allowing what the default denies */
  enum an_sandbox_landlock landlock;
  char **env;               /* "K=V", NULL-terminated, or NULL */
  char **secret_names;      /* parallel NULL-terminated lists, or NULL */
  char **secret_values;     /* wiped on free */
  char **cdi_devices;       /* qualified CDI names, NULL-terminated, or NULL */
  char **cdi_spec_dirs;     /* NULL: an_cdi_default_dirs */
  bool cdi_allow_hooks;
  const struct an_ctx *ctx; /* borrowed (agentnest/ctx.h); NULL: the defaults */
  char *approve_with;       /* approval hook: absolute program path or "unix:PATH"; NULL none */
  uint64_t approval_timeout_ms; /* 0: AN_APPROVAL_DEFAULT_TIMEOUT_MS */
  char **egress_allow;      /* --allow entries as given, NULL-terminated, or NULL */
  char **dns_upstream;      /* --dns-upstream addresses as given, or NULL */
};

struct an_jgen;
/* Emit the options as one JSON object (the document an_sandbox_opts_to_json
 * writes; never secrets) into j, e.g. as a member of a larger document. */
void an_sandbox_opts_gen(struct an_jgen *j, const struct an_sandbox_opts *o);

/* Put the heap string "KEY=..." into *list (NULL-terminated, heap, may be
 * NULL), replacing an entry with the same KEY.  Consumes entry even on
 * failure.  Returns 0 or -ENOMEM. */
int an_sandbox_strv_set_env(char ***list, char *entry);

/* Record which profile was applied (copied).  Errors: -ENOMEM. */
int an_sandbox_opts_set_profile_name(struct an_sandbox_opts *opts, const char *profile,
                                     an_error_t *err);

/* CDI devices (sandbox/cdi_opts.c).  an_sb_cdi_set_option: true when
 * `option` is one of gpu, cdi_spec_dir, cdi_allow_hooks (*r: the setter's
 * result).  an_sb_cdi_profile_key: the same for a profile key (gpu, devices,
 * cdi_spec_dirs, cdi_allow_hooks) with its JSON value.  an_sb_cdi_opts_gen
 * writes those members (when set).  an_sb_cdi_apply applies the devices to a
 * built spec (agentnest/cdi.h's errors) and refuses a CDI mount point that
 * the image at `rootfs` (host path) lacks. */
struct yajl_val_s;
struct an_spec;
bool an_sb_cdi_set_option(struct an_sandbox_opts *o, const char *option, const char *text, int *r,
                          an_error_t *err);
bool an_sb_cdi_profile_key(struct an_sandbox_opts *o, const char *key, struct yajl_val_s *v,
                           int *r, an_error_t *err);
void an_sb_cdi_opts_gen(struct an_jgen *j, const struct an_sandbox_opts *o);
void an_sb_cdi_opts_free(struct an_sandbox_opts *o);
int an_sb_cdi_apply(const struct an_sandbox_opts *o, const char *rootfs, struct an_spec *spec,
                    an_error_t *err);

/* Egress (sandbox/egress_opts.c): the options "allow" and "dns_upstream" and
 * their profile keys (same shape as the CDI ones above), their JSON members,
 * an_sb_egress_policy (the net/policy.h policy of the options; caller frees;
 * -EINVAL for entries the mode refuses) and an_sb_egress_check, called at
 * create before anything is made: the policy's errors.  Enforcement (and
 * its failures) is sandbox/egress_run.h's. */
struct an_egress_policy;
bool an_sb_egress_set_option(struct an_sandbox_opts *o, const char *option, const char *text, int *r,
                             an_error_t *err);
bool an_sb_egress_profile_key(struct an_sandbox_opts *o, const char *key, struct yajl_val_s *v,
                              int *r, an_error_t *err);
void an_sb_egress_opts_gen(struct an_jgen *j, const struct an_sandbox_opts *o);
void an_sb_egress_opts_free(struct an_sandbox_opts *o);
int an_sb_egress_policy(const struct an_sandbox_opts *o, struct an_egress_policy **out, an_error_t *err);
int an_sb_egress_check(const struct an_sandbox_opts *o, an_error_t *err);

#endif
