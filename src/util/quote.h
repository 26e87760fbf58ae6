/* util/quote.h — untrusted names made safe to put in a message (internal).
 * Used for tar entry names and link targets by the image unpacker
 * (image/unpack.c, whiteout.c, entry_path.c) and the workspace restore
 * (sandbox/tar_extract.c): a hostile name must not inject terminal escapes or
 * fake lines into logs, nor end the "..." it is quoted in. */
#ifndef AN_UTIL_QUOTE_H
#define AN_UTIL_QUOTE_H

/* Bytes of a name kept before "..." is appended. */
#define AN_QUOTE_NAME_KEEP 256
/* Size of the output buffer: every kept byte may become \xNN, plus "..." and NUL. */
#define AN_QUOTE_NAME_SIZE (AN_QUOTE_NAME_KEEP * 4 + 4)

/* Copy `name` (NULL is written as "(null)") into `out` with control bytes,
 * DEL, every byte >= 0x80, '"' and '\\' written as \xNN, cut after
 * AN_QUOTE_NAME_KEEP bytes with "..." appended.  Returns `out` (caller's
 * buffer; nothing is allocated, nothing can fail). */
const char *an_quote_name(const char *name, char out[AN_QUOTE_NAME_SIZE]);

/* an_quote_name() into a compound-literal buffer that lives until the end of
 * the enclosing block: for use as a message argument. */
#define AN_QUOTED(name) an_quote_name((name), (char[AN_QUOTE_NAME_SIZE]){0})

#endif
