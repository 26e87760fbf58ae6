/* net/dnsfilter.c — the DNS filter (see net/dnsfilter.h).
 * Stub: creation fails with ENOSYS until the filter lands. */
#include <errno.h>
#include <unistd.h>
#include "net/dnsfilter.h"

int an_dnsfilter_new(const struct an_dnsfilter_config *cfg, const struct an_net_hooks *hooks,
                     struct an_dnsfilter **out, an_error_t *err) {
  (void) hooks;
  *out = NULL;
  if (cfg->udp_fd >= 0) close(cfg->udp_fd);
  if (cfg->tcp_fd >= 0) close(cfg->tcp_fd);
  return an_error_set(err, ENOSYS, "DNS filter: not implemented yet");
}
int an_dnsfilter_fd(const struct an_dnsfilter *f) { (void) f; return -1; }
int an_dnsfilter_dispatch(struct an_dnsfilter *f, an_error_t *err) { (void) f; (void) err; return 0; }
void an_dnsfilter_stats(const struct an_dnsfilter *f, struct an_dnsfilter_stats *out) {
  (void) f; *out = (struct an_dnsfilter_stats){0};
}
void an_dnsfilter_free(struct an_dnsfilter *f) { (void) f; }
