#!/usr/bin/env python3
"""tests/mcp/mcp_stdio_calls.py — send JSON-RPC messages to `agentnest mcp`
over stdio all at once (so the calls run concurrently), print each response
as one line, in the order they come, and end the session once every request
(a message with an "id") has its answer.  Standard library only.

usage: mcp_stdio_calls.py AGENTNEST ROOT MCP-ARGS... -- MESSAGE...
"""
import json
import subprocess
import sys


def main():
    argv = sys.argv[1:]
    sep = argv.index("--")
    an, root, mcp_args, msgs = argv[0], argv[1], argv[2:sep], argv[sep + 1:]
    want = {json.loads(m)["id"] for m in msgs if "id" in json.loads(m)}
    p = subprocess.Popen([an, "--root", root, "mcp", "--quiet", *mcp_args], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    p.stdin.write("".join(m + "\n" for m in msgs))
    p.stdin.flush()
    while want:
        line = p.stdout.readline()
        if not line:
            print("server ended with %d answers missing" % len(want), file=sys.stderr)
            return 1
        msg = json.loads(line)
        if "id" in msg:
            want.discard(msg["id"])
            print(line.rstrip("\n"), flush=True)
    p.stdin.close()   # the client goes away: the server destroys what it made
    return p.wait(timeout=120)


if __name__ == "__main__":
    sys.exit(main())
