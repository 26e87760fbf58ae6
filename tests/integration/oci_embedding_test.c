/* tests/integration/oci_embedding_test.c — what engines (podman, dockerd,
 * containerd's runc shim) rely on when they run `agentnest-oci` as their
 * runtime (issue 11), black-box on the built binary: create returning only
 * when init no longer depends on the create process, runc's exit codes and
 * wording for kill/delete, `update`.  The engines themselves are tested by
 * `make check-engines`. */
#include <criterion/criterion.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <yajl/yajl_tree.h>
#include "oci_common.h"

static struct oci_bundle B;
static void fini_bundle(void) { oci_bundle_destroy(&B); }

static const char *err_text(void) { return oci_last_err(&B); }

/* Make the bundle's config a runc-style one, as engines write it: no user
 * namespace, so the process runs as host uid 0 (without capabilities). */
static void without_userns(void) {
  struct an_spec *spec = oci_bundle_read_spec(&B);
  struct an_spec_linux *l = &spec->linux;
  size_t k = 0;
  for (size_t i = 0; i < l->n_namespaces; i++)
    if (l->namespaces[i].clone_flag != CLONE_NEWUSER) l->namespaces[k++] = l->namespaces[i];
    else free(l->namespaces[i].path);
  l->n_namespaces = k;
  l->ns_flags &= ~CLONE_NEWUSER;
  free(l->uid_mappings);
  free(l->gid_mappings);
  l->uid_mappings = l->gid_mappings = NULL;
  l->n_uid_mappings = l->n_gid_mappings = 0;
  oci_bundle_write_spec(&B, spec);
  an_spec_free(spec);
}

/* Containers running as uid 0 keep the parent-death signal that init arms
 * at clone (a uid change would clear it).  If `create` returns before init
 * has disarmed it, create's exit kills init and `start` finds a stopped
 * container.  200 rounds make the old race show reliably. */
Test(oci_embedding, create_start_delete_as_uid_0_runs_every_time, .fini = fini_bundle,
     .timeout = 600) {
  static const char *const args[] = {"true", NULL};
  oci_bundle_make(&B, "uid0", args);
  without_userns();
  int failed = 0;
  char first[4096] = "";
  for (int i = 0; i < 200; i++) {
    int r = oci_cmd(&B, "create --bundle %s @u%d", B.dir, i);
    if (r == 0) r = oci_cmd(&B, "start @u%d", i);
    if (r != 0) {
      if (!failed) snprintf(first, sizeof first, "round %d: %s", i, err_text());
      failed++;
    }
    cr_assert_eq(oci_cmd(&B, "delete --force @u%d", i), 0, "delete: %s", err_text());
  }
  cr_assert_eq(failed, 0, "%d of 200 create/start rounds failed; first: %s", failed, first);
}

static const char *const SLEEPER[] = {"sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.05; done", NULL};

/* The status `state` reports for the container id (already expanded). */
static bool is_stopped(const char *id) {
  if (oci_cmd(&B, "state %s", id) != 0) return false;
  char *o = oci_slurp(B.out);
  bool stopped = strstr(o, "\"status\": \"stopped\"") != NULL;
  free(o);
  return stopped;
}

/* runc 1.1: `kill --all` of a stopped container exits 0; `kill` exits 1
 * with "container not running", which containerd's shim matches to treat
 * the process as finished; a missing container "does not exist". */
Test(oci_embedding, kill_of_a_stopped_container_answers_as_runc, .fini = fini_bundle) {
  static const char *const args[] = {"true", NULL};
  oci_bundle_make(&B, "kill", args);
  cr_assert_eq(oci_cmd(&B, "create --bundle %s @k", B.dir), 0, "%s", err_text());
  cr_assert_eq(oci_cmd(&B, "start @k"), 0, "%s", err_text());
  char *id = oci_expand_ids("@k");
  for (int i = 0; i < 500 && !is_stopped(id); i++) usleep(10000);
  cr_assert(is_stopped(id), "container did not stop");
  free(id);
  cr_assert_eq(oci_cmd(&B, "kill --all @k KILL"), 0, "kill --all of a stopped container: %s",
               err_text());
  cr_assert_eq(oci_cmd(&B, "kill @k KILL"), 1);
  cr_assert(strstr(err_text(), "container not running"), "%s", err_text());
  cr_assert_eq(oci_cmd(&B, "kill @nosuch KILL"), 1);
  cr_assert(strstr(err_text(), "does not exist"), "%s", err_text());
  cr_assert_eq(oci_cmd(&B, "delete @k"), 0, "%s", err_text());
}

/* A cgroup file of the container `id` (expanded) on the host: the v1
 * hierarchy `v1` and file `f1` on a v1/hybrid host, `f2` in the cgroup2
 * tree on a cgroup2-only host. */
static char *cg_file(const char *id, const char *v1, const char *f1, const char *f2) {
  char p[512];
  struct stat st;
  snprintf(p, sizeof p, "/sys/fs/cgroup/%s/agentnest/%s", v1, id);
  if (stat(p, &st) == 0) snprintf(p, sizeof p, "/sys/fs/cgroup/%s/agentnest/%s/%s", v1, id, f1);
  else snprintf(p, sizeof p, "/sys/fs/cgroup/agentnest/%s/%s", id, f2);
  char *s = oci_slurp(p);
  s[strcspn(s, "\n")] = 0;
  return s;
}

static void assert_cg(const char *id, const char *v1, const char *f1, const char *f2,
                      const char *want1, const char *want2) {
  char *got = cg_file(id, v1, f1, f2);
  cr_assert(strcmp(got, want1) == 0 || strcmp(got, want2) == 0, "%s/%s: %s, want %s (v1) or %s (v2)",
            v1, f1, got, want1, want2);
  free(got);
}

/* runc's `update` flags and `update --resources -` (docker update, CRI
 * UpdateContainerResources). */
Test(oci_embedding, update_with_runc_flags_and_resources_json_changes_the_cgroup,
     .fini = fini_bundle) {
  oci_bundle_make(&B, "upd", SLEEPER);
  cr_assert_eq(oci_cmd(&B, "run -d --bundle %s @u", B.dir), 0, "%s", err_text());
  char *id = oci_expand_ids("@u");
  cr_assert_eq(oci_cmd(&B, "update --memory 64m --memory-swap 64m --pids-limit 50 "
                       "--cpu-quota 50000 --cpu-period 100000 --cpu-share 512 @u"), 0,
               "update: %s", err_text());
  assert_cg(id, "memory", "memory.limit_in_bytes", "memory.max", "67108864", "67108864");
  assert_cg(id, "pids", "pids.max", "pids.max", "50", "50");
  assert_cg(id, "cpu", "cpu.cfs_quota_us", "cpu.max", "50000", "50000 100000");
  assert_cg(id, "cpu", "cpu.shares", "cpu.weight", "512", "20");

  char json[PATH_MAX + 16];
  snprintf(json, sizeof json, "%s/res.json", B.dir);
  FILE *f = fopen(json, "w");
  cr_assert(f);
  fputs("{\"memory\": {\"limit\": 33554432, \"swap\": 33554432}, \"pids\": {\"limit\": 20}}", f);
  fclose(f);
  cr_assert_eq(oci_cmd(&B, "update --pids-limit 99 --resources - @u < %s", json), 0,
               "update -r -: %s", err_text());
  assert_cg(id, "memory", "memory.limit_in_bytes", "memory.max", "33554432", "33554432");
  assert_cg(id, "pids", "pids.max", "pids.max", "20", "20");
  /* the stored config has the new limits */
  char cfg[PATH_MAX + 64];
  snprintf(cfg, sizeof cfg, "%s/%s/config.json", B.root, id);
  char *c = oci_slurp(cfg);
  cr_assert(strstr(c, "33554432"), "stored config not updated");
  free(c);

  cr_assert_eq(oci_cmd(&B, "update --memory nonsense @u"), 1, "a bad value was accepted");
  cr_assert(strstr(err_text(), "--memory"), "%s", err_text());
  cr_assert_eq(oci_cmd(&B, "update -r %s/missing.json @u", B.dir), 1);
  cr_assert_eq(oci_cmd(&B, "kill @u KILL"), 0, "%s", err_text());
  for (int i = 0; i < 500 && !is_stopped(id); i++) usleep(10000);
  cr_assert_eq(oci_cmd(&B, "update --memory 64m @u"), 1);
  cr_assert(strstr(err_text(), "container not running"), "%s", err_text());
  cr_assert_eq(oci_cmd(&B, "delete @u"), 0, "%s", err_text());
  free(id);
}

static char **strv(const char *const *v) {
  size_t n = 0;
  while (v[n]) n++;
  char **out = calloc(n + 1, sizeof *out);
  for (size_t i = 0; i < n; i++) out[i] = strdup(v[i]);
  return out;
}

/* The stock `runc spec` config lists its three capabilities in every set
 * but inheritable, ambient included (which the kernel cannot raise without
 * inheritable): runc runs it, skipping those ambient ones, and so must we. */
Test(oci_embedding, stock_runc_spec_capabilities_with_ambient_run_as_under_runc,
     .fini = fini_bundle) {
  static const char *const args[] = {"sh", "-c", "grep -E '^Cap(Prm|Amb)' /proc/self/status", NULL};
  oci_bundle_make(&B, "rspec", args);
  without_userns();
  struct an_spec *spec = oci_bundle_read_spec(&B);
  static const char *const three[] = {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE", NULL};
  static const char *const none[] = {NULL};
  struct an_spec_capabilities *c = spec->process->capabilities;
  char **sets[] = {c->bounding, c->effective, c->inheritable, c->permitted, c->ambient};
  for (size_t i = 0; i < 5; i++) {
    for (char **p = sets[i]; p && *p; p++) free(*p);
    free(sets[i]);
  }
  c->bounding = strv(three);
  c->effective = strv(three);
  c->permitted = strv(three);
  c->ambient = strv(three);
  c->inheritable = strv(none);
  oci_bundle_write_spec(&B, spec);
  an_spec_free(spec);
  cr_assert_eq(oci_cmd(&B, "run @r"), 0, "run: %s", err_text());
  char *o = oci_slurp(B.out);
  cr_assert_str_eq(o, "CapPrm:\t0000000020000420\nCapAmb:\t0000000000000000\n");
  free(o);
}

/* The seccomp program is kept in the container's own state directory; no
 * cache directory is left in the engine's state root (dockerd and
 * containerd own those directories). */
Test(oci_embedding, seccomp_leaves_no_cache_directory_in_the_state_root, .fini = fini_bundle) {
  static const char *const args[] = {"true", NULL};
  oci_bundle_make(&B, "scache", args);
  struct an_spec *spec = oci_bundle_read_spec(&B);
  struct an_spec_seccomp *s = an_test_seccomp_one_rule("mkdirat", SCMP_ACT_ERRNO(EPERM));
  an_spec_seccomp_free(spec->linux.seccomp);
  spec->linux.seccomp = s;
  oci_bundle_write_spec(&B, spec);
  an_spec_free(spec);
  mkdir(B.root, 0700);   /* an engine's state root exists before the first container */
  cr_assert_eq(oci_cmd(&B, "run @s"), 0, "run: %s", err_text());
  DIR *d = opendir(B.root);
  cr_assert_not_null(d, "no state root");
  for (struct dirent *de; (de = readdir(d));)
    cr_assert(strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0,
              "left in the state root: %s", de->d_name);
  closedir(d);
}
