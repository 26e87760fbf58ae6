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
static void capabilities(struct an_jgen *g) {
  an_jgen_key(g, "capabilities");
  an_jgen_array_open(g);
  for (cap_value_t v = 0; v < (cap_value_t) cap_max_bits(); v++) {
    char *n = cap_to_name(v);
    if (!n) continue;
    if (strncmp(n, "cap_", 4) == 0) {
      for (char *p = n; *p; p++) *p = (char) toupper((unsigned char) *p);
      an_jgen_str(g, n);
    }
    cap_free(n);
  }
  an_jgen_array_close(g);
}

/* "name": {"enabled": on} */
static void enabled(struct an_jgen *g, const char *name, bool on) {
  an_jgen_key(g, name);
  an_jgen_map_open(g);
  an_jgen_kv_bool(g, "enabled", on);
  an_jgen_map_close(g);
}

int oci_cmd_features(struct oci_ctx *ctx, int argc, char **argv) {
  const struct oci_command *cmd = oci_find_command(argv[0]);
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    oci_print_command_help(cmd, stdout);
    return 0;
  }
  if (oci_check_args(ctx, cmd, argc - 1, 0, 0)) return 1;
  cleanup_jgen struct an_jgen j;
  oci_json_init(&j, true);   /* a failure is reported by oci_json_print */
  struct an_jgen *g = &j;
  an_jgen_map_open(g);
  an_jgen_kv_str(g, "ociVersionMin", "1.0.0");
  an_jgen_kv_str(g, "ociVersionMax", OCI_SPEC_VERSION);
  an_jgen_kv_strv(g, "hooks", hooks);
  an_jgen_kv_strv(g, "mountOptions", mount_options);
  an_jgen_key(g, "linux");
  an_jgen_map_open(g);
  an_jgen_kv_strv(g, "namespaces", namespaces);
  capabilities(g);
  static const char *const cgroup_off[] = {"systemd", "systemdUser", "rdma", NULL};
  an_jgen_key(g, "cgroup");
  an_jgen_map_open(g);
  an_jgen_kv_bool(g, "v1", true);
  an_jgen_kv_bool(g, "v2", true);
  for (const char *const *k = cgroup_off; *k; k++) an_jgen_kv_bool(g, *k, false);
  an_jgen_map_close(g);
  an_jgen_key(g, "seccomp");
  an_jgen_map_open(g);
  an_jgen_kv_bool(g, "enabled", true);
  an_jgen_kv_strv(g, "actions", seccomp_actions);
  an_jgen_kv_strv(g, "operators", seccomp_operators);
  an_jgen_kv_strv(g, "archs", seccomp_archs);
  an_jgen_kv_strv(g, "knownFlags", seccomp_flags);
  an_jgen_kv_strv(g, "supportedFlags", seccomp_flags);
  an_jgen_map_close(g);
  static const char *const lsm_off[] = {"apparmor", "selinux", "intelRdt", NULL};
  for (const char *const *k = lsm_off; *k; k++) enabled(g, *k, false);
  an_jgen_key(g, "mountExtensions");
  an_jgen_map_open(g);
  enabled(g, "idmap", true);
  an_jgen_map_close(g);
  an_jgen_map_close(g);   /* linux */
  an_jgen_key(g, "annotations");
  an_jgen_map_open(g);
  const struct scmp_version *v = seccomp_version();
  char ver[32];
  snprintf(ver, sizeof ver, "%u.%u.%u", v->major, v->minor, v->micro);
  an_jgen_kv_str(g, "io.github.seccomp.libseccomp.version", ver);
  an_jgen_kv_str(g, "io.agentnest.version", AN_VERSION);
  an_jgen_map_close(g);
  an_jgen_map_close(g);
  int r = oci_json_print(g);
  return r < 0 ? oci_fail(ctx, "features: JSON: %s", an_errno_name(-r)) : 0;
}
