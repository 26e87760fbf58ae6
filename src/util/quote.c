/* util/quote.c — untrusted names quoted for messages (see util/quote.h). */
#include <stdio.h>
#include <string.h>
#include "util/quote.h"

const char *an_quote_name(const char *name, char out[AN_QUOTE_NAME_SIZE]) {
  if (!name) name = "(null)";
  char *o = out;
  size_t i = 0;
  for (; name[i] && i < AN_QUOTE_NAME_KEEP; i++) {
    unsigned char c = (unsigned char) name[i];
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
      o += sprintf(o, "\\x%02x", c);
    else
      *o++ = (char) c;
  }
  if (name[i]) o = stpcpy(o, "...");
  *o = '\0';
  return out;
}
