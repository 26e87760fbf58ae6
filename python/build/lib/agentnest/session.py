"""PythonSession: a REPL in a sandbox whose globals persist between run() calls.

Over a server that offers sessions (operations session_start / session_run / session_stop) the
session is the runtime's: globals live in one interpreter, a call over its timeout is
interrupted (KeyboardInterrupt) and the session lives on, and errors come structured.  A server
without them gets UnsupportedCapabilityError (never a silent per-call interpreter that forgets
its variables, which would break REPL semantics)."""

from .errors import ExecutionTimeoutError, SandboxDestroyedError, UnsupportedCapabilityError
from .types import SessionResult


class PythonSession:
    def __init__(self, sandbox):
        self._sb = sandbox
        c = sandbox._client
        if not (c.has("session_start") and c.has("session_run")):
            raise UnsupportedCapabilityError("this AgentNest server offers no sessions")
        out = sandbox._call("session_start", {"kind": "python"})
        self._name = out.get("session") or out.get("name")
        self.closed = False

    @property
    def name(self):
        return self._name

    def run(self, code: str, *, timeout: float = 30.0) -> SessionResult:
        if self.closed:
            raise SandboxDestroyedError("session %s is closed" % self._name)
        if timeout is None or timeout <= 0:
            raise ValueError("timeout must be positive")
        self._sb._approve("execute_python", {"code_bytes": len(code.encode()), "code": code})
        out = self._sb._call("session_run", {"session": self._name, "code": code,
                                             "timeout_s": max(1, int(timeout + 0.999))}, timeout)
        err = out.get("error")
        if out.get("session_lost"):
            self.closed = True
        res = SessionResult(out.get("stdout", ""), out.get("stderr", ""),
                            (out.get("value") or {}).get("repr") if isinstance(out.get("value"), dict) else out.get("result"),
                            (err or {}).get("traceback") if isinstance(err, dict) else err,
                            (out.get("value") or {}).get("json") if isinstance(out.get("value"), dict) else None,
                            (err or {}).get("type") if isinstance(err, dict) else None,
                            (err or {}).get("message") if isinstance(err, dict) else None)
        if out.get("timed_out"):
            raise ExecutionTimeoutError("session call timed out after %ss" % timeout)
        return res

    def close(self):
        if not self.closed:
            self.closed = True
            try:
                self._sb._call("session_stop", {"session": self._name})
            except SandboxDestroyedError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
