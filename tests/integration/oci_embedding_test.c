/* tests/integration/oci_embedding_test.c — what engines (podman, dockerd,
 * containerd's runc shim) rely on when they run `agentnest-oci` as their
 * runtime (issue 11), black-box on the built binary: create returning only
 * when init no longer depends on the create process, runc's exit codes and
 * wording for kill/delete, `update`.  The engines themselves are tested by
 * `make check-engines`. */
#include <criterion/criterion.h>
#include <sched.h>
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
