/* agentnest/policy.h — policy as data: the effective policy of a sandbox,
 * and what each profile enforces (and does not) on this host, as JSON.
 *
 * Both are derived from the OCI runtime-spec config the engine applies
 * (struct an_spec: for a live sandbox the config.json the engine stored and
 * exec reads back; for a profile the spec an_sandbox_build_spec makes from
 * it), never from a second description, so what is printed cannot drift
 * from what is enforced.  Host facts that decide whether a control takes
 * effect (Landlock ABI, cgroup layout and controllers, online CPUs) are probed
 * at the call.  Nothing here prints; the CLI does (`agentnest inspect
 * --policy`, `agentnest policy explain`).
 *
 * Thread-safety: no global state; an_policy_explain* may run on any thread;
 * an_sandbox_policy uses the handle as the calls of agentnest/sandbox.h do
 * (one thread at a time).
 */
#ifndef AGENTNEST_POLICY_H
#define AGENTNEST_POLICY_H

#include "agentnest/error.h"
#include "agentnest/sandbox.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The effective policy of a live sandbox as one JSON object:
 *   {"id", "namespaces":[{"type","path"}], "user":{"uid","gid","additional_gids","umask"},
 *    "id_mappings":{"uid":[{"container_id","host_id","size"}],"gid":[...]},
 *    "no_new_privileges", "capabilities":{"bounding","effective","inheritable",
 *    "permitted","ambient"} (names), "rlimits":[{"type","soft","hard"}],
 *    "root":{"path","readonly","propagation"},
 *    "mounts":[{"destination","type","source","options":[...]}],
 *    "masked_paths", "readonly_paths", "devices":[{"path","type","major","minor","mode"}],
 *    "sysctl":{}, "cgroup":{"path","memory_limit","memory_swap","cpu_quota_us",
 *    "cpu_period_us","cpus","pids_limit","devices":[{"allow","type","major","minor",
 *    "access"}],"controllers":{"memory":bool,"pids":bool,"cpu":bool,"devices":bool}},
 *    "seccomp":{"default_action","default_errno","architectures","flags","rules",
 *    "conditional_syscalls","digest","denies":[probe labels],"allows":[probe labels],
 *    "widens_default":[labels]},
 *    "landlock":{"mode","kernel_abi","enforced","writable_paths"},
 *    "network":{"mode","namespace"},
 *    "limits":{"lifetime_ms","exec_timeout_ms","max_output","max_read"},
 *    "not_enforced":[sentences]}
 * Sizes are bytes, times ms, CPU quota/period µs (runtime-spec units).
 * "digest" is "sha256:" + the hash the engine's seccomp cache names the
 * compiled filter by; "denies"/"allows" are the probe calls of
 * src/sandbox/seccomp_check.h as the compiled filter answers them.
 * *json heap (caller frees).  Errors: reading the stored spec (named);
 * -EINVAL a stored seccomp section the compiler refuses; -ENOMEM. */
int an_sandbox_policy(struct an_sandbox *sb, char **json, an_error_t *err);

/* What profiles enforce on this host:
 *   {"host":{"landlock_abi","cgroup_layout","controllers":[...],"online_cpus"},
 *    "profiles_dir", "profiles":[{"name","runnable":bool,"reason"?,"image",
 *    "policy":{...the members above, without "id"}}]}
 * profile: a name or file as an_sandbox_opts_load_profile takes, or NULL for
 * every *.json in profiles_dir (NULL: an_sandbox_profiles_dir()).  A
 * profile that cannot run here (it says "unsupported", or its seccomp
 * profile widens the default) is listed with runnable false and the
 * reason.  The spec is built for a placeholder image and id range, so
 * "root", host ids and the workspace source are illustrative.
 * *json heap (caller frees).  Errors: the directory cannot be read; a named
 * profile cannot be loaded (as an_sandbox_opts_load_profile); -ENOMEM. */
int an_policy_explain(const char *profile, const char *profiles_dir, char **json,
                      an_error_t *err);

/* As an_policy_explain (*json the caller's, free(); the same errors), and
 * with store_root (non-NULL) a profile whose image is not in that image
 * store is also runnable false, the reason an_image_resolve's ("image NAME:
 * not found in the image store ROOT; import it first: ..."). */
int an_policy_explain_store(const char *store_root, const char *profile, const char *profiles_dir,
                            char **json, an_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
