/* Unit tests for agentnest/error.h. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "agentnest/error.h"

Test(error, set_names_errno_and_returns_negative) {
  an_error_t err = NULL;
  int r = an_error_set(&err, EPERM, "mount proc on %s", "/r/proc");
  cr_assert_eq(r, -EPERM);
  cr_assert_str_eq(err->msg, "mount proc on /r/proc: EPERM");
  an_error_free(&err);
  cr_assert_null(err);
}

Test(error, first_cause_wins_and_prefix_adds_context) {
  an_error_t err = NULL;
  an_error_set(&err, ENOENT, "open a");
  an_error_set(&err, EIO, "open b");
  cr_assert_eq(an_error_prefix(&err, "import %s", "img"), -ENOENT);
  cr_assert_str_eq(err->msg, "import img: open a: ENOENT");
  an_error_free(&err);
}
