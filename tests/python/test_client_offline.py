"""Client behaviour that needs no server: the 0.3 data types, policies, validation, the
OpenAPI route reading and the error mapping (run by tests/integration/python_client_test.c)."""
import json
import os
import socket
import sys
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, HTTPServer

from agentnest import (ExecutionError, ExecutionResult, FileAccessError, NetworkPolicy, PolicyDeniedError,
                       SandboxDestroyedError, SandboxPool, Secret, SecurityPolicy, SessionResult,
                       UnsupportedCapabilityError)
from agentnest._transport import Client, _error_for
from agentnest.errors import ImageNotFoundError, PoolExhaustedError


class DataTypes(unittest.TestCase):
    def test_secret_never_shows_its_value(self):
        s = Secret("hunter2")
        self.assertNotIn("hunter2", str(s) + repr(s) + "%s" % s)
        self.assertEqual(s.reveal(), "hunter2")
        with self.assertRaises(ValueError):
            Secret("")

    def test_result_check_message(self):
        r = ExecutionResult(("x",), 2, "", "boom\n", 0.1)
        with self.assertRaisesRegex(ExecutionError, "status 2: boom"):
            r.check()
        self.assertIs(ExecutionResult(("x",), 0, "", "", 0).check().ok, True)

    def test_session_result_check_uses_last_traceback_line(self):
        r = SessionResult("", "", error="Traceback...\n  File x\nKeyError: 'k'\n")
        with self.assertRaisesRegex(ExecutionError, "KeyError: 'k'"):
            r.check()

    def test_network_policy_validation(self):
        self.assertEqual(NetworkPolicy.allowlist(domains=("pkg.example",)).entries(), ["pkg.example"])
        with self.assertRaises(ValueError):
            NetworkPolicy.allowlist()
        with self.assertRaises(ValueError):
            NetworkPolicy("full", cidrs=("192.0.2.0/24",))

    def test_security_policy_images(self):
        with self.assertRaises(PolicyDeniedError):
            SecurityPolicy(allowed_images=("a",)).check_image("b")
        with self.assertRaises(PolicyDeniedError):
            SecurityPolicy(require_image_digest=True).check_image("python")
        SecurityPolicy(require_image_digest=True).check_image("python@sha256:" + "0" * 64)

    def test_pool_refuses_reuse(self):
        with self.assertRaises(ValueError):
            SandboxPool(lambda: None, max_uses=2)

    def test_pool_close_destroys_sandboxes_still_being_made(self):
        # close() right after acquire(): the replacement being made is destroyed before close returns
        made, destroyed, gate = [], [], threading.Event()

        class Fake:
            def __init__(self):
                self.n = len(made)
                made.append(self)

            def destroy(self):
                destroyed.append(self.n)

        def factory():
            if made:  # the refill: slow, as a create on a busy server is
                gate.wait(5)
            return Fake()

        pool = SandboxPool(factory, size=1)
        a = pool.acquire()
        threading.Timer(0.2, gate.set).start()
        pool.close()
        self.assertEqual(sorted(destroyed), [0, 1], "close() returned before the refill's sandbox was destroyed")
        self.assertIs(a, made[0])

    def test_pool_acquire_racing_close_hands_out_nothing(self):
        # redteam: acquire() checked _closed before its get(), unlocked: a close() that ran while it
        # took a sandbox left that sandbox handed out of a closed pool (close() had copied _out
        # already, so it was never destroyed) and started a refill close() did not wait for
        import queue as _queue
        made, destroyed = [], []

        class Fake:
            def __init__(self):
                self.n = len(made)
                made.append(self)

            def destroy(self):
                destroyed.append(self.n)

        pool = SandboxPool(Fake, size=1)

        class CloseDuringGet(_queue.Queue):
            armed = True

            def get(self, *a, **k):
                item = super().get(*a, **k)
                if self.armed:  # close() runs, whole, between the get and acquire's bookkeeping
                    self.armed = False
                    t = threading.Thread(target=pool.close)
                    t.start()
                    t.join()
                return item

        q = CloseDuringGet()
        q.put(pool._ready.get_nowait())
        pool._ready = q
        with self.assertRaises(PoolExhaustedError):
            pool.acquire()
        self.assertEqual(destroyed, [0], "the sandbox taken while close() ran was not destroyed")
        self.assertEqual(len(made), 1, "a refill was started for a closed pool")

    def test_pool_acquire_waiting_when_closed_is_woken(self):
        # redteam: an acquire() waiting on an empty pool (its refill still being made) slept for
        # ever once close() ran: the refill destroyed what it made instead of putting it
        made, gate, errors = [], threading.Event(), []

        class Fake:
            def __init__(self):
                made.append(self)

            def destroy(self):
                pass

        def factory():
            if made:
                gate.wait(5)
            return Fake()

        pool = SandboxPool(factory, size=1)
        pool.acquire()

        def waiter():
            try:
                pool.acquire()
            except PoolExhaustedError as e:
                errors.append(e)

        t = threading.Thread(target=waiter, daemon=True)
        t.start()
        threading.Timer(0.2, gate.set).start()
        pool.close()
        t.join(3)
        self.assertFalse(t.is_alive(), "acquire() still waits on the closed pool")
        self.assertEqual(len(errors), 1)

    def test_error_mapping(self):
        self.assertIsInstance(_error_for(404, {"error": {"message": "sandbox abc: not found", "errno": "ENOENT"}}),
                              SandboxDestroyedError)
        # a missing image is not a destroyed sandbox (it was: ENOENT with a 404)
        missing = _error_for(404, {"error": {"errno": "ENOENT", "message":
                                             "image python:3.12-slim: not found in the image store /var/lib/agentnest; "
                                             "import it first"}})
        self.assertIsInstance(missing, ImageNotFoundError)
        self.assertNotIsInstance(missing, SandboxDestroyedError)
        self.assertIsInstance(_error_for(403, {"error": {"message": "denied by approval hook: no"}}), PolicyDeniedError)
        self.assertIsInstance(_error_for(413, {"error": {"message": "body too large"}}), FileAccessError)
        self.assertIsInstance(_error_for(501, {"error": {"message": "x", "errno": "EOPNOTSUPP"}}),
                              UnsupportedCapabilityError)


class Routes(unittest.TestCase):
    """The client reads routes from the server's OpenAPI document, by operationId."""

    def setUp(self):
        seen = self.seen = []
        doc = {"openapi": "3.1.0", "servers": [{"url": "/v1"}], "paths": {
            "/sandboxes/{sandbox}/exec": {"post": {"operationId": "exec", "requestBody": {"content": {
                "application/json": {"schema": {"type": "object", "properties": {"sandbox": {}, "argv": {}}}}}}}},
            "/sandboxes/{sandbox}": {"get": {"operationId": "inspect", "parameters": [{"name": "sandbox", "in": "path"}]}}}}

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, obj):
                b = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(b)))
                self.end_headers()
                self.wfile.write(b)

            def do_GET(self):
                seen.append(("GET", self.path, self.headers.get("Authorization")))
                self._send(200, doc if self.path == "/v1/openapi.json" else {"id": "abc", "status": "running"})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                seen.append(("POST", self.path, body))
                self._send(404, {"error": {"code": 404, "errno": "ENOENT", "message": "sandbox abc: not found"}})

        self.httpd = HTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.client = Client("http://127.0.0.1:%d" % self.httpd.server_port, "tok")

    def tearDown(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def test_routes_come_from_the_openapi_document(self):
        self.assertEqual(self.client.call("inspect", {"sandbox": "a/b"})["status"], "running")
        self.assertIn(("GET", "/v1/sandboxes/a%2Fb", "Bearer tok"), self.seen)
        self.assertEqual(self.client.input_properties("exec"), {"sandbox", "argv"})
        with self.assertRaises(SandboxDestroyedError):
            self.client.call("exec", {"sandbox": "abc", "argv": ["true"]})
        self.assertEqual(self.seen[-1][1], "/v1/sandboxes/abc/exec")
        with self.assertRaises(UnsupportedCapabilityError):
            self.client.call("no_such_op", {})


if __name__ == "__main__":
    unittest.main()
