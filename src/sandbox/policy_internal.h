/* sandbox/policy_internal.h — the policy emitter shared by policy.c
 * (a live sandbox) and policy_explain.c (profiles) (internal). */
#ifndef AN_SANDBOX_POLICY_INTERNAL_H
#define AN_SANDBOX_POLICY_INTERNAL_H

#include <stdint.h>
#include "agentnest/error.h"
#include "agentnest/sandbox_opts.h"
#include "agentnest/spec.h"

struct an_jgen;

/* What this host offers that decides whether a control takes effect. */
struct an_sb_host_facts {
  int landlock_abi;            /* 0: none */
  unsigned online_cpus;        /* 0: unknown */
  const char *cgroup_layout;   /* "unified", "hybrid", "legacy"; NULL: no cgroup fs */
  uint32_t controllers;        /* AN_CG_BIT(enum an_cg_ctrl) present in some hierarchy */
};

/* Probe the facts (never fails; what cannot be probed stays 0/NULL). */
int an_sb_host_facts(struct an_sb_host_facts *h);

/* Emit the policy members of agentnest/policy.h (namespaces ... not_enforced)
 * into an open JSON map.  opts (may be NULL) adds the seccomp profile path
 * and its widening of the default, the network mode and the sandbox-layer
 * limits.  Errors: compiling the seccomp section (as an_seccomp_prepare),
 * a bad Landlock annotation (-EINVAL), -ENOMEM. */
int an_sb_policy_members(struct an_jgen *j, const struct an_spec *spec,
                         const struct an_sandbox_opts *opts, const struct an_sb_host_facts *h,
                         an_error_t *err);

#endif
