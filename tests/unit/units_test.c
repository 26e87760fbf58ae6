/* Unit tests for util/units.h: the size, duration and CPU grammars. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "util/units.h"

static uint64_t size_ok(const char *s) {
  an_error_t err = NULL;
  uint64_t v = 0;
  int r = an_parse_size(s, &v, &err);
  cr_assert_eq(r, 0, "an_parse_size(\"%s\"): %s", s, err ? err->msg : "");
  an_error_free(&err);
  return v;
}

static void size_bad(const char *s, int want, const char *fragment) {
  an_error_t err = NULL;
  uint64_t v = 12345;
  int r = an_parse_size(s, &v, &err);
  cr_assert_eq(r, want, "an_parse_size(\"%s\") = %d, want %d", s ? s : "(null)", r, want);
  cr_assert_not_null(err);
  cr_assert(strstr(err->msg, fragment), "message \"%s\" lacks \"%s\"", err->msg, fragment);
  cr_assert_eq(v, 12345, "output written on error");
  an_error_free(&err);
}

Test(units, size_plain_number_is_bytes) {
  cr_assert_eq(size_ok("4096"), 4096);
  cr_assert_eq(size_ok("0"), 0);
  cr_assert_eq(size_ok("4096b"), 4096);
  cr_assert_eq(size_ok("4096B"), 4096);
}

Test(units, size_suffixes_are_binary_and_case_insensitive) {
  cr_assert_eq(size_ok("1k"), 1024);
  cr_assert_eq(size_ok("512m"), 512ull << 20);
  cr_assert_eq(size_ok("64M"), 64ull << 20);
  cr_assert_eq(size_ok("64MB"), 64ull << 20);
  cr_assert_eq(size_ok("64mb"), 64ull << 20);
  cr_assert_eq(size_ok("10MiB"), 10ull << 20);
  cr_assert_eq(size_ok("10mib"), 10ull << 20);
  cr_assert_eq(size_ok("1g"), 1ull << 30);
  cr_assert_eq(size_ok("2T"), 2ull << 40);
}

Test(units, size_decimals_scale_exactly_and_truncate) {
  cr_assert_eq(size_ok("1.5g"), 3ull << 29);
  cr_assert_eq(size_ok("0.5k"), 512);
  cr_assert_eq(size_ok("1.1k"), 1126);   /* 1126.4 truncated */
  cr_assert_eq(size_ok("0.001k"), 1);    /* 1.024 truncated */
}

Test(units, size_rejects_bad_text_naming_it) {
  size_bad("", -EINVAL, "empty size");
  size_bad(NULL, -EINVAL, "empty size");
  size_bad("-1m", -EINVAL, "\"-1m\": must start with a digit");
  size_bad(" 1m", -EINVAL, "must start with a digit");
  size_bad("1m ", -EINVAL, "unknown unit");
  size_bad("12x", -EINVAL, "size \"12x\": unknown unit \"x\"");
  size_bad("12mm", -EINVAL, "unknown unit \"mm\"");
  size_bad("12ib", -EINVAL, "unknown unit");
  size_bad("1.", -EINVAL, "expected digits after");
  size_bad(".5m", -EINVAL, "must start with a digit");
  size_bad("1.5", -EINVAL, "fraction of a byte");
  size_bad("1e9", -EINVAL, "unknown unit");
  size_bad("0x10", -EINVAL, "unknown unit");
  size_bad("1.0000000001g", -EINVAL, "more than 9 decimals");
}

Test(units, size_overflow_is_erange) {
  cr_assert_eq(size_ok("18446744073709551615"), UINT64_MAX);
  size_bad("18446744073709551616", -ERANGE, "too large");
  size_bad("16777216t", -ERANGE, "too large");          /* 2^24 * 2^40 = 2^64 */
  size_bad("99999999999999999999999", -ERANGE, "too large");
  cr_assert_eq(size_ok("16777215t"), 16777215ull << 40);
}

static uint64_t dur_ok(const char *s) {
  an_error_t err = NULL;
  uint64_t v = 0;
  int r = an_parse_duration_ms(s, &v, &err);
  cr_assert_eq(r, 0, "an_parse_duration_ms(\"%s\"): %s", s, err ? err->msg : "");
  return v;
}

static void dur_bad(const char *s, int want, const char *fragment) {
  an_error_t err = NULL;
  uint64_t v = 7;
  cr_assert_eq(an_parse_duration_ms(s, &v, &err), want, "duration \"%s\"", s);
  cr_assert(strstr(err->msg, fragment), "message \"%s\" lacks \"%s\"", err->msg, fragment);
  cr_assert_eq(v, 7);
  an_error_free(&err);
}

Test(units, duration_without_unit_is_seconds) {
  cr_assert_eq(dur_ok("300"), 300000);
  cr_assert_eq(dur_ok("300s"), 300000);
  cr_assert_eq(dur_ok("1.5"), 1500);
}

Test(units, duration_units_ms_s_m_h) {
  cr_assert_eq(dur_ok("1.5s"), 1500);
  cr_assert_eq(dur_ok("500ms"), 500);
  cr_assert_eq(dur_ok("5m"), 300000);
  cr_assert_eq(dur_ok("2h"), 7200000);
  cr_assert_eq(dur_ok("0.0005s"), 0);     /* sub-millisecond truncated */
}

Test(units, duration_rejects_bad_text) {
  dur_bad("-5", -EINVAL, "must start with a digit");
  dur_bad("5 s", -EINVAL, "unknown unit \" s\"");
  dur_bad("5S", -EINVAL, "unknown unit \"S\"");
  dur_bad("5d", -EINVAL, "duration \"5d\": unknown unit");
  dur_bad("5us", -EINVAL, "unknown unit");
  dur_bad("", -EINVAL, "empty duration");
  dur_bad("18446744073709551615h", -ERANGE, "too large");
}

Test(units, cpus_to_millicpus) {
  an_error_t err = NULL;
  uint64_t v;
  cr_assert_eq(an_parse_millicpus("1", &v, &err), 0); cr_assert_eq(v, 1000);
  cr_assert_eq(an_parse_millicpus("1.0", &v, &err), 0); cr_assert_eq(v, 1000);
  cr_assert_eq(an_parse_millicpus("0.5", &v, &err), 0); cr_assert_eq(v, 500);
  cr_assert_eq(an_parse_millicpus("2.25", &v, &err), 0); cr_assert_eq(v, 2250);
  cr_assert_eq(an_parse_millicpus("0.0015", &v, &err), -EINVAL);
  cr_assert_str_eq(err->msg, "cpus \"0.0015\": more than 3 decimals: EINVAL");
  an_error_free(&err);
  cr_assert_eq(an_parse_millicpus("1c", &v, &err), -EINVAL);
  cr_assert_str_eq(err->msg, "cpus \"1c\": not a number: EINVAL");
  an_error_free(&err);
}

Test(units, format_size_uses_largest_exact_binary_unit) {
  char b[32];
  cr_assert_str_eq(an_format_size(512ull << 20, b, sizeof b), "512MiB");
  cr_assert_str_eq(an_format_size(1536 * 1024, b, sizeof b), "1536KiB");
  cr_assert_str_eq(an_format_size(123, b, sizeof b), "123B");
  cr_assert_str_eq(an_format_size(0, b, sizeof b), "0B");
}
