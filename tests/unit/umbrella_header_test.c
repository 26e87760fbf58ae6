/* tests/unit/umbrella_header_test.c — the README's library example, with
 * nothing but the umbrella header <agentnest.h> included: it declares the
 * whole public API (struct an_ctx_config was missing: the example did not
 * compile), and the example's calls succeed. */
#include <criterion/criterion.h>
#include <agentnest.h>

Test(umbrella_header, readme_example_compiles_and_runs) {
  struct an_ctx *ctx = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_ctx_new(&(struct an_ctx_config){.init_path = "/usr/local/bin/agentnest-init",
                                                  .profiles_dir = "/usr/local/share/agentnest/profiles"},
                          &ctx, &err), 0, "%s", err ? err->msg : "");
  struct an_sandbox_opts *o = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(ctx, &o, &err), 0, "%s", err ? err->msg : "");
  an_sandbox_opts_free(o);
  an_ctx_free(ctx);
}
