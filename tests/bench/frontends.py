#!/usr/bin/env python3
"""tests/bench/frontends.py — round trips of the agent front ends for bench.sh
(standard library only): N calls in one client connection, each timed on the
client, printed as JSON lists of seconds (bench.sh's row() takes them).

  frontends.py mcp AGENTNEST ROOT N     -> {"run_code": [...], "exec": [...]}
      `agentnest --root ROOT mcp` over stdio: initialize, create, then N
      run_code (shell `true`, in the sandbox) and N exec (argv ["true"]).
  frontends.py http URL TOKEN N         -> {"exec": [...]}
      `agentnest serve` at URL (http://127.0.0.1:PORT): create, then N
      POST /v1/sandboxes/ID/exec {"argv":["true"]} on one keep-alive
      connection, then destroy.
Every call must succeed (exit status 0); the first failure ends the script
with status 1 and the reason on stderr."""
import http.client
import json
import os
import subprocess
import sys
import time
import urllib.parse

IMAGE = os.environ.get("AN_BENCH_IMAGE", "python")   # an image of the store (bench.sh's IMAGE)


def fail(msg):
    sys.stderr.write("frontends.py: %s\n" % msg)
    sys.exit(1)


def mcp_bench(an, root, n):
    p = subprocess.Popen([an, "--root", root, "mcp", "--quiet"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, bufsize=1)
    ids = iter(range(1, 1 << 30))

    def rpc(method, params):
        i = next(ids)
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
        p.stdin.flush()
        while True:
            line = p.stdout.readline()
            if not line:
                fail("mcp: the server closed its output")
            m = json.loads(line)
            if m.get("id") == i:
                if "error" in m:
                    fail("mcp %s: %s" % (method, m["error"]))
                return m["result"]

    def tool(name, args):
        r = rpc("tools/call", {"name": name, "arguments": args})
        if r.get("isError"):
            fail("mcp %s: %s" % (name, r["content"][0]["text"]))
        return r["structuredContent"]

    rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "bench", "version": "1"}})
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    sb = tool("create", {"image": IMAGE})["id"]
    out = {"run_code": [], "exec": []}
    for key, name, args in (("run_code", "run_code", {"sandbox": sb, "language": "shell", "code": "true"}),
                            ("exec", "exec", {"sandbox": sb, "argv": ["true"]})):
        tool(name, args)   # warm-up
        for _ in range(n):
            t = time.perf_counter()
            r = tool(name, args)
            out[key].append(time.perf_counter() - t)
            if r.get("exit_code") != 0:
                fail("mcp %s: exit code %r" % (name, r.get("exit_code")))
    p.stdin.close()   # the server destroys the sandbox it made
    p.wait(60)
    return out


def http_bench(url, token, n):
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    hdr = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}

    def call(method, path, body=None):
        c.request(method, path, body=None if body is None else json.dumps(body), headers=hdr)
        r = c.getresponse()
        data = r.read()
        if r.status != 200:
            fail("http %s %s: %d %s" % (method, path, r.status, data[:300]))
        return json.loads(data)

    sb = call("POST", "/v1/sandboxes", {"image": IMAGE})["id"]
    out = {"exec": []}
    call("POST", "/v1/sandboxes/%s/exec" % sb, {"argv": ["true"]})   # warm-up
    for _ in range(n):
        t = time.perf_counter()
        r = call("POST", "/v1/sandboxes/%s/exec" % sb, {"argv": ["true"]})
        out["exec"].append(time.perf_counter() - t)
        if r.get("exit_code") != 0:
            fail("http exec: exit code %r" % r.get("exit_code"))
    call("DELETE", "/v1/sandboxes/%s" % sb)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] not in ("mcp", "http"):
        fail("usage: frontends.py mcp AGENTNEST ROOT N | http URL TOKEN N")
    f = mcp_bench if sys.argv[1] == "mcp" else http_bench
    print(json.dumps(f(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
