/* util/units.c — size, duration and CPU-count parsers (grammar in units.h).
 * Integer arithmetic only (128-bit intermediates), so "1.1g" is exact and
 * overflow is detected rather than wrapped. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "util/units.h"

#define MAX_FRACTION_DIGITS 9

/* A decimal number "DIGITS[.DIGITS]" at the start of text: integer part,
 * fraction digits as an integer plus their count, and where the unit starts. */
struct decimal {
  unsigned __int128 integer;
  uint64_t fraction;
  unsigned fraction_digits;
  const char *unit;
};

static int parse_decimal(const char *what, const char *text, struct decimal *d, an_error_t *err) {
  const char *p = text;
  *d = (struct decimal){0};
  if (!text || !*text) return an_error_set(err, EINVAL, "empty %s", what);
  if (*p < '0' || *p > '9')
    return an_error_set(err, EINVAL, "%s \"%s\": must start with a digit (no sign, no spaces)", what, text);
  for (; *p >= '0' && *p <= '9'; p++) {
    d->integer = d->integer * 10 + (unsigned) (*p - '0');
    if (d->integer > UINT64_MAX)
      return an_error_set(err, ERANGE, "%s \"%s\": too large", what, text);
  }
  if (*p == '.') {
    p++;
    if (*p < '0' || *p > '9')
      return an_error_set(err, EINVAL, "%s \"%s\": expected digits after \".\"", what, text);
    for (; *p >= '0' && *p <= '9'; p++) {
      if (d->fraction_digits == MAX_FRACTION_DIGITS)
        return an_error_set(err, EINVAL, "%s \"%s\": more than %d decimals", what, text,
                            MAX_FRACTION_DIGITS);
      d->fraction = d->fraction * 10 + (unsigned) (*p - '0');
      d->fraction_digits++;
    }
  }
  d->unit = p;
  return 0;
}

static uint64_t pow10u(unsigned n) {
  uint64_t r = 1;
  while (n--) r *= 10;
  return r;
}

/* value = d * multiplier, truncated; -ERANGE above UINT64_MAX. */
static int scale(const char *what, const char *text, const struct decimal *d,
                 uint64_t multiplier, uint64_t *out, an_error_t *err) {
  unsigned __int128 whole = d->integer * multiplier;
  unsigned __int128 frac = (unsigned __int128) d->fraction * multiplier / pow10u(d->fraction_digits);
  unsigned __int128 v = whole + frac;
  /* integer < 2^64 and multiplier <= 2^42: no 128-bit overflow above */
  if (v > UINT64_MAX)
    return an_error_set(err, ERANGE, "%s \"%s\": too large", what, text);
  *out = (uint64_t) v;
  return 0;
}

int an_parse_size(const char *text, uint64_t *bytes, an_error_t *err) {
  struct decimal d;
  int r = parse_decimal("size", text, &d, err);
  if (r < 0) return r;
  const char *u = d.unit;
  unsigned shift = 0;
  switch (*u) {
  case 'k': case 'K': shift = 10; break;
  case 'm': case 'M': shift = 20; break;
  case 'g': case 'G': shift = 30; break;
  case 't': case 'T': shift = 40; break;
  case 'b': case 'B': case '\0': break;
  default:
    return an_error_set(err, EINVAL, "size \"%s\": unknown unit \"%s\" (use b, k, m, g or t)", text, u);
  }
  const char *rest = shift ? u + 1 : u;
  if (*rest && strcasecmp(rest, "b") != 0 && !(shift && strcasecmp(rest, "ib") == 0))
    return an_error_set(err, EINVAL, "size \"%s\": unknown unit \"%s\" (use b, k, m, g or t)", text, u);
  if (!shift && d.fraction_digits)
    return an_error_set(err, EINVAL, "size \"%s\": fraction of a byte", text);
  return scale("size", text, &d, (uint64_t) 1 << shift, bytes, err);
}

int an_parse_duration_ms(const char *text, uint64_t *ms, an_error_t *err) {
  struct decimal d;
  int r = parse_decimal("duration", text, &d, err);
  if (r < 0) return r;
  const char *u = d.unit;
  uint64_t mult;
  if (!*u || strcmp(u, "s") == 0) mult = 1000;
  else if (strcmp(u, "ms") == 0) mult = 1;
  else if (strcmp(u, "m") == 0) mult = 60 * 1000;
  else if (strcmp(u, "h") == 0) mult = 3600 * 1000;
  else
    return an_error_set(err, EINVAL, "duration \"%s\": unknown unit \"%s\" (use ms, s, m or h)", text, u);
  return scale("duration", text, &d, mult, ms, err);
}

int an_parse_millicpus(const char *text, uint64_t *millicpus, an_error_t *err) {
  struct decimal d;
  int r = parse_decimal("cpus", text, &d, err);
  if (r < 0) return r;
  if (*d.unit) return an_error_set(err, EINVAL, "cpus \"%s\": not a number", text);
  if (d.fraction_digits > 3)
    return an_error_set(err, EINVAL, "cpus \"%s\": more than 3 decimals", text);
  return scale("cpus", text, &d, 1000, millicpus, err);
}

char *an_format_size(uint64_t bytes, char *buf, unsigned len) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  unsigned i = 0;
  uint64_t v = bytes;
  while (v && v % 1024 == 0 && i < 6) { v /= 1024; i++; }
  snprintf(buf, len, "%llu%s", (unsigned long long) v, units[i]);
  return buf;
}
