/* util/utc.h — UTC calendar time without the C library's time zone code
 * (internal).  glibc's gmtime_r and strftime take a process-wide lock
 * (tzset_lock); a worker forked from `agentnest serve` while another thread
 * (libmicrohttpd writing a Date header) held it hung for ever at its first
 * timestamp (ci19: create's state.json "created").  These convert with
 * integer arithmetic only, so they are safe in such a child. */
#ifndef AN_UTIL_UTC_H
#define AN_UTIL_UTC_H

#include <stddef.h>
#include <stdint.h>

struct an_utc {
  int year, mon, mday, hour, min, sec;   /* mon 1..12, mday 1..31 */
};

/* Seconds since the epoch (may be negative) to the proleptic Gregorian UTC
 * date and time (POSIX time: no leap seconds). */
void an_utc_from_epoch(int64_t secs, struct an_utc *out);

/* The inverse (timegm(3) without its lock): seconds since the epoch of a
 * proleptic Gregorian UTC date and time; fields are not normalised (mon
 * 1..12, mday 1..31 as given; sec 60 counts as the next minute's 0). */
int64_t an_utc_to_epoch(const struct an_utc *u);

/* "YYYY-MM-DDTHH:MM:SS" (19 characters, NUL-terminated; buf at least 20
 * bytes for years 0..9999) of secs. */
void an_utc_format(int64_t secs, char *buf, size_t len);

#endif
