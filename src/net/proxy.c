/* net/proxy.c — the transparent TCP proxy (see net/proxy.h).
 * Stub: creation fails with ENOSYS until the proxy lands. */
#include <errno.h>
#include <unistd.h>
#include "net/proxy.h"

int an_proxy_new(const struct an_proxy_config *cfg, const struct an_net_hooks *hooks,
                 struct an_proxy **out, an_error_t *err) {
  (void) hooks;
  *out = NULL;
  if (cfg->listen_fd4 >= 0) close(cfg->listen_fd4);
  if (cfg->listen_fd6 >= 0) close(cfg->listen_fd6);
  return an_error_set(err, ENOSYS, "transparent proxy: not implemented yet");
}
int an_proxy_fd(const struct an_proxy *p) { (void) p; return -1; }
int an_proxy_dispatch(struct an_proxy *p, an_error_t *err) { (void) p; (void) err; return 0; }
void an_proxy_stats(const struct an_proxy *p, struct an_proxy_stats *out) {
  (void) p; *out = (struct an_proxy_stats){0};
}
void an_proxy_free(struct an_proxy *p) { (void) p; }
