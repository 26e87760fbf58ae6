/* tests/unit/utc_test.c — util/utc.h against the C library's gmtime_r over
 * every day from 1900 to 2500 (leap rules of 1900, 2000, 2100, 2400) and
 * seconds of the day, negative times included; an_utc_to_epoch against
 * timegm over the same days. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <time.h>
#include "util/utc.h"

Test(utc, agrees_with_gmtime_r_from_1900_to_2500) {
  for (int64_t s = -2208988800LL; s < 16725225600LL; s += 86400 + 3607) {
    time_t t = (time_t) s;
    struct tm tm;
    cr_assert_not_null(gmtime_r(&t, &tm));
    struct an_utc u;
    an_utc_from_epoch(s, &u);
    cr_assert(u.year == tm.tm_year + 1900 && u.mon == tm.tm_mon + 1 && u.mday == tm.tm_mday &&
                  u.hour == tm.tm_hour && u.min == tm.tm_min && u.sec == tm.tm_sec,
              "%lld: %04d-%02d-%02d %02d:%02d:%02d", (long long) s, u.year, u.mon, u.mday, u.hour, u.min, u.sec);
  }
}

Test(utc, formats_rfc3339_seconds) {
  char b[24];
  an_utc_format(0, b, sizeof b);
  cr_expect_str_eq(b, "1970-01-01T00:00:00");
  an_utc_format(951782400 + 86399, b, sizeof b);   /* 2000-02-29, a leap day */
  cr_expect_str_eq(b, "2000-02-29T23:59:59");
  an_utc_format(-1, b, sizeof b);
  cr_expect_str_eq(b, "1969-12-31T23:59:59");
}

Test(utc, to_epoch_agrees_with_timegm_from_1900_to_2500) {
  for (int64_t s = -2208988800LL; s < 16725225600LL; s += 86400 + 3607) {
    time_t t = (time_t) s;
    struct tm tm;
    cr_assert_not_null(gmtime_r(&t, &tm));
    struct an_utc u = {.year = tm.tm_year + 1900, .mon = tm.tm_mon + 1, .mday = tm.tm_mday,
                       .hour = tm.tm_hour, .min = tm.tm_min, .sec = tm.tm_sec};
    cr_assert_eq(an_utc_to_epoch(&u), (int64_t) timegm(&tm), "%04d-%02d-%02d", u.year, u.mon, u.mday);
    cr_assert_eq(an_utc_to_epoch(&u), s);
  }
}
