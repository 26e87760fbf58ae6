/* Tests of host-side inputs (case BL-23, issue 10 item 7): a FIFO given as a
 * --profile, a --secret NAME=@FILE, a restore tar, an image archive or an
 * image blob is refused at once with "not a regular file (FIFO)" instead of
 * blocking the CLI on open(2) until a writer comes (which never does).  A
 * hang shows as the test's timeout. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/image.h"
#include "agentnest/sandbox_opts.h"
#include "agentnest/snapshot.h"
#include "rm_tree.h"
#include "ctx_fixture.h"

static char dir[] = "/tmp/an-hostin-XXXXXX";
static char fifo[PATH_MAX];

static void setup(void) {
  cr_assert_not_null(mkdtemp(dir));
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
  cr_assert_eq(mkfifo(fifo, 0600), 0);
}
static void teardown(void) { an_test_rm_tree(dir); }
TestSuite(host_input, .init = setup, .fini = teardown, .timeout = 20);

static void assert_fifo_refused(int r, an_error_t e) {
  cr_assert_eq(r, -EINVAL, "r=%d %s", r, e ? e->msg : "");
  cr_assert(strstr(e->msg, "not a regular file (FIFO)"), "%s", e->msg);
}

Test(host_input, bl_23_profile_fifo_refused) {
  struct an_sandbox_opts *o = NULL;
  an_error_t e = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &e), 0);
  int r = an_sandbox_opts_load_profile(o, fifo, NULL, &e);
  assert_fifo_refused(r, e);
  an_error_free(&e);
  an_sandbox_opts_free(o);
}

Test(host_input, bl_23_secret_file_fifo_refused) {
  struct an_sandbox_opts *o = NULL;
  an_error_t e = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &e), 0);
  char arg[PATH_MAX + 16];
  snprintf(arg, sizeof arg, "TOKEN=@%s", fifo);
  int r = an_sandbox_opts_add_secret_arg(o, arg, &e);
  assert_fifo_refused(r, e);
  cr_assert(strstr(e->msg, "secret TOKEN"), "%s", e->msg);
  an_error_free(&e);
  an_sandbox_opts_free(o);
}

Test(host_input, bl_23_restore_tar_fifo_refused) {
  char ws[PATH_MAX];
  snprintf(ws, sizeof ws, "%s/ws", dir);
  cr_assert_eq(mkdir(ws, 0755), 0);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  an_error_t e = NULL;
  int r = an_workspace_restore_ex(dfd, "ws", fifo, NULL, NULL, &e);
  close(dfd);
  assert_fifo_refused(r, e);
  an_error_free(&e);
}

Test(host_input, bl_23_image_archive_fifo_refused) {
  char store[PATH_MAX];
  snprintf(store, sizeof store, "%s/store", dir);
  an_error_t e = NULL;
  struct an_image_info *info = NULL;
  int r = an_image_import(store, fifo, "x", NULL, &info, &e);
  cr_assert_lt(r, 0);
  cr_assert(strstr(e->msg, "not a regular file (FIFO)"), "%s", e->msg);
  an_error_free(&e);
}

/* An OCI layout whose index blob is a FIFO. */
Test(host_input, bl_23_image_blob_fifo_refused) {
  char lay[PATH_MAX], p[PATH_MAX + 128], store[PATH_MAX];
  snprintf(lay, sizeof lay, "%s/layout", dir);
  snprintf(store, sizeof store, "%s/store", dir);
  cr_assert_eq(mkdir(lay, 0755), 0);
  snprintf(p, sizeof p, "%s/oci-layout", lay);
  FILE *f = fopen(p, "w");
  fputs("{\"imageLayoutVersion\":\"1.0.0\"}", f);
  fclose(f);
  const char *dg = "0000000000000000000000000000000000000000000000000000000000000000";
  snprintf(p, sizeof p, "%s/index.json", lay);
  f = fopen(p, "w");
  fprintf(f, "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
             "\"digest\":\"sha256:%s\",\"size\":10}]}", dg);
  fclose(f);
  snprintf(p, sizeof p, "%s/blobs", lay);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/blobs/sha256", lay);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/blobs/sha256/%s", lay, dg);
  cr_assert_eq(mkfifo(p, 0600), 0);
  an_error_t e = NULL;
  struct an_image_info *info = NULL;
  int r = an_image_import(store, lay, "x", NULL, &info, &e);
  cr_assert_lt(r, 0);
  cr_assert(strstr(e->msg, "not a regular file (FIFO)"), "%s", e->msg);
  an_error_free(&e);
}
