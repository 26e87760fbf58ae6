/* image/entry_path.c — the naming rules for tar entries (see the EXTRACTION
 * RULES in agentnest/image.h): absolute names are rebased, "." components
 * dropped, ".." refused, names must be valid UTF-8.  Pure string work: the
 * resolution that makes extraction safe is openat2() in unpack.c; these rules
 * only make errors early and precise. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include "image/image_internal.h"
#include "util/quote.h"

/* RFC 3629 well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
static bool utf8_valid(const unsigned char *s) {
  while (*s) {
    unsigned c = *s;
    size_t n;
    unsigned min;
    if (c < 0x80) { s++; continue; }
    if (c >= 0xc2 && c <= 0xdf) { n = 1; min = 0x80; c &= 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { n = 2; min = 0x800; c &= 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 3; min = 0x10000; c &= 0x07; }
    else return false;
    for (size_t i = 1; i <= n; i++) {
      if ((s[i] & 0xc0) != 0x80) return false;
      c = (c << 6) | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return false;
    s += n + 1;
  }
  return true;
}

static int refuse(an_error_t *err, int e, const char *name, const char *why) {
  return an_error_set(err, e, "entry \"%s\": %s", AN_QUOTED(name), why);
}

int an_entry_path_normalize(const char *name, char **out, an_error_t *err) {
  if (!name || !*name) return refuse(err, EINVAL, name ? name : "", "empty entry name");
  if (!utf8_valid((const unsigned char *) name))
    return refuse(err, EINVAL, name, "name is not valid UTF-8");
  size_t len = strlen(name);
  if (len >= PATH_MAX) return refuse(err, ENAMETOOLONG, name, "name longer than PATH_MAX");
  char *res = malloc(len + 1);
  if (!res) return an_error_set(err, ENOMEM, "entry name");
  size_t rl = 0;
  long depth = 0;
  bool dotdot = false;
  const char *p = name;
  while (*p) {
    while (*p == '/') p++;
    if (!*p) break;
    const char *e = strchrnul(p, '/');
    size_t cl = (size_t) (e - p);
    if (cl == 1 && p[0] == '.') { p = e; continue; }
    if (cl == 2 && p[0] == '.' && p[1] == '.') {
      dotdot = true;
      if (--depth < 0) { free(res); return refuse(err, EINVAL, name, "path escapes the root"); }
      p = e;
      continue;
    }
    if (cl > NAME_MAX) { free(res); return refuse(err, ENAMETOOLONG, name, "component longer than NAME_MAX"); }
    if (rl) res[rl++] = '/';
    memcpy(res + rl, p, cl);
    rl += cl;
    depth++;
    p = e;
  }
  res[rl] = '\0';
  if (dotdot) { free(res); return refuse(err, EINVAL, name, "'..' component refused"); }
  *out = res;
  return 0;
}
