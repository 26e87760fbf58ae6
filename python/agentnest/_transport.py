"""Transport: calls the server's operations by name over HTTP/1.1 (TCP or a
unix socket), with a bearer token.

The routes are not written here: they are read from the server's OpenAPI
document (/v1/openapi.json, generated from the same operations table as the
routes and the MCP tools), each operation found by its operationId.  So the
client follows the server and the two cannot drift.

Configuration, in order: the arguments of Client(), then the environment
(AGENTNEST_URL: "http://HOST:PORT" or "unix:/PATH"; AGENTNEST_TOKEN), then
local mode: `agentnest serve` started on a private unix socket with a
fresh token (the `agentnest` binary from AGENTNEST_BIN or PATH; it must run
as root, as the runtime does), stopped when the process exits.

Thread-safety: a Client may be shared by threads; each call uses its own
connection.
"""

import atexit
import http.client
import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse

from .errors import (AgentNestError, FileAccessError, PolicyDeniedError, RuntimeNotAvailableError,
                     SandboxDestroyedError, UnsupportedCapabilityError, ImageNotFoundError)


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


def _error_for(status, body):
    err = (body or {}).get("error") if isinstance(body, dict) else None
    msg = err.get("message") if isinstance(err, dict) else None
    eno = err.get("errno") if isinstance(err, dict) else None
    msg = msg or "HTTP %d" % status
    kw = {"status": status, "errno": eno}
    low = msg.lower()
    if status in (401, 403) or "denied" in low:
        return PolicyDeniedError(msg, **kw)
    if status == 404 and (low.startswith("image ") or "image store" in low):
        return ImageNotFoundError(msg, **kw)
    if status == 404 and ("sandbox" in low or eno == "ENOENT") and "file" not in low:
        return SandboxDestroyedError(msg, **kw)
    if status == 410 or "expired" in low or "destroyed" in low:
        return SandboxDestroyedError(msg, **kw)
    if status == 413 or eno in ("EFBIG", "EXDEV", "ELOOP", "EISDIR", "ENOTDIR", "EFTYPE"):
        return FileAccessError(msg, **kw)
    if status == 501 or eno in ("EOPNOTSUPP", "ENOSYS"):
        return UnsupportedCapabilityError(msg, **kw)
    return AgentNestError(msg, **kw)


def _deref(doc, schema):
    while isinstance(schema, dict) and "$ref" in schema:
        node = doc
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node.get(part, {})
        schema = node
    return schema


def _input_properties(doc, op):
    names = set()
    for p in op.get("parameters", []):
        p = _deref(doc, p)
        if isinstance(p, dict) and p.get("name"):
            names.add(p["name"])
    body = _deref(doc, op.get("requestBody", {}))
    schema = _deref(doc, (body.get("content", {}).get("application/json", {}) or {}).get("schema"))
    if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        names.update(schema["properties"])
    elif not names and op.get("requestBody"):
        return None
    return names


class _LocalServer:
    """`agentnest serve` on a private unix socket, for this process only."""

    def __init__(self, binary=None, root=None, extra_args=()):
        binary = binary or os.environ.get("AGENTNEST_BIN") or shutil.which("agentnest")
        if not binary:
            raise RuntimeNotAvailableError("agentnest not found (set AGENTNEST_BIN or AGENTNEST_URL)")
        self.dir = tempfile.mkdtemp(prefix="agentnest-client-")
        os.chmod(self.dir, 0o700)
        self.token = secrets.token_hex(32)
        tokens = os.path.join(self.dir, "tokens")
        fd = os.open(tokens, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.token + " python-client\n")
        self.socket = os.path.join(self.dir, "api.sock")
        args = [binary]
        if root:
            args += ["--root", root]
        args += ["serve", "--listen", "unix:" + self.socket, "--tokens", tokens] + list(extra_args)
        self._log = open(os.path.join(self.dir, "serve.log"), "wb")
        try:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self._log,
                                         stderr=subprocess.STDOUT, close_fds=True)
        except OSError as e:
            raise RuntimeNotAvailableError("cannot start %s serve: %s" % (binary, e)) from e
        deadline = time.monotonic() + 10
        while not os.path.exists(self.socket):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeNotAvailableError("agentnest serve did not start: " + self._log_text())
            time.sleep(0.01)
        atexit.register(self.stop)

    def _log_text(self):
        try:
            with open(os.path.join(self.dir, "serve.log"), "rb") as f:
                return f.read().decode("utf-8", "replace").strip()[-2000:]
        except OSError:
            return ""

    def stop(self):
        p = getattr(self, "proc", None)
        if p and p.poll() is None:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if getattr(self, "_log", None):
            self._log.close()
            self._log = None
        shutil.rmtree(self.dir, ignore_errors=True)


class Client:
    """A connection to `agentnest serve`.  Client(url=None, token=None, timeout=None)."""

    _default = None
    _default_lock = threading.Lock()

    def __init__(self, url=None, token=None, *, timeout=None, local_root=None):
        url = url or os.environ.get("AGENTNEST_URL")
        token = token or os.environ.get("AGENTNEST_TOKEN")
        self._local = None
        if not url:
            self._local = _LocalServer(root=local_root)
            url, token = "unix:" + self._local.socket, self._local.token
        self.url, self._token, self.timeout = url, token, timeout
        if url.startswith("unix:"):
            self._unix, self._host, self._port, self._https = url[5:], None, None, False
        else:
            u = urllib.parse.urlsplit(url)
            if u.scheme not in ("http", "https") or not u.hostname:
                raise ValueError("AgentNest URL must be http://HOST:PORT, https://HOST:PORT or unix:/PATH: %r" % url)
            self._unix, self._host, self._port = None, u.hostname, u.port
            self._https = u.scheme == "https"
        self._routes = None
        self._lock = threading.Lock()

    @classmethod
    def default(cls):
        with cls._default_lock:
            if cls._default is None:
                cls._default = cls()
            return cls._default

    def close(self):
        if self._local:
            self._local.stop()
            self._local = None

    # ---- HTTP -------------------------------------------------------------------
    def _conn(self, timeout):
        if self._unix:
            return _UnixConnection(self._unix, timeout)
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def request(self, method, path, body=None, *, timeout=None, stream=False):
        headers = {"Accept": "application/json"}
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn = self._conn(timeout if timeout is not None else self.timeout)
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise RuntimeNotAvailableError("AgentNest server %s: %s" % (self.url, e)) from e
        if stream and resp.status < 300:
            return conn, resp
        raw = resp.read()
        conn.close()
        try:
            doc = json.loads(raw.decode()) if raw else {}
        except ValueError:
            doc = {"error": {"message": raw.decode("utf-8", "replace")[:500]}}
        if resp.status >= 300:
            raise _error_for(resp.status, doc)
        return doc

    # ---- operations -----------------------------------------------------------------
    def routes(self):
        with self._lock:
            if self._routes is None:
                doc = self.request("GET", "/v1/openapi.json")
                base = ""
                for srv in doc.get("servers") or []:
                    u = srv.get("url", "") if isinstance(srv, dict) else ""
                    if u.startswith("/"):
                        base = u.rstrip("/")
                        break
                routes, props = {}, {}
                for path, item in doc.get("paths", {}).items():
                    path = path if path.startswith("/v1/") else base + path
                    for method, op in item.items():
                        if isinstance(op, dict) and op.get("operationId"):
                            routes[op["operationId"]] = (method.upper(), path)
                            props[op["operationId"]] = _input_properties(doc, op)
                self._routes, self._props = routes, props
            return self._routes

    def input_properties(self, op):
        """The member names operation `op` takes (None when the document does not say)."""
        self.routes()
        return self._props.get(op)

    def has(self, op):
        return op in self.routes()

    def call(self, op, args=None, *, timeout=None, stream=False):
        """Run operation `op` with the JSON object `args`; returns its result object."""
        route = self.routes().get(op)
        if not route:
            raise UnsupportedCapabilityError("this AgentNest server has no operation %r" % op)
        method, path = route
        args = dict(args or {})
        for name in [p[1:-1] for p in path.split("/") if p.startswith("{") and p.endswith("}")]:
            if name not in args:
                raise ValueError("%s: %s is required" % (op, name))
            path = path.replace("{%s}" % name, urllib.parse.quote(str(args.pop(name)), safe=""))
        if method == "GET":
            query = {k: v for k, v in args.items() if v is not None}
            if query:
                path += "?" + urllib.parse.urlencode(query)
            return self.request(method, path, None, timeout=timeout, stream=stream)
        return self.request(method, path, args, timeout=timeout, stream=stream)
