#!/usr/bin/python3
"""tests/data/net/egress_servers.py — the fake internet's web servers for
tests/integration/proxy_test.c (run as an unprivileged user via setpriv):
HTTPS on 192.0.2.10:8443 and [2001:db8::10]:8443 with one certificate for
two names (allowed.example, other.example), plain HTTP on 192.0.2.10:8080,
and a half-close echo on 192.0.2.10:9000 (reads to EOF, then answers).
GET /bulk/N answers N bytes; any other path "hello <Host>".  Every request
is logged as "REQ <host> <path>" to LOG; "ready" once all are listening.
usage: egress_servers.py CERT KEY LOG"""
import socket, socketserver, ssl, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

cert, key, logpath = sys.argv[1:4]
log = open(logpath, "a", buffering=1)
lock = threading.Lock()

def note(line):
    with lock:
        log.write(line + "\n")

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_GET(self):
        host = self.headers.get("Host", "")
        note("REQ %s %s" % (host, self.path))
        if self.path.startswith("/bulk/"):
            n = int(self.path[6:])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            chunk = b"\0" * (1 << 20)
            while n > 0:
                k = min(n, len(chunk))
                self.wfile.write(chunk[:k])
                n -= k
            return
        body = ("hello %s\n" % host).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

class V6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6

ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
servers = []
for cls, addr, tls in ((ThreadingHTTPServer, ("192.0.2.10", 8443), True),
                       (V6Server, ("2001:db8::10", 8443), True),
                       (ThreadingHTTPServer, ("192.0.2.10", 8080), False)):
    s = cls(addr, Handler)
    if tls:
        s.socket = ctx.wrap_socket(s.socket, server_side=True)
    servers.append(s)

class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        data = b""
        while True:
            d = self.request.recv(65536)
            if not d:
                break
            data += d
        note("ECHO %d" % len(data))
        self.request.sendall(b"echo:" + data)

class EchoServer(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
servers.append(EchoServer(("192.0.2.10", 9000), Echo))

for s in servers:
    threading.Thread(target=s.serve_forever, daemon=True).start()
note("ready")
threading.Event().wait()
