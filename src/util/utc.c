/* util/utc.c — see utc.h.  The days-to-civil conversion counts 400-year
 * eras of 146097 days starting on March 1, so that leap days fall at the
 * end of each year of the count. */
#include "util/utc.h"
#include <stdio.h>

void an_utc_from_epoch(int64_t secs, struct an_utc *out) {
  int64_t days = secs / 86400, rem = secs % 86400;
  if (rem < 0) rem += 86400, days--;
  out->hour = (int) (rem / 3600);
  out->min = (int) (rem % 3600 / 60);
  out->sec = (int) (rem % 60);
  int64_t z = days + 719468;                       /* days since 0000-03-01 */
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;                  /* day of era, 0..146096 */
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);   /* from March 1, 0..365 */
  int64_t mp = (5 * doy + 2) / 153;                /* March = 0 */
  out->mday = (int) (doy - (153 * mp + 2) / 5 + 1);
  out->mon = (int) (mp < 10 ? mp + 3 : mp - 9);
  out->year = (int) (yoe + era * 400 + (out->mon <= 2));
}

void an_utc_format(int64_t secs, char *buf, size_t len) {
  struct an_utc u;
  an_utc_from_epoch(secs, &u);
  snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d", u.year, u.mon, u.mday, u.hour, u.min, u.sec);
}

int64_t an_utc_to_epoch(const struct an_utc *u) {
  /* the inverse of the count above: March-based year and month */
  int64_t y = (int64_t) u->year - (u->mon <= 2);
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;                                          /* 0..399 */
  int64_t mp = u->mon > 2 ? u->mon - 3 : u->mon + 9;                    /* March = 0 */
  int64_t doy = (153 * mp + 2) / 5 + u->mday - 1;                       /* 0..365 */
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;                  /* 0..146096 */
  int64_t days = era * 146097 + doe - 719468;
  return days * 86400 + (int64_t) u->hour * 3600 + (int64_t) u->min * 60 + u->sec;
}
