/* cli/oci/cmd_features.c — `features`: runtime-spec features.md JSON
 * ("Features Structure"): what this runtime implements, for container
 * managers to query before they build a config. */
#include <ctype.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include "cli/oci/oci.h"

static const char *const hooks[] = {"prestart", "createRuntime", "createContainer",
                                    "startContainer", "poststart", "poststop", NULL};

/* The mount options the engine's mount code understands (engine/mount.c
 * opt_table; config.md "Mounts").  Anything else is passed to the
 * filesystem as data, which features.md does not count as an option. */
static const char *const mount_options[] = {
  "async", "atime", "bind", "defaults", "dev", "diratime", "exec", "idmap", "loud", "noatime",
  "nodev", "nodiratime", "noexec", "nomand", "nosuid", "nosymfollow", "private", "rbind",
  "relatime", "remount", "ridmap", "ro", "rprivate", "rshared", "rslave", "runbindable", "rw",
  "shared", "slave", "strictatime", "suid", "symfollow", "tmpcopyup", "unbindable", NULL};

static const char *const namespaces[] = {"cgroup", "ipc", "mount", "network", "pid", "time",
                                         "user", "uts", NULL};

/* SCMP_ACT_NOTIFY is absent: seccomp user notification is not supported. */
static const char *const seccomp_actions[] = {
  "SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS",
  "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG", "SCMP_ACT_TRACE", "SCMP_ACT_TRAP", NULL};

static const char *const seccomp_operators[] = {
  "SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_LE", "SCMP_CMP_LT",
  "SCMP_CMP_MASKED_EQ", "SCMP_CMP_NE", NULL};

static const char *const seccomp_archs[] = {
  "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM", "SCMP_ARCH_LOONGARCH64", "SCMP_ARCH_M68K",
  "SCMP_ARCH_MIPS", "SCMP_ARCH_MIPS64", "SCMP_ARCH_MIPS64N32", "SCMP_ARCH_MIPSEL",
  "SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PARISC", "SCMP_ARCH_PARISC64",
  "SCMP_ARCH_PPC", "SCMP_ARCH_PPC64", "SCMP_ARCH_PPC64LE", "SCMP_ARCH_RISCV64",
  "SCMP_ARCH_S390", "SCMP_ARCH_S390X", "SCMP_ARCH_SH", "SCMP_ARCH_SHEB", "SCMP_ARCH_X32",
  "SCMP_ARCH_X86", "SCMP_ARCH_X86_64", NULL};

static const char *const seccomp_flags[] = {"SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG",
                                            "SECCOMP_FILTER_FLAG_SPEC_ALLOW", NULL};

/* Every capability this kernel and libcap know, as "CAP_*" names. */
static void capabilities(yajl_gen g) {
  oci_json_key(g, "capabilities");
  yajl_gen_array_open(g);
  for (cap_value_t v = 0; v < (cap_value_t) cap_max_bits(); v++) {
    char *n = cap_to_name(v);
    if (!n) continue;
    if (strncmp(n, "cap_", 4) == 0) {
      for (char *p = n; *p; p++) *p = (char) toupper((unsigned char) *p);
      oci_json_str(g, n);
    }
    cap_free(n);
  }
  yajl_gen_array_close(g);
}

/* "name": {"enabled": on} */
static void enabled(yajl_gen g, const char *name, bool on) {
  oci_json_key(g, name);
  yajl_gen_map_open(g);
  oci_json_kv_bool(g, "enabled", on);
  yajl_gen_map_close(g);
}

int oci_cmd_features(struct oci_ctx *ctx, int argc, char **argv) {
  const struct oci_command *cmd = oci_find_command(argv[0]);
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    oci_print_command_help(cmd, stdout);
    return 0;
  }
  if (oci_check_args(ctx, cmd, argc - 1, 0, 0)) return 1;
  yajl_gen g = oci_json_gen(true);
  if (!g) return oci_fail(ctx, "out of memory");
  yajl_gen_map_open(g);
  oci_json_kv_str(g, "ociVersionMin", "1.0.0");
  oci_json_kv_str(g, "ociVersionMax", OCI_SPEC_VERSION);
  oci_json_str_array(g, "hooks", hooks);
  oci_json_str_array(g, "mountOptions", mount_options);
  oci_json_key(g, "linux");
  yajl_gen_map_open(g);
  oci_json_str_array(g, "namespaces", namespaces);
  capabilities(g);
  static const char *const cgroup_off[] = {"systemd", "systemdUser", "rdma", NULL};
  oci_json_key(g, "cgroup");
  yajl_gen_map_open(g);
  oci_json_kv_bool(g, "v1", true);
  oci_json_kv_bool(g, "v2", true);
  for (const char *const *k = cgroup_off; *k; k++) oci_json_kv_bool(g, *k, false);
  yajl_gen_map_close(g);
  oci_json_key(g, "seccomp");
  yajl_gen_map_open(g);
  oci_json_kv_bool(g, "enabled", true);
  oci_json_str_array(g, "actions", seccomp_actions);
  oci_json_str_array(g, "operators", seccomp_operators);
  oci_json_str_array(g, "archs", seccomp_archs);
  oci_json_str_array(g, "knownFlags", seccomp_flags);
  oci_json_str_array(g, "supportedFlags", seccomp_flags);
  yajl_gen_map_close(g);
  static const char *const lsm_off[] = {"apparmor", "selinux", "intelRdt", NULL};
  for (const char *const *k = lsm_off; *k; k++) enabled(g, *k, false);
  oci_json_key(g, "mountExtensions");
  yajl_gen_map_open(g);
  enabled(g, "idmap", true);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);   /* linux */
  oci_json_key(g, "annotations");
  yajl_gen_map_open(g);
  const struct scmp_version *v = seccomp_version();
  char ver[32];
  snprintf(ver, sizeof ver, "%u.%u.%u", v->major, v->minor, v->micro);
  oci_json_kv_str(g, "io.github.seccomp.libseccomp.version", ver);
  oci_json_kv_str(g, "io.agentnest.version", AN_VERSION);
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
  return oci_json_print(g) < 0 ? oci_fail(ctx, "write JSON") : 0;
}
