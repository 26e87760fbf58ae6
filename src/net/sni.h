/* net/sni.h — the name a TCP connection asks for, read from its first bytes:
 * the TLS ClientHello's server_name (SNI) and the HTTP/1.x Host (internal).
 *
 * Used by the transparent proxy (net/proxy.c) to check connections to ports
 * 443 and 80 by name, not by address (an allowed address may be shared by
 * many sites).  Both parsers are pure functions over a byte buffer: no I/O,
 * no allocation, no global state, so they are thread-safe and fuzzed
 * (tests/fuzz/sni_fuzz.c, `make fuzz`).
 *
 * Both take the bytes received so far (buf, len: from the connection's first
 * byte; call again with the longer buffer as more arrives) and write the
 * name into name[cap] (cap >= AN_NET_NAME_BUF is always enough): lower
 * case, no trailing dot, no port, NUL-terminated.  They return
 *    AN_SNI_FOUND (1)     the name is in `name`;
 *    AN_SNI_MORE (0)      so far a valid prefix: more bytes are needed (the
 *                         caller bounds how many it waits for, and how long);
 *    AN_SNI_BAD (-1)      not this protocol, malformed, ambiguous, or a name
 *                         that is not a valid DNS host name or does not fit
 *                         in cap: the connection must be refused;
 *    AN_SNI_NONE (-2)     well formed but names no host (see each function).
 * `name` is written only on AN_SNI_FOUND ("" otherwise when cap > 0).
 *
 * What is and is not seen (documented for the NETWORK section): only the
 * FIRST ClientHello / the FIRST request of a connection is checked.  (The
 * proxy makes a plain-HTTP connection carry one request: net/proxy.h.)  A
 * client may still send an HTTP Host inside TLS that differs from its SNI
 * (domain fronting), or use TLS Encrypted Client Hello, whose inner name is
 * hidden; those reach a server on an allowed address that the server itself
 * routes.
 */
#ifndef AN_NET_SNI_H
#define AN_NET_SNI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "net/net_hooks.h"

enum { AN_SNI_FOUND = 1, AN_SNI_MORE = 0, AN_SNI_BAD = -1, AN_SNI_NONE = -2 };

/* Parse a TLS ClientHello (RFC 8446 4.1.2, 4.2; TLS 1.0-1.2 hellos share its
 * layout, RFC 5246 7.4.1.2) carried in one or more TLS handshake records
 * (RFC 8446 5.1: a handshake message may be fragmented across records, and
 * records across reads), and return its server_name extension's host_name
 * (RFC 6066 3).  Checked: record type 22 and version 3.x, record length
 * <= 2^14, handshake type client_hello, every vector length against its
 * enclosing length and its RFC bounds, the extensions block ending exactly at
 * the message's end, no extension type twice (RFC 8446 4.2), exactly one
 * host_name in server_name, the name a valid LDH host name (labels 1-63, at
 * most 253 characters, not an IPv4 literal, no trailing dot: RFC 6066 3).
 * GREASE values (RFC 8701) and unknown extensions are skipped.  A hello
 * larger than 32 KiB is AN_SNI_BAD.  AN_SNI_NONE: a valid ClientHello without
 * a server_name extension.  Thread-safe, no allocation. */
int an_tls_sni_parse(const uint8_t *buf, size_t len, char *name, size_t cap);

/* Parse the start of an HTTP/1.x request (RFC 9112 2-3, 5; RFC 9110 7.2) up
 * to the end of its header block (CRLF CRLF) and return the host it names:
 * the Host header's host, or the host of an absolute-form request-target
 * (http://host[:port]/...; RFC 9112 3.2.2).  Port, if any, is stripped
 * (it is returned in *port when port is non-NULL: 0 when absent).  Field
 * names are case-insensitive.  AN_SNI_BAD for: a request line that is not
 * `method SP target SP HTTP/1.x CRLF`, the CONNECT method, HTTP/2's preface,
 * bare CR or LF, obsolete line folding, whitespace before a field's colon,
 * two Host fields, an absolute-form host that differs from the Host field,
 * a Host with userinfo or an invalid host name, an HTTP/1.1 request with no
 * host at all (RFC 9112 3.2 requires one), a header block over 64 KiB.
 * AN_SNI_NONE: an HTTP/1.0 request without a host, or a host that is an IP
 * literal (IPv4 dotted quad or [IPv6]), which names no site.  Thread-safe,
 * no allocation. */
int an_http_host_parse(const uint8_t *buf, size_t len, char *name, size_t cap, uint16_t *port);

/* Check that s[0..len) (no NUL needed) is a DNS host name as both parsers accept
 * it: LDH labels (letters, digits, hyphen, and underscore, which real names
 * use) of 1-63 characters, not starting or ending with a hyphen, separated
 * by single dots, at most AN_NET_NAME_MAX characters, no trailing dot, not
 * all-numeric (an IPv4 literal).  Returns true when it is.  Pure. */
bool an_net_host_name_valid(const char *s, size_t len);

#endif
