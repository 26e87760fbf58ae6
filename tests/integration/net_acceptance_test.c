/* tests/integration/net_acceptance_test.c — the one check against the real
 * world (issue 12): in the `debian` image, with an allowlist of only the
 * host's configured Debian mirror (read from /etc/apt/sources.list.d/),
 * `apt-get update` succeeds, and a name not on the list fails at DNS.
 * Skipped, with a message, where no mirror is configured or reachable from
 * the host.  It uses the host's own resolvers and network as any sandbox
 * would; nothing on the host is changed. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util.h"

#define CACHE "/var/cache/agentnest/images/debian/layout"

/* the first http(s) host named by a URIs: (deb822) or deb line */
static bool mirror_host(char *host, size_t cap) {
  DIR *d = opendir("/etc/apt/sources.list.d");
  if (!d) return false;
  struct dirent *e;
  bool found = false;
  while (!found && (e = readdir(d))) {
    size_t n = strlen(e->d_name);
    bool sources = n > 8 && strcmp(e->d_name + n - 8, ".sources") == 0;
    bool list = n > 5 && strcmp(e->d_name + n - 5, ".list") == 0;
    if (!sources && !list) continue;
    char path[512];
    snprintf(path, sizeof path, "/etc/apt/sources.list.d/%s", e->d_name);
    FILE *f = fopen(path, "re");
    char line[1024];
    while (f && !found && fgets(line, sizeof line, f)) {
      const char *p = strstr(line, "http://");
      if (!p) p = strstr(line, "https://");
      bool uris = strncmp(line, "URIs:", 5) == 0, deb = strncmp(line, "deb ", 4) == 0;
      if (!p || (!uris && !deb)) continue;
      p = strstr(p, "//") + 2;
      size_t len = strcspn(p, "/: \t\n");
      if (len == 0 || len >= cap) continue;
      memcpy(host, p, len);
      host[len] = 0;
      found = true;
    }
    if (f) fclose(f);
  }
  closedir(d);
  return found;
}

Test(net_acceptance, apt_get_update_through_an_allowlist_of_the_host_mirror, .timeout = 600) {
  char host[256];
  if (access(CACHE, F_OK) != 0) cr_skip_test("no debian image in %s (make images)", CACHE);
  if (!mirror_host(host, sizeof host)) cr_skip_test("no Debian mirror in /etc/apt/sources.list.d/");
  if (an_test_sh("curl -sm 10 -o /dev/null http://%s/ 2>/dev/null", host) != 0)
    cr_skip_test("the host's mirror %s is not reachable from this host", host);
  char root[64];
  snprintf(root, sizeof root, "/tmp/an-accept-XXXXXX");
  cr_assert_not_null(mkdtemp(root));
  char an[4096];
  snprintf(an, sizeof an, "%s/agentnest", getenv("AN_TEST_BUILD") ? getenv("AN_TEST_BUILD") : "build");
  cr_assert_eq(an_test_sh("%s --root %s image import %s --name debian >/dev/null 2>&1", an, root, CACHE), 0);
  char out[128];
  snprintf(out, sizeof out, "%s.out", root);
  int st = an_test_sh(
      "%s --root %s run --image debian --timeout 300 --network allowlist --allow %s -- sh -c \""
      "mkdir -p /workspace/l/partial /workspace/c/archives/partial && "
      "echo 'deb http://%s/debian bookworm main' > /tmp/sources.list && "
      "apt-get -q -o Dir::Etc::SourceList=/tmp/sources.list -o Dir::Etc::SourceParts=/nonexistent "
      "-o Dir::State::Lists=/workspace/l -o Dir::Cache=/workspace/c -o Debug::NoLocking=1 "
      "-o Acquire::Languages=none update && "
      "! getent hosts www.example.org && ! getent hosts security.debian.org && echo ACCEPTED\" > %s 2>&1",
      an, root, host, host, out);
  char *text = an_test_read_file(out, NULL);
  an_test_sh("%s --root %s prune --all >/dev/null 2>&1; rm -rf %s %s", an, root, root, out);
  cr_assert_eq(st, 0, "apt-get update through the allowlist of %s: %s", host, text);
  cr_assert(strstr(text, "ACCEPTED"), "%s", text);
  free(text);
}
