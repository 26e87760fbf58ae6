/* Differential tests: agentnest-oci against Debian's runc (1.1) and crun
 * (1.8) on the SAME bundle and config.json.  The container runs one probe
 * script and prints what it sees, in sections; each section must be the same
 * under all three runtimes, except for the differences listed below with
 * their reasons.
 *
 * Expected differences (not failures):
 *  - ociVersion: crun 1.8 refuses configs whose ociVersion is not 1.0.x
 *    ("unknown version specified"), so the shared config says "1.0.2".
 *  - `state`: "ociVersion" is each runtime's own spec version (runc
 *    "1.0.2-dev", crun "1.0.0", agentnest-oci "1.2.0"); crun prints "rootfs"
 *    as written in config.json (relative) and adds "systemd-scope"; runc
 *    leaves "owner" empty.  Compared: id, status, pid > 0, bundle.
 *  - crun needs a private mount namespace with an empty tmpfs over
 *    /sys/fs/cgroup/unified on this hybrid host, or it refuses to run; this
 *    changes nothing the container sees (its cgroup mounts are its own).
 *  - mount points: see mount_differences[] below.
 *  - cgroup mounts inside the container: on this hybrid host all three
 *    mount the v1 hierarchies (tmpfs + one per controller, each the
 *    container's own cgroup) at /sys/fs/cgroup; AgentNest also shows the
 *    container's own cgroup2 directory at /sys/fs/cgroup/unified and does
 *    not mount the name=systemd hierarchy.  The limits themselves are
 *    compared where the kernel enforces them, in the host's hierarchies
 *    (cgroup_limits_on_the_host_match).
 */
#include <criterion/criterion.h>
#include <seccomp.h>
#include <yajl/yajl_tree.h>
#include "oci_common.h"

enum runtime { RT_AGENTNEST, RT_RUNC, RT_CRUN, RT_COUNT };
static const char *const rt_names[RT_COUNT] = {"agentnest-oci", "runc", "crun"};

static struct oci_bundle B;
static char cgroup_path[64];

/* Run `<runtime> --root <bundle>/<runtime>-state <args>` in the bundle dir,
 * stdin from an empty file in the bundle, stdout/stderr captured.  Returns
 * the exit status.  Not /dev/null: crun 1.8 fchowns its stdio to the
 * container's root (here host uid 100000), and that was the host's own
 * /dev/null, which every later container binds. */
static int rt_cmd(enum runtime rt, const char *fmt, ...) {
  char *args = NULL, *cmd = NULL;
  va_list ap;
  va_start(ap, fmt);
  cr_assert_geq(vasprintf(&args, fmt, ap), 0);
  va_end(ap);
  int n;
  switch (rt) {
  case RT_AGENTNEST:
    n = asprintf(&cmd, "cd %s && %s --root %s/an-state %s", B.dir, oci_bin(), B.dir, args);
    break;
  case RT_RUNC:
    n = asprintf(&cmd, "cd %s && runc --root %s/runc-state %s", B.dir, B.dir, args);
    break;
  default:
    n = asprintf(&cmd, "cd %s && unshare -m sh -c 'mount -t tmpfs tmpfs /sys/fs/cgroup/unified && "
                 "exec crun --root %s/crun-state %s'", B.dir, B.dir, args);
    break;
  }
  cr_assert_geq(n, 0);
  char *full = NULL;
  cr_assert_geq(asprintf(&full, ": >%s/stdin && %s <%s/stdin >%s 2>%s", B.dir, cmd, B.dir, B.out,
                         B.err), 0);
  int st = system(full);
  free(args);
  free(cmd);
  free(full);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void fini_all(void) {
  if (!B.dir[0]) return;
  for (int rt = 0; rt < RT_COUNT; rt++) {
    char cmd[1024];
    /* delete whatever a failed test left, with each runtime's own tool */
    snprintf(cmd, sizeof cmd, "ls %s/%s-state 2>/dev/null", B.dir,
             rt == RT_AGENTNEST ? "an" : rt == RT_RUNC ? "runc" : "crun");
    FILE *p = popen(cmd, "r");
    char id[128];
    while (p && fgets(id, sizeof id, p)) {
      id[strcspn(id, "\n")] = 0;
      rt_cmd((enum runtime) rt, "delete --force %s", id);
    }
    if (p) pclose(p);
  }
  oci_bundle_destroy(&B);
  /* runc and crun remove only the leaf: also their agentnest parents */
  if (cgroup_path[0]) an_test_cgroup_remove(cgroup_path);
}

/* The shared config: the default spec (user namespace, no capabilities,
 * noNewPrivileges, limits) plus a seccomp profile that denies mkdir, a
 * cgroupsPath under the agentnest subtree, and `args`. */
static void make_diff_bundle(const char *tag, const char *const *args) {
  oci_bundle_make(&B, tag, args);
  snprintf(cgroup_path, sizeof cgroup_path, "/agentnest/oci-diff-%d", (int) getpid());
  struct an_spec *spec = oci_bundle_read_spec(&B);
  free(spec->oci_version);
  spec->oci_version = strdup("1.0.2");
  free(spec->linux.cgroups_path);
  spec->linux.cgroups_path = strdup(cgroup_path);
  spec->hostname = spec->hostname ? spec->hostname : strdup("agentnest");
  struct an_spec_seccomp *s = calloc(1, sizeof *s);
  s->default_action = SCMP_ACT_ALLOW;
  s->architectures = calloc(1, sizeof *s->architectures);
  s->architectures[0] = SCMP_ARCH_X86_64;
  s->n_architectures = 1;
  s->syscalls = calloc(1, sizeof *s->syscalls);
  s->n_syscalls = 1;
  s->syscalls[0].names = calloc(3, sizeof(char *));
  s->syscalls[0].names[0] = strdup("mkdir");
  s->syscalls[0].names[1] = strdup("mkdirat");
  s->syscalls[0].action = SCMP_ACT_ERRNO(EPERM);
  spec->linux.seccomp = s;
  oci_bundle_write_spec(&B, spec);
  an_spec_free(spec);
}

/* What the container sees, in sections "== name". */
static const char PROBE[] =
  "echo '== status'; grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp|"
  "Seccomp_filters):' /proc/self/status;"
  "echo '== uid_map'; cat /proc/self/uid_map; echo '== gid_map'; cat /proc/self/gid_map;"
  "echo '== id'; id;"
  "echo '== hostname'; cat /proc/sys/kernel/hostname;"
  "echo '== seccomp_denies_mkdir'; mkdir /tmp/x 2>&1; echo \"status $?\";"
  "echo '== readonly_root'; touch /rootfile 2>&1; echo \"status $?\";"
  "echo '== mounts'; awk '{print $5}' /proc/self/mountinfo | sort -u";

/* Mount points allowed to differ, with why.  Each entry: the mount point,
 * and which runtimes lack it (a bit per runtime). */
static const struct { const char *point; unsigned missing_in; const char *why; } mount_differences[] = {
  /* AgentNest shows the container's own cgroup2 directory on a hybrid host
   * too (runc 1.1 and crun 1.8 do not); it mounts the hierarchies that hold
   * controllers, not name=systemd (see the header comment). */
  {"/sys/fs/cgroup/unified", (1u << RT_RUNC) | (1u << RT_CRUN), "own cgroup2 directory shown"},
  {"/sys/fs/cgroup/systemd", 1u << RT_AGENTNEST, "no systemd hierarchy inside (no systemd assumed)"},
};

static char *section(const char *out, const char *name) {
  char marker[64];
  snprintf(marker, sizeof marker, "== %s\n", name);
  const char *s = strstr(out, marker);
  if (!s) return strdup("<missing section>");
  s += strlen(marker);
  const char *e = strstr(s, "\n== ");
  return strndup(s, e ? (size_t) (e - s + 1) : strlen(s));
}

static bool allowed_mount_difference(const char *point, enum runtime lacking) {
  for (size_t i = 0; i < sizeof mount_differences / sizeof mount_differences[0]; i++)
    if (strcmp(mount_differences[i].point, point) == 0 && (mount_differences[i].missing_in & (1u << lacking)))
      return true;
  return false;
}

/* Every line of `a` missing from `b` must be an allowed difference. */
static void compare_mounts(const char *a, enum runtime ra, const char *b, enum runtime rb) {
  char *copy = strdup(a), *save = NULL;
  for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    char needle[512];
    snprintf(needle, sizeof needle, "\n%s\n", l);
    char *hay = NULL;
    cr_assert_geq(asprintf(&hay, "\n%s", b), 0);
    if (!strstr(hay, needle))
      cr_expect(allowed_mount_difference(l, rb), "mount point %s: present under %s, missing under %s",
                l, rt_names[ra], rt_names[rb]);
    free(hay);
  }
  free(copy);
}

Test(oci_diff, container_sees_the_same_isolation_under_all_three_runtimes, .fini = fini_all) {
  const char *args[] = {"sh", "-c", PROBE, NULL};
  make_diff_bundle("diff", args);
  char *out[RT_COUNT];
  struct stat dn0;
  cr_assert(stat("/dev/null", &dn0) == 0 && dn0.st_uid == 0,
            "the host's /dev/null is owned by uid %u before any runtime ran (something earlier "
            "chowned it: crun chowns its stdio to the container's root)", (unsigned) dn0.st_uid);
  for (int rt = 0; rt < RT_COUNT; rt++) {
    char id[64];
    snprintf(id, sizeof id, "diff-%d", (int) getpid());
    int st = rt_cmd((enum runtime) rt, "run %s", id);
    out[rt] = oci_slurp(B.out);
    cr_assert_eq(st, 0, "%s run failed (%d): %s", rt_names[rt], st, oci_last_err(&B));
    struct stat dn;
    cr_assert(stat("/dev/null", &dn) == 0 && dn.st_uid == 0,
              "the host's /dev/null changed owner (uid %u) under %s", (unsigned) dn.st_uid,
              rt_names[rt]);
  }
  const char *sections[] = {"status", "uid_map", "gid_map", "id", "hostname",
                            "seccomp_denies_mkdir", "readonly_root", NULL};
  for (const char **s = sections; *s; s++) {
    char *want = section(out[RT_RUNC], *s);
    for (int rt = 0; rt < RT_COUNT; rt++) {
      char *got = section(out[rt], *s);
      cr_expect_str_eq(got, want, "section %s: %s sees\n%s\nrunc sees\n%s", *s, rt_names[rt], got, want);
      free(got);
    }
    free(want);
  }
  /* the probe must really have been filtered and limited (not vacuous) */
  char *st = section(out[RT_AGENTNEST], "status");
  cr_assert(strstr(st, "Seccomp:\t2") && strstr(st, "NoNewPrivs:\t1") && strstr(st, "CapEff:\t0000000000000000"),
            "%s", st);
  free(st);
  char *mk = section(out[RT_AGENTNEST], "seccomp_denies_mkdir");
  cr_assert(strstr(mk, "Operation not permitted"), "%s", mk);
  free(mk);
  char *m[RT_COUNT];
  for (int rt = 0; rt < RT_COUNT; rt++) m[rt] = section(out[rt], "mounts");
  compare_mounts(m[RT_RUNC], RT_RUNC, m[RT_AGENTNEST], RT_AGENTNEST);
  compare_mounts(m[RT_AGENTNEST], RT_AGENTNEST, m[RT_RUNC], RT_RUNC);
  compare_mounts(m[RT_CRUN], RT_CRUN, m[RT_AGENTNEST], RT_AGENTNEST);
  compare_mounts(m[RT_AGENTNEST], RT_AGENTNEST, m[RT_CRUN], RT_CRUN);
  for (int rt = 0; rt < RT_COUNT; rt++) { free(m[rt]); free(out[rt]); }
}

Test(oci_diff, exit_statuses_match, .fini = fini_all) {
  const char *args[] = {"sh", "-c", "exit 42", NULL};
  make_diff_bundle("exit", args);
  for (int rt = 0; rt < RT_COUNT; rt++)
    cr_expect_eq(rt_cmd((enum runtime) rt, "run x-%d", (int) getpid()), 42, "%s: %s", rt_names[rt],
                 oci_last_err(&B));
  /* a missing executable: every runtime fails the run with status 1 */
  struct an_spec *spec = oci_bundle_read_spec(&B);
  const char *missing[] = {"/no/such/binary", NULL};
  oci_spec_set_args(spec, missing);
  oci_bundle_write_spec(&B, spec);
  an_spec_free(spec);
  for (int rt = 0; rt < RT_COUNT; rt++)
    cr_expect_eq(rt_cmd((enum runtime) rt, "run m-%d", (int) getpid()), 1, "%s", rt_names[rt]);
  /* state of a container that does not exist: 1 everywhere */
  for (int rt = 0; rt < RT_COUNT; rt++)
    cr_expect_eq(rt_cmd((enum runtime) rt, "state nope-%d", (int) getpid()), 1, "%s", rt_names[rt]);
}

static yajl_val state_json(enum runtime rt, const char *id) {
  cr_assert_eq(rt_cmd(rt, "state %s", id), 0, "%s state: %s", rt_names[rt], oci_last_err(&B));
  char *o = oci_slurp(B.out);
  char msg[128];
  yajl_val v = yajl_tree_parse(o, msg, sizeof msg);
  cr_assert_not_null(v, "%s state is not JSON: %s", rt_names[rt], o);
  free(o);
  return v;
}

static const char *get_str(yajl_val v, const char *k) {
  const char *p[] = {k, NULL};
  yajl_val s = yajl_tree_get(v, p, yajl_t_string);
  return s ? YAJL_GET_STRING(s) : "<absent>";
}

Test(oci_diff, state_fields_match_through_the_lifecycle, .fini = fini_all) {
  const char *args[] = {"sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.05; done", NULL};
  make_diff_bundle("state", args);
  char id[64];
  snprintf(id, sizeof id, "st-%d", (int) getpid());
  for (int r = 0; r < RT_COUNT; r++) {
    enum runtime rt = (enum runtime) r;
    cr_assert_eq(rt_cmd(rt, "create %s", id), 0, "%s create: %s", rt_names[rt], oci_last_err(&B));
    yajl_val v = state_json(rt, id);
    cr_expect_str_eq(get_str(v, "id"), id, "%s", rt_names[rt]);
    cr_expect_str_eq(get_str(v, "status"), "created", "%s", rt_names[rt]);
    cr_expect_str_eq(get_str(v, "bundle"), B.dir, "%s", rt_names[rt]);
    const char *pidp[] = {"pid", NULL};
    yajl_val pid = yajl_tree_get(v, pidp, yajl_t_number);
    cr_expect(pid && YAJL_GET_INTEGER(pid) > 0, "%s: pid", rt_names[rt]);
    cr_expect_str_neq(get_str(v, "created"), "<absent>", "%s", rt_names[rt]);
    yajl_tree_free(v);
    cr_assert_eq(rt_cmd(rt, "start %s", id), 0, "%s start: %s", rt_names[rt], oci_last_err(&B));
    v = state_json(rt, id);
    cr_expect_str_eq(get_str(v, "status"), "running", "%s", rt_names[rt]);
    yajl_tree_free(v);
    cr_assert_eq(rt_cmd(rt, "kill %s KILL", id), 0, "%s kill: %s", rt_names[rt], oci_last_err(&B));
    bool stopped = false;
    for (int i = 0; i < 200 && !stopped; i++) {
      v = state_json(rt, id);
      stopped = strcmp(get_str(v, "status"), "stopped") == 0;
      yajl_tree_free(v);
      if (!stopped) usleep(20000);
    }
    cr_expect(stopped, "%s: not stopped after kill", rt_names[rt]);
    cr_assert_eq(rt_cmd(rt, "delete %s", id), 0, "%s delete: %s", rt_names[rt], oci_last_err(&B));
    cr_expect_eq(rt_cmd(rt, "state %s", id), 1, "%s: state after delete", rt_names[rt]);
  }
}

/* A host-side cgroup v1 file of the container (hybrid host), "" if absent. */
static char *host_cgroup_file(const char *ctrl, const char *file) {
  char path[256];
  snprintf(path, sizeof path, "/sys/fs/cgroup/%s%s/%s", ctrl, cgroup_path, file);
  char *v = oci_slurp(path);
  v[strcspn(v, "\n")] = 0;
  return v;
}

/* The limits of the default spec (pids 256, memory 512 MiB + no swap, cpu
 * 1.0) land in the same host cgroup files under all three runtimes. */
Test(oci_diff, cgroup_limits_on_the_host_match, .fini = fini_all) {
  const char *args[] = {"sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.05; done", NULL};
  make_diff_bundle("limits", args);
  if (access("/sys/fs/cgroup/pids/cgroup.procs", F_OK) < 0)
    cr_skip_test("not a v1/hybrid host: the v1 files compared here do not exist");
  const char *files[][2] = {{"pids", "pids.max"}, {"memory", "memory.limit_in_bytes"},
                            {"memory", "memory.memsw.limit_in_bytes"}, {"cpu", "cpu.cfs_quota_us"},
                            {"cpu", "cpu.cfs_period_us"}, {NULL, NULL}};
  char *seen[RT_COUNT][8] = {{0}};
  char id[64];
  snprintf(id, sizeof id, "lim-%d", (int) getpid());
  for (int r = 0; r < RT_COUNT; r++) {
    enum runtime rt = (enum runtime) r;
    cr_assert_eq(rt_cmd(rt, "run -d %s", id), 0, "%s run -d: %s", rt_names[rt], oci_last_err(&B));
    for (int f = 0; files[f][0]; f++) seen[r][f] = host_cgroup_file(files[f][0], files[f][1]);
    cr_assert_eq(rt_cmd(rt, "delete --force %s", id), 0, "%s delete: %s", rt_names[rt], oci_last_err(&B));
  }
  cr_assert_str_eq(seen[RT_AGENTNEST][0], "256", "pids.max under agentnest-oci");
  cr_assert_str_eq(seen[RT_AGENTNEST][1], "536870912");
  for (int f = 0; files[f][0]; f++)
    for (int r = 0; r < RT_COUNT; r++)
      cr_expect_str_eq(seen[r][f], seen[RT_RUNC][f], "%s/%s: %s has \"%s\", runc \"%s\"", files[f][0],
                       files[f][1], rt_names[r], seen[r][f], seen[RT_RUNC][f]);
  /* and the cgroup is gone after delete, under every runtime */
  char path[256];
  snprintf(path, sizeof path, "/sys/fs/cgroup/pids%s", cgroup_path);
  cr_expect(access(path, F_OK) < 0, "%s left behind", path);
  for (int r = 0; r < RT_COUNT; r++)
    for (int f = 0; files[f][0]; f++) free(seen[r][f]);
}

static char **strv(const char *a, const char *b) {
  char **v = calloc(3, sizeof(char *));
  v[0] = a ? strdup(a) : NULL;
  v[1] = a && b ? strdup(b) : NULL;
  return v;
}

static void set_caps(struct an_spec *spec, char **bnd, char **eff, char **prm, char **inh, char **amb) {
  struct an_spec_capabilities *c = spec->process->capabilities;
  char **old[] = {c->bounding, c->effective, c->permitted, c->inheritable, c->ambient};
  for (size_t i = 0; i < 5; i++) {
    for (char **p = old[i]; p && *p; p++) free(*p);
    free(old[i]);
  }
  c->bounding = bnd; c->effective = eff; c->permitted = prm; c->inheritable = inh; c->ambient = amb;
}

/* Capability sets after execve, as root and as a non-root user with an
 * ambient capability: the kernel's rules (capabilities(7), "Transformation
 * of capabilities during execve") make these easy to get subtly wrong. */
Test(oci_diff, capability_sets_after_execve_match, .fini = fini_all) {
  const char *args[] = {"sh", "-c", "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/self/status; id -u", NULL};
  make_diff_bundle("caps", args);
  struct {
    uid_t uid;
    const char *bnd[2], *eff[2], *inh[2], *amb[2];
  } cases[] = {
    {0, {"CAP_CHOWN", "CAP_NET_BIND_SERVICE"}, {"CAP_CHOWN", NULL}, {NULL, NULL}, {NULL, NULL}},
    {1000, {"CAP_CHOWN", "CAP_NET_BIND_SERVICE"}, {"CAP_NET_BIND_SERVICE", NULL},
     {"CAP_NET_BIND_SERVICE", NULL}, {"CAP_NET_BIND_SERVICE", NULL}},
    {1000, {"CAP_CHOWN", NULL}, {"CAP_CHOWN", NULL}, {NULL, NULL}, {NULL, NULL}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    struct an_spec *spec = oci_bundle_read_spec(&B);
    spec->process->user.uid = cases[c].uid;
    spec->process->user.gid = cases[c].uid;
    set_caps(spec, strv(cases[c].bnd[0], cases[c].bnd[1]), strv(cases[c].eff[0], cases[c].eff[1]),
             strv(cases[c].eff[0], cases[c].eff[1]), strv(cases[c].inh[0], cases[c].inh[1]),
             strv(cases[c].amb[0], cases[c].amb[1]));
    oci_bundle_write_spec(&B, spec);
    an_spec_free(spec);
    char *out[RT_COUNT];
    for (int rt = 0; rt < RT_COUNT; rt++) {
      int st = rt_cmd((enum runtime) rt, "run caps-%d", (int) getpid());
      out[rt] = oci_slurp(B.out);
      cr_assert_eq(st, 0, "case %zu: %s run failed (%d): %s", c, rt_names[rt], st, oci_last_err(&B));
    }
    for (int rt = 0; rt < RT_COUNT; rt++)
      cr_expect_str_eq(out[rt], out[RT_RUNC], "case %zu: %s sees\n%s\nrunc sees\n%s", c,
                       rt_names[rt], out[rt], out[RT_RUNC]);
    /* not vacuous: the configured sets really show */
    const char *want[] = {"CapEff:\t0000000000000001", "CapAmb:\t0000000000000400", "CapBnd:\t0000000000000001"};
    cr_assert(strstr(out[RT_AGENTNEST], want[c]), "case %zu: %s", c, out[RT_AGENTNEST]);
    for (int rt = 0; rt < RT_COUNT; rt++) free(out[rt]);
  }
}
