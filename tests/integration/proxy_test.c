/* Integration tests for net/proxy.h on the real kernel.  The test moves into
 * a netns of its own ("host": 192.0.2.10 and 2001:db8::10 on its lo, where
 * tests/data/net/egress_servers.py serves HTTPS for two names on one IP,
 * HTTP and a half-close echo, as an unprivileged user via setpriv) and makes
 * a "sandbox" netns whose nft nat output chain `redirect`s TCP to the
 * documentation ranges to the proxy's listeners on 127.0.0.1/::1 there.
 * The proxy runs on a thread of this process in the host netns (its
 * outbound sockets are made there, as in the monitor); clients (curl,
 * python3) run in the sandbox netns.  Proves: the allowed SNI passes end to
 * end (IPv4 and IPv6); another SNI on the same IP, an HTTP Host mismatch,
 * non-TLS bytes and silence on a name-checked port are closed; a direct
 * connection to the proxy port is refused; half-close works; and prints the
 * throughput through the proxy next to the direct one (never asserted). */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>
#include "net/proxy.h"
#include "netns_fixture.h"
#include "rm_tree.h"
#include "util.h"

#define PROXY_PORT 15001

struct rec { enum an_net_event_kind kind; enum an_net_verdict verdict; char name[AN_NET_NAME_BUF];
             char reason[96], rule[96]; uint16_t port; int family; uint64_t in, out; };

static struct {
  int host, sb;
  pid_t servers;
  char dir[64], log[128], cert[128], key[128];
  struct an_proxy *p;
  pthread_t thread;
  atomic_bool stop, started;
  pthread_mutex_t mu;
  struct rec ev[256];
  int nev, dest_calls;
  char last_name[AN_NET_NAME_BUF];
  struct rlimit nofile;   /* as it was before a test lowered it (restored by teardown) */
  bool nofile_lowered;
  atomic_bool deny9000;   /* the policy now refuses port 9000 (a live change) */
  char rule9000[64];      /* the rule text the policy names for port 9000 (the test may overwrite it) */
} E = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int dest_allowed(void *ctx, int family, const void *addr, uint16_t port, const char *name,
                        const char **rule) {
  pthread_mutex_lock(&E.mu);
  E.dest_calls++;
  snprintf(E.last_name, sizeof E.last_name, "%s", name ? name : "(null)");
  pthread_mutex_unlock(&E.mu);
  if (port == 9000) { *rule = E.rule9000; return name == NULL && !atomic_load(&E.deny9000); }
  *rule = "allowed.example:8443,8080 (test)";
  return name && !strcmp(name, "allowed.example");
}

static void on_event(void *ctx, const struct an_net_event *ev) {
  pthread_mutex_lock(&E.mu);
  if (E.nev < 256) {
    struct rec *r = &E.ev[E.nev++];
    r->kind = ev->kind;
    r->verdict = ev->verdict;
    snprintf(r->name, sizeof r->name, "%s", ev->name ? ev->name : "");
    snprintf(r->reason, sizeof r->reason, "%s", ev->reason);
    snprintf(r->rule, sizeof r->rule, "%s", ev->rule ? ev->rule : "");
    r->port = ev->port;
    r->family = ev->family;
    r->in = ev->bytes_in;
    r->out = ev->bytes_out;
  }
  pthread_mutex_unlock(&E.mu);
}

static const struct an_net_hooks hooks = {NULL, NULL, NULL, dest_allowed, on_event};

/* The monitor's loop, on a thread in the host netns. */
static void *proxy_loop(void *arg) {
  while (!atomic_load(&E.stop)) {
    struct pollfd pf = {an_proxy_fd(E.p), POLLIN, 0};
    if (poll(&pf, 1, 50) > 0) {
      an_error_t err = NULL;
      if (an_proxy_dispatch(E.p, &err) < 0) { an_error_free(&err); break; }
    }
  }
  return NULL;
}

static bool servers_ready(void *arg) {
  char *log = an_test_read_file(E.log, NULL);
  bool up = log && strstr(log, "ready");
  free(log);
  return up;
}

static void start_proxy(struct an_proxy_limits lim) {
  struct an_proxy_config cfg = {
    .listen_fd4 = nf_socket(E.sb, SOCK_STREAM, "127.0.0.1", PROXY_PORT),
    .listen_fd6 = nf_socket(E.sb, SOCK_STREAM, "::1", PROXY_PORT),
    .limits = lim,
  };
  an_error_t err = NULL;
  cr_assert_eq(an_proxy_new(&cfg, &hooks, &E.p, &err), 0, "an_proxy_new: %s", err ? err->msg : "");
  atomic_store(&E.stop, false);
  cr_assert_eq(pthread_create(&E.thread, NULL, proxy_loop, NULL), 0);
  atomic_store(&E.started, true);
}

static void join_proxy(void) {
  if (!atomic_load(&E.started)) return;
  atomic_store(&E.stop, true);
  pthread_join(E.thread, NULL);
  atomic_store(&E.started, false);
}

static void stop_proxy(void) {
  join_proxy();
  an_proxy_free(E.p);
  E.p = NULL;
}

static struct an_proxy_limits test_limits(void) {
  return (struct an_proxy_limits) {.name_ports = {8443, 8080}, .sniff_timeout_ms = 500};
}

static void setup(void) {
  /* SIGPIPE keeps its default action: the proxy must not let a splice to a
   * closed peer kill the process (proxy.h). */
  if (an_test_sh("{ command -v nft && command -v curl && command -v openssl && command -v setpriv; } >/dev/null && "
                 "test -x /usr/bin/python3") != 0)
    cr_skip_test("needs nft, curl, openssl, setpriv, /usr/bin/python3");
  E.host = nf_host_enter();
  snprintf(E.rule9000, sizeof E.rule9000, "203.0.113.0/24:9000 (test)");
  snprintf(E.dir, sizeof E.dir, "/tmp/an-proxy-%d", (int) getpid());
  cr_assert_eq(mkdir(E.dir, 0755), 0);
  chmod(E.dir, 0755);
  snprintf(E.log, sizeof E.log, "%s/servers.log", E.dir);
  snprintf(E.cert, sizeof E.cert, "%s/cert.pem", E.dir);
  snprintf(E.key, sizeof E.key, "%s/key.pem", E.dir);
  an_test_write_file(E.log, "", 0, 0666);
  cr_assert_eq(an_test_sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
                          "-keyout '%s' -out '%s' -days 2 -subj /CN=allowed.example "
                          "-addext subjectAltName=DNS:allowed.example,DNS:other.example 2>/dev/null && "
                          "chmod 644 '%s'", E.key, E.cert, E.key), 0, "make certificate");
  cr_assert_eq(an_test_sh("ip addr add 192.0.2.10/32 dev lo && ip -6 addr add 2001:db8::10/128 dev lo nodad"), 0);
  const char *src = getenv("AN_TEST_SRC");
  E.servers = nf_spawn(E.host, E.log,
                       "exec setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 "
                       "'%s/tests/data/net/egress_servers.py' '%s' '%s' '%s'",
                       src && *src ? src : ".", E.cert, E.key, E.log);
  cr_assert(nf_wait(servers_ready, NULL, 500), "servers did not start (log %s)", E.log);
  E.sb = nf_sandbox_netns();
  cr_assert_eq(nf_sh(E.sb, "nft -f - <<'EOF'\n"
                           "table inet an_test {\n"
                           "  chain out { type nat hook output priority -100; policy accept;\n"
                           "    ip daddr 192.0.2.0/24 tcp dport { 8443, 8080, 9000 } redirect to :%d\n"
                           "    ip6 daddr 2001:db8::/32 tcp dport { 8443, 8080 } redirect to :%d\n"
                           "  }\n"
                           "}\n"
                           "EOF", PROXY_PORT, PROXY_PORT), 0, "nft redirect rule in the sandbox netns");
  start_proxy(test_limits());
}

static void teardown(void) {
  if (E.nofile_lowered) setrlimit(RLIMIT_NOFILE, &E.nofile);
  stop_proxy();
  nf_stop(E.servers);
  if (E.dir[0]) an_test_rm_tree(E.dir);
}

TestSuite(proxy, .init = setup, .fini = teardown, .timeout = 180);

/* curl in the sandbox netns; its output in *out (heap). Returns exit status. */
static int curl(char **out, const char *args) {
  char path[160];
  snprintf(path, sizeof path, "%s/curl.out", E.dir);
  unlink(path);
  int r = nf_sh(E.sb, "curl -sS --max-time 20 --cacert '%s' -o '%s' %s 2>>'%s/curl.err'", E.cert, path,
                args, E.dir);
  if (out) *out = an_test_read_file(path, NULL);
  return r;
}

static bool has_event(enum an_net_event_kind kind, enum an_net_verdict v, const char *name,
                      const char *reason_part) {
  bool found = false;
  pthread_mutex_lock(&E.mu);
  for (int i = 0; i < E.nev && !found; i++)
    found = E.ev[i].kind == kind && E.ev[i].verdict == v && (!name || !strcmp(E.ev[i].name, name)) &&
            (!reason_part || strstr(E.ev[i].reason, reason_part));
  pthread_mutex_unlock(&E.mu);
  return found;
}

static bool event_arrives(enum an_net_event_kind kind, enum an_net_verdict v, const char *name,
                          const char *reason) {
  for (int i = 0; i < 250; i++) {
    if (has_event(kind, v, name, reason)) return true;
    usleep(20000);
  }
  return false;
}

static int log_count(const char *needle) {
  char *log = an_test_read_file(E.log, NULL);
  int n = 0;
  for (char *p = log; p && (p = strstr(p, needle)); p++) n++;
  free(log);
  return n;
}

Test(proxy, allowed_sni_passes_end_to_end) {
  char *out = NULL;
  int r = curl(&out, "--resolve allowed.example:8443:192.0.2.10 https://allowed.example:8443/");
  cr_assert_eq(r, 0, "curl through the proxy: exit %d", r);
  cr_assert(out && strstr(out, "hello allowed.example"), "body: %s", out ? out : "(none)");
  free(out);
  cr_assert(event_arrives(AN_NET_EV_CONNECT, AN_NET_ALLOW, "allowed.example", NULL));
  cr_assert(event_arrives(AN_NET_EV_CLOSE, AN_NET_ALLOW, "allowed.example", NULL), "a CLOSE event");
  pthread_mutex_lock(&E.mu);
  cr_assert_str_eq(E.last_name, "allowed.example", "dest_allowed got the SNI");
  for (int i = 0; i < E.nev; i++)
    if (E.ev[i].kind == AN_NET_EV_CLOSE)
      cr_assert(E.ev[i].in > 0 && E.ev[i].out > 0 && E.ev[i].port == 8443 && E.ev[i].family == AF_INET);
  pthread_mutex_unlock(&E.mu);
}

Test(proxy, allowed_sni_passes_over_ipv6) {
  char *out = NULL;
  int r = curl(&out, "-6 --resolve 'allowed.example:8443:[2001:db8::10]' https://allowed.example:8443/");
  cr_assert_eq(r, 0, "curl -6 through the proxy: exit %d", r);
  cr_assert(out && strstr(out, "hello allowed.example"));
  free(out);
  cr_assert(event_arrives(AN_NET_EV_CONNECT, AN_NET_ALLOW, "allowed.example", NULL));
}

Test(proxy, other_sni_on_the_same_ip_is_closed) {
  int r = curl(NULL, "--resolve other.example:8443:192.0.2.10 https://other.example:8443/");
  cr_assert_neq(r, 0, "a non-allowed SNI on an allowed address must not pass");
  cr_assert(event_arrives(AN_NET_EV_CONNECT, AN_NET_DENY, "other.example", NULL));
  cr_assert_eq(log_count("REQ other.example"), 0, "the server saw the request");
  /* The same address with the allowed name still works afterwards. */
  cr_assert_eq(curl(NULL, "--resolve allowed.example:8443:192.0.2.10 https://allowed.example:8443/"), 0);
}

Test(proxy, http_host_mismatch_is_closed) {
  char *out = NULL;
  cr_assert_eq(curl(&out, "http://allowed.example:8080/ --resolve allowed.example:8080:192.0.2.10"), 0);
  cr_assert(out && strstr(out, "hello allowed.example:8080"), "body: %s", out ? out : "");
  free(out);
  cr_assert_neq(curl(NULL, "http://other.example:8080/ --resolve other.example:8080:192.0.2.10"), 0);
  cr_assert(event_arrives(AN_NET_EV_CONNECT, AN_NET_DENY, "other.example", NULL));
  /* A Host header naming another site than the URL's: the Host decides. */
  cr_assert_neq(curl(NULL, "-H 'Host: other.example' http://192.0.2.10:8080/"), 0);
  /* Two Host headers: refused as ambiguous, before the policy is asked. */
  cr_assert_eq(nf_sh(E.sb, "/usr/bin/python3 -c \"import socket\n"
                           "s=socket.create_connection(('192.0.2.10',8080),5); s.settimeout(5)\n"
                           "s.sendall(b'GET / HTTP/1.1\\r\\nHost: allowed.example\\r\\nX: y\\r\\n"
                           "host: other.example\\r\\n\\r\\n')\n"
                           "try:\n  assert s.recv(100)==b''\nexcept ConnectionResetError: pass\n\""), 0,
               "closed without an answer");
  cr_assert(event_arrives(AN_NET_EV_CONNECT, AN_NET_DENY, NULL, "well-formed HTTP"));
  cr_assert_eq(log_count("REQ other.example"), 0, "the server saw a request for other.example");
}

Test(proxy, direct_connection_to_the_proxy_port_is_refused) {
  int r = curl(NULL, "http://127.0.0.1:15001/");
  cr_assert_neq(r, 0);
  cr_assert(event_arrives(AN_NET_EV_CONNECT, AN_NET_DENY, NULL, "no original destination"),
            "DENY event for the direct connection");
  r = curl(NULL, "-g 'http://[::1]:15001/'");
  cr_assert_neq(r, 0);
  pthread_mutex_lock(&E.mu);
  int calls = E.dest_calls;
  pthread_mutex_unlock(&E.mu);
  cr_assert_eq(calls, 0, "the policy was asked about a connection that was never redirected");
}

Test(proxy, non_tls_bytes_and_silence_on_a_name_port_are_closed) {
  /* Plain bytes on the TLS port, and a client that sends nothing. */
  cr_assert_eq(nf_sh(E.sb, "/usr/bin/python3 -c \"import socket\n"
                           "s=socket.create_connection(('192.0.2.10',8443),5); s.sendall(b'SSH-2.0-x\\r\\n')\n"
                           "s.settimeout(5)\ntry:\n  assert s.recv(100)==b''\nexcept ConnectionResetError: pass\n"
                           "t=socket.create_connection(('192.0.2.10',8443),5); t.settimeout(10)\n"
                           "try:\n  assert t.recv(100)==b''\nexcept ConnectionResetError: pass\n\""), 0,
               "both connections are closed by the proxy");
  cr_assert(event_arrives(AN_NET_EV_CONNECT, AN_NET_DENY, NULL, "not TLS"));
  cr_assert(event_arrives(AN_NET_EV_CONNECT, AN_NET_DENY, NULL, "timeout"));
}

Test(proxy, half_close_carries_eof_both_ways) {
  /* Port 9000 is not name-checked (the policy gets NULL); the echo server
   * answers only after the client's EOF arrives through the proxy. */
  cr_assert_eq(nf_sh(E.sb, "/usr/bin/python3 -c \"import socket\n"
                           "s=socket.create_connection(('192.0.2.10',9000),5); s.settimeout(10)\n"
                           "s.sendall(b'x'*300000); s.shutdown(socket.SHUT_WR)\n"
                           "d=b''\nwhile True:\n  k=s.recv(65536)\n  if not k: break\n  d+=k\n"
                           "assert d==b'echo:'+b'x'*300000, len(d)\n\""), 0, "echo after half-close (event: %s)",
               E.nev ? E.ev[E.nev - 1].reason : "none");
  cr_assert(event_arrives(AN_NET_EV_CLOSE, AN_NET_ALLOW, NULL, "closed"));
  pthread_mutex_lock(&E.mu);
  cr_assert_str_eq(E.last_name, "(null)", "no name on a port that is not name-checked");
  pthread_mutex_unlock(&E.mu);
}

Test(proxy, per_connection_byte_cap_cuts_the_connection) {
  stop_proxy();
  struct an_proxy_limits lim = test_limits();
  lim.max_bytes_per_conn = 1 << 20;
  start_proxy(lim);
  int r = curl(NULL, "--resolve allowed.example:8080:192.0.2.10 http://allowed.example:8080/bulk/8388608");
  cr_assert_neq(r, 0, "8 MiB through a 1 MiB cap");
  cr_assert(event_arrives(AN_NET_EV_CLOSE, AN_NET_ALLOW, NULL, "byte cap"));
}

static double speed(int ns, const char *url, const char *resolve, long long want) {
  char path[160];
  snprintf(path, sizeof path, "%s/speed.out", E.dir);
  int r = nf_sh(ns, "curl -sS --max-time 120 -o /dev/null -w '%%{size_download} %%{speed_download}' %s '%s' > '%s'",
                resolve, url, path);
  cr_assert_eq(r, 0, "curl %s", url);
  char *s = an_test_read_file(path, NULL);
  long long got = 0;
  double bps = 0;
  cr_assert(s && sscanf(s, "%lld %lf", &got, &bps) == 2, "curl -w output: %s", s ? s : "");
  free(s);
  cr_assert_eq(got, want, "bytes downloaded");
  return bps;
}

Test(proxy, throughput_through_the_proxy_vs_direct) {
  const long long n = 256ll << 20;
  const char *url = "http://allowed.example:8080/bulk/268435456";
  double direct = speed(E.host, url, "--resolve allowed.example:8080:192.0.2.10", n);
  double proxied = speed(E.sb, url, "--resolve allowed.example:8080:192.0.2.10", n);
  printf("proxy throughput: direct %.0f MB/s, through the proxy %.0f MB/s (%.2fx), 256 MiB over HTTP\n",
         direct / 1e6, proxied / 1e6, direct > 0 ? proxied / direct : 0);
  fflush(stdout);
}

Test(proxy, bad_configuration_is_refused) {
  an_error_t err = NULL;
  struct an_proxy *p = NULL;
  struct an_proxy_config none = {.listen_fd4 = -1, .listen_fd6 = -1};
  cr_assert_eq(an_proxy_new(&none, &hooks, &p, &err), -EINVAL);
  cr_assert_null(p);
  an_error_free(&err);
  int udp = nf_socket(E.sb, SOCK_DGRAM, "127.0.0.1", 15002);
  struct an_proxy_config bad = {.listen_fd4 = udp, .listen_fd6 = -1};
  cr_assert_eq(an_proxy_new(&bad, &hooks, &p, &err), -EINVAL);
  cr_assert(strstr(err->msg, "not a listening TCP socket"), "%s", err->msg);
  an_error_free(&err);
}

Test(proxy, connection_limit_refuses_the_newest) {
  stop_proxy();
  struct an_proxy_limits lim = test_limits();
  lim.max_conns = 1;
  lim.sniff_timeout_ms = 5000;
  start_proxy(lim);
  /* One connection waits in the sniff step; the second is over the limit:
   * closed or reset, and the reset can come before connect returns (a CI
   * run under ASan saw ECONNRESET from create_connection itself). */
  cr_assert_eq(nf_sh(E.sb, "/usr/bin/python3 -c \"import socket,time\n"
                           "a=socket.create_connection(('192.0.2.10',8443),5); time.sleep(0.3)\n"
                           "try:\n"
                           "  b=socket.create_connection(('192.0.2.10',8443),5); b.settimeout(5)\n"
                           "  assert b.recv(10)==b''\n"
                           "except ConnectionResetError: pass\n\""), 0);
  cr_assert(event_arrives(AN_NET_EV_CONNECT, AN_NET_ERROR, NULL, "connection limit"));
  struct an_proxy_stats st;
  join_proxy();                        /* the proxy is used by one thread at a time */
  an_proxy_stats(E.p, &st);
  cr_assert_geq(st.accepted, 2);
  cr_assert_geq(st.errors, 1);
}

Test(proxy, second_request_on_a_kept_alive_http_connection_cannot_name_another_site) {
  /* Pipelined: the allowed Host first, then another site's.  The server
   * (HTTP/1.1 keep-alive) would answer both; the proxy's Connection: close
   * makes it stop after the first. */
  cr_assert_eq(nf_sh(E.sb, "/usr/bin/python3 -c \"import socket\n"
                           "s=socket.create_connection(('192.0.2.10',8080),5); s.settimeout(10)\n"
                           "s.sendall(b'GET /one HTTP/1.1\\r\\nHost: allowed.example\\r\\n\\r\\n'"
                           "b'GET /two HTTP/1.1\\r\\nHost: other.example\\r\\n\\r\\n')\n"
                           "d=b''\nwhile True:\n  k=s.recv(65536)\n  if not k: break\n  d+=k\n"
                           "assert b'hello allowed.example' in d and b'other' not in d, d\n\""), 0,
               "one answer, for the allowed name, then EOF");
  cr_assert_geq(log_count("REQ allowed.example /one"), 1);
  cr_assert_eq(log_count("REQ other.example"), 0, "the second request reached the server");
}

Test(proxy, client_reset_mid_transfer_ends_the_connection_and_the_proxy_lives) {
  /* The client reads a little of a large download and resets: the proxy's
   * splice into the dead socket fails, the connection ends (CLOSE event),
   * and the proxy goes on serving.  SIGPIPE keeps its default action in this
   * process as a guard (this sequence gives ECONNRESET, not EPIPE, so it
   * does not by itself prove the SIGPIPE blocking in dispatch). */
  for (int i = 0; i < 5; i++)
    cr_assert_eq(nf_sh(E.sb, "/usr/bin/python3 -c \"import socket,struct\n"
                             "s=socket.create_connection(('192.0.2.10',8080),5)\n"
                             "s.sendall(b'GET /bulk/67108864 HTTP/1.1\\r\\nHost: allowed.example\\r\\n\\r\\n')\n"
                             "s.recv(1000)\n"
                             "s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii',1,0)); s.close()\n\""), 0);
  cr_assert(event_arrives(AN_NET_EV_CLOSE, AN_NET_ALLOW, NULL, "reset"));
  cr_assert_eq(curl(NULL, "--resolve allowed.example:8080:192.0.2.10 http://allowed.example:8080/"), 0,
               "the proxy still works");
}

Test(proxy, rule_text_the_policy_frees_after_the_decision_is_not_read_later) {
  /* The egress process's live policy change (SIGUSR1, egress_run.c) frees
   * the policy whose entry text dest_allowed named as *rule, while
   * connections it allowed go on; their CLOSE event must still name the
   * rule as it was (the proxy read freed memory there before).  Here the
   * hook's buffer is overwritten between the CONNECT and the CLOSE. */
  char go[128], log[128];
  snprintf(go, sizeof go, "%s/go", E.dir);
  snprintf(log, sizeof log, "%s/client.log", E.dir);
  pid_t client = nf_spawn(E.sb, log, "exec /usr/bin/python3 -c \"import os,socket,time\n"
                                     "s=socket.create_connection(('192.0.2.10',9000),5); s.sendall(b'x')\n"
                                     "for i in range(600):\n  if os.path.exists('%s'): break\n  time.sleep(0.05)\n"
                                     "s.shutdown(socket.SHUT_WR); s.settimeout(10)\n"
                                     "while s.recv(65536): pass\n\"", go);
  cr_assert(event_arrives(AN_NET_EV_CONNECT, AN_NET_ALLOW, NULL, "spliced"), "the connection was spliced");
  pthread_mutex_lock(&E.mu);
  memset(E.rule9000, 'X', sizeof E.rule9000 - 1);   /* what a freed and reused policy would hold */
  pthread_mutex_unlock(&E.mu);
  an_test_write_file(go, "", 0, 0644);
  bool closed = event_arrives(AN_NET_EV_CLOSE, AN_NET_ALLOW, NULL, "closed");
  nf_stop(client);
  cr_assert(closed, "the connection ended");
  pthread_mutex_lock(&E.mu);
  char rule[96] = "";
  for (int i = 0; i < E.nev; i++)
    if (E.ev[i].kind == AN_NET_EV_CLOSE && E.ev[i].port == 9000) snprintf(rule, sizeof rule, "%s", E.ev[i].rule);
  pthread_mutex_unlock(&E.mu);
  cr_assert_str_eq(rule, "203.0.113.0/24:9000 (test)", "the CLOSE event names the rule of the decision");
}

static int highest_fd(void) {
  DIR *d = opendir("/proc/self/fd");
  int hi = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (atoi(e->d_name) > hi) hi = atoi(e->d_name);
  if (d) closedir(d);
  return hi;
}

Test(proxy, a_full_fd_table_pauses_accept_instead_of_spinning) {
  /* A sandbox holding many connections can fill the egress process's fd
   * table; a redirected connection then waits in the listener's backlog and
   * accept4 fails with EMFILE.  The proxy used to return and find the
   * (level-triggered) listener readable again at once: a busy loop on the
   * host for as long as the sandbox liked.  Now the listener is paused for
   * AN_PROXY_ACCEPT_PAUSE_MS or until a connection frees its fds. */
  char go1[128], go2[128], log[128];
  snprintf(go1, sizeof go1, "%s/go1", E.dir);
  snprintf(go2, sizeof go2, "%s/go2", E.dir);
  snprintf(log, sizeof log, "%s/client.log", E.dir);
  pid_t client = nf_spawn(E.sb, log, "exec /usr/bin/python3 -c \"import os,socket,time\n"
                                     "while not os.path.exists('%s'): time.sleep(0.05)\n"
                                     "ss=[socket.create_connection(('192.0.2.10',9000),5) for i in range(24)]\n"
                                     "print('connected', flush=True)\n"
                                     "while not os.path.exists('%s'): time.sleep(0.05)\n\"", go1, go2);
  cr_assert_eq(getrlimit(RLIMIT_NOFILE, &E.nofile), 0);
  struct rlimit low = E.nofile;
  low.rlim_cur = (rlim_t) highest_fd() + 6;
  an_test_write_file(go1, "", 0, 0644);
  cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
  E.nofile_lowered = true;
  for (int i = 0; i < 100; i++) usleep(20000);   /* the clients connect; the table fills */
  join_proxy();                                  /* stats are read with the loop stopped */
  struct an_proxy_stats st;
  an_proxy_stats(E.p, &st);
  setrlimit(RLIMIT_NOFILE, &E.nofile);
  E.nofile_lowered = false;
  an_test_write_file(go2, "", 0, 0644);
  char *text = an_test_read_file(log, NULL);
  bool connected = text && strstr(text, "connected");
  free(text);
  int status = -1;
  for (int i = 0; i < 500 && waitpid(client, &status, WNOHANG) != client; i++) usleep(20000);
  nf_stop(client);
  cr_assert(connected, "the client's connections were made (log %s)", log);
  cr_assert_geq(st.accept_failed, 1, "accept4 never failed: the fd table did not fill");
  cr_assert_leq(st.accept_failed, 200, "accept4 failed %llu times: the proxy spun on its full fd table",
                (unsigned long long) st.accept_failed);
  /* and it serves again once fds are free */
  atomic_store(&E.stop, false);
  cr_assert_eq(pthread_create(&E.thread, NULL, proxy_loop, NULL), 0);
  atomic_store(&E.started, true);
  cr_assert_eq(nf_sh(E.sb, "/usr/bin/python3 -c \"import socket\n"
                           "s=socket.create_connection(('192.0.2.10',9000),5); s.settimeout(10)\n"
                           "s.sendall(b'y'); s.shutdown(socket.SHUT_WR)\n"
                           "d=b''\nwhile True:\n  k=s.recv(65536)\n  if not k: break\n  d+=k\n"
                           "assert d==b'echo:y', d\n\""), 0, "the proxy serves again");
}

static void restart_proxy_thread(void) {
  atomic_store(&E.stop, false);
  cr_assert_eq(pthread_create(&E.thread, NULL, proxy_loop, NULL), 0);
  atomic_store(&E.started, true);
}

Test(proxy, a_live_policy_change_cuts_the_connections_it_now_refuses) {
  /* `agentnest network ID --deny ...` reloads the egress process's policy;
   * connections the old policy allowed went on (up to the idle timeout,
   * forever while they carried data).  an_proxy_recheck asks the policy
   * again and resets those it refuses. */
  char log[128];
  snprintf(log, sizeof log, "%s/client.log", E.dir);
  pid_t client = nf_spawn(E.sb, log, "exec /usr/bin/python3 -c \"import socket\n"
                                     "s=socket.create_connection(('192.0.2.10',9000),5); s.sendall(b'x'); s.settimeout(60)\n"
                                     "try:\n  d=s.recv(100); print('got', d)\n"
                                     "except ConnectionResetError: print('reset')\n\"");
  cr_assert(event_arrives(AN_NET_EV_CONNECT, AN_NET_ALLOW, NULL, "spliced"), "the connection was spliced");
  join_proxy();
  cr_assert_eq(an_proxy_recheck(E.p), 0, "nothing is cut while the policy still allows it");
  atomic_store(&E.deny9000, true);
  unsigned cut = an_proxy_recheck(E.p);
  restart_proxy_thread();
  int status = -1;
  for (int i = 0; i < 1500 && waitpid(client, &status, WNOHANG) != client; i++) usleep(20000);
  nf_stop(client);
  char *text = an_test_read_file(log, NULL);
  bool reset = text && strstr(text, "reset");
  free(text);
  cr_assert_eq(cut, 1, "the connection the new policy refuses is cut");
  cr_assert(reset, "the client saw its connection reset (log %s)", log);
  cr_assert(has_event(AN_NET_EV_CLOSE, AN_NET_DENY, NULL, "policy changed"));
}
