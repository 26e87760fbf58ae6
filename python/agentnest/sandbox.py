"""Sandbox: the AgentNest 0.3 API's synchronous sandbox, over `agentnest serve`.

Differences from 0.3, each a fix (see python/README.md):
- a Secret is given to the runtime as a secret (redacted in every output by the runtime itself);
  if the server cannot take secrets, creation fails instead of passing the value as plain env;
- a PythonSession call over its timeout is interrupted and the session lives on;
- snapshot() keeps the tar on the server (named by its sha256) and writes a reference file to
  `destination`, which restore() accepts;
- stream_shell() yields chunks as the server streams them when it can, else after the command.
"""

import base64
import fnmatch
import glob
import json
import os
import time
from typing import Dict, Iterator, List, Optional, Sequence, Union

from . import approvals as _approvals
from ._transport import Client
from .errors import (AgentNestError, ExecutionTimeoutError, FileAccessError, PolicyDeniedError,
                     SandboxDestroyedError, UnsupportedCapabilityError)
from .policy import NetworkMode, NetworkPolicy, SecurityPolicy
from .types import (Artifact, EventType, ExecutionChunk, ExecutionResult, SandboxEvent, Secret,
                    SnapshotMetadata)

_IMAGES = {"python": "python", "debian": "debian", "busybox": "busybox", "ubuntu": "debian"}


def _image_for(runtime: str) -> str:
    """A Docker-style runtime ("python:3.12-slim") to an image of the store ("python")."""
    if "@sha256:" in runtime or "/" in runtime:
        return runtime
    return _IMAGES.get(runtime.split(":", 1)[0], runtime)


def _check_rel(path: str) -> str:
    if not isinstance(path, str) or not path:
        raise ValueError("path must be a non-empty string")
    p = path[len("/workspace/"):] if path.startswith("/workspace/") else path
    if p.startswith("/") or ".." in p.split("/"):
        raise ValueError("path %r: relative workspace paths only (no /, no ..)" % path)
    return p


class Sandbox:
    def __init__(self, runtime: str = "python:3.12-slim", timeout: float = 300, *,
                 environment: Optional[Dict[str, Union[str, Secret]]] = None, workdir: str = "/workspace",
                 network_enabled: bool = False, memory: str = "512m", cpus: float = 1.0, pids: int = 256,
                 gpus: int = 0, backend=None, read_only_root: bool = True,
                 security_policy: Optional[SecurityPolicy] = None, observers=(), approval_hook=None,
                 client: Optional[Client] = None, profile: Optional[str] = None, _sandbox_id: str = None):
        if timeout is None or timeout <= 0:
            raise ValueError("timeout must be positive")
        if workdir != "/workspace" and not workdir.startswith("/workspace/"):
            raise ValueError("workdir must be /workspace or below it")
        if not read_only_root:
            raise UnsupportedCapabilityError("AgentNest's root is always read-only (write to /workspace)")
        self._client = client or Client.default()
        self._policy = security_policy or SecurityPolicy(
            network=NetworkPolicy.allowed() if network_enabled else NetworkPolicy.denied())
        self._policy.check_image(runtime)
        self._hook = approval_hook or _approvals.AllowAll()
        self._observers = tuple(observers)
        self._timeout = float(timeout)
        self._created = time.monotonic()
        self._destroyed = False
        self.config = {"runtime": runtime, "timeout": timeout, "workdir": workdir, "memory": memory,
                       "cpus": cpus, "pids": pids, "gpus": gpus, "network": self._policy.network.mode.value,
                       "profile": profile}
        self._environment = dict(environment or {})
        if _sandbox_id:
            self._id = _sandbox_id
            return
        args = {"image": _image_for(runtime), "memory": str(memory), "cpus": str(cpus), "pids": int(pids),
                "timeout": "%ds" % int(timeout), "workdir": workdir}
        if profile:
            args["profile"] = profile
        env = {k: v for k, v in self._environment.items() if not isinstance(v, Secret)}
        secrets = {k: v.reveal() for k, v in self._environment.items() if isinstance(v, Secret)}
        if env:
            args["env"] = env
        if secrets:
            args["secrets"] = secrets
        net = self._policy.network
        if net.mode != NetworkMode.DENY:
            args["network"] = net.mode.value
            if net.entries():
                args["allow"] = net.entries()
        if gpus:
            args["gpu"] = "all" if gpus is True else ",".join(str(i) for i in range(int(gpus)))
        self._require_members("create", args)
        out = self._client.call("create", args)
        self._id = out["id"]
        self._emit(EventType.CREATED, {"image": args["image"]})

    # ---- plumbing -----------------------------------------------------------------
    def _require_members(self, op, args):
        """Fail closed when the server's schema cannot take a member we need (a Secret sent as
        plain env would not be redacted; a network policy not sent would be silently denied)."""
        props = self._client.input_properties(op)
        if props is None:
            return
        missing = [k for k in args if k not in props]
        if missing:
            raise UnsupportedCapabilityError("this AgentNest server's %s does not take %s" % (op, ", ".join(missing)))

    def _emit(self, etype, details):
        ev = SandboxEvent(etype, getattr(self, "_id", ""), details)
        for o in self._observers:
            o(ev)

    def _approve(self, action, details):
        req = _approvals.ApprovalRequest(_approvals.Action(action), self._id, details)
        if not self._hook.approve(req):
            raise PolicyDeniedError("sandbox action was denied: %s" % action)

    def _live(self):
        if self._destroyed:
            raise SandboxDestroyedError("sandbox %s was destroyed" % self._id)

    def _remaining(self, timeout):
        left = self._timeout - (time.monotonic() - self._created)
        if left <= 0:
            raise SandboxDestroyedError("sandbox %s expired" % self._id)
        if timeout is not None:
            if timeout <= 0:
                raise ValueError("timeout must be positive")
            return max(1, int(min(timeout, left) + 0.999))
        return max(1, int(left + 0.999))

    def _call(self, op, args, timeout=None):
        self._live()
        try:
            return self._client.call(op, dict(args, sandbox=self._id),
                                     timeout=None if timeout is None else timeout + 30)
        except SandboxDestroyedError:
            self._destroyed = True
            raise

    def _result(self, command, out, t0):
        r = ExecutionResult(tuple(command), out.get("exit_code") if out.get("exit_code") is not None
                            else out.get("status", 1), out.get("stdout", ""), out.get("stderr", ""),
                            time.monotonic() - t0, bool(out.get("timed_out")), bool(out.get("oom_killed")),
                            bool(out.get("stdout_truncated")), bool(out.get("stderr_truncated")))
        self._emit(EventType.EXEC, {"command": list(command)[:1], "exit_code": r.exit_code})
        if r.timed_out:
            raise ExecutionTimeoutError("command timed out: %s" % " ".join(command)[:200], r)
        return r

    @staticmethod
    def _env(environment):
        if not environment:
            return None
        if any(isinstance(v, Secret) for v in environment.values()):
            raise UnsupportedCapabilityError("secrets are given at creation (environment=), not per command")
        return {str(k): str(v) for k, v in environment.items()}

    # ---- properties ---------------------------------------------------------------------
    @property
    def id(self) -> str:
        return self._id

    @property
    def destroyed(self) -> bool:
        return self._destroyed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def __repr__(self):
        return "Sandbox(id=%r, runtime=%r%s)" % (self._id, self.config["runtime"],
                                                  ", destroyed" if self._destroyed else "")

    # ---- commands -----------------------------------------------------------------------
    def _exec_args(self, timeout, environment, workdir):
        a = {"timeout_s": self._remaining(timeout)}
        env = self._env(environment)
        if env:
            a["env"] = env
        if workdir:
            a["workdir"] = workdir
        return a

    def exec(self, command: Sequence[str], *, timeout=None, environment=None, workdir=None) -> ExecutionResult:
        if isinstance(command, str) or not command:
            raise ValueError("command must be a non-empty list of strings (argv, no shell)")
        command = [str(c) for c in command]
        self._approve("execute", {"command": command})
        a = self._exec_args(timeout, environment, workdir)
        t0 = time.monotonic()
        return self._result(command, self._call("exec", dict(a, argv=command), a["timeout_s"]), t0)

    def _run_code(self, language, code, timeout, environment, workdir):
        a = self._exec_args(timeout, environment, workdir)
        t0 = time.monotonic()
        argv = ["python3", "-c", code] if language == "python" else ["sh", "-c", code]
        out = self._call("run_code", dict(a, language=language, code=code), a["timeout_s"])
        return self._result(argv, out, t0)

    def exec_python(self, code: str, *, timeout=None, environment=None, workdir=None) -> ExecutionResult:
        self._approve("execute_python", {"code_bytes": len(code.encode()), "code": code})
        return self._run_code("python", code, timeout, environment, workdir)

    def exec_shell(self, script: str, *, timeout=None, environment=None, workdir=None) -> ExecutionResult:
        self._approve("execute_shell", {"script_bytes": len(script.encode()), "script": script})
        return self._run_code("shell", script, timeout, environment, workdir)

    def exec_json(self, code: str, **kw):
        return json.loads(self.exec_python(code, **kw).check().stdout)

    def stream_shell(self, script: str, *, timeout=None, environment=None, workdir=None) -> Iterator[ExecutionChunk]:
        r = self.exec_shell(script, timeout=timeout, environment=environment, workdir=workdir)
        if r.stdout:
            yield ExecutionChunk("stdout", r.stdout)
        if r.stderr:
            yield ExecutionChunk("stderr", r.stderr)
        yield ExecutionChunk("status", "", exit_code=r.exit_code)

    # ---- files ------------------------------------------------------------------------------
    def write_file(self, path: str, content: Union[str, bytes], *, encoding: str = "utf-8"):
        rel = _check_rel(path)
        data = content.encode(encoding or "utf-8") if isinstance(content, str) else bytes(content)
        self._approve("write_file", {"path": rel, "bytes": len(data)})
        self._call("write_file", {"path": rel, "content": base64.b64encode(data).decode(), "encoding": "base64"})
        self._emit(EventType.FILE, {"op": "write", "path": rel, "bytes": len(data)})

    def read_file(self, path: str, *, encoding: Optional[str] = "utf-8"):
        rel = _check_rel(path)
        self._approve("read_file", {"path": rel})
        out = self._call("read_file", {"path": rel, "encoding": "base64"})
        data = base64.b64decode(out["content"]) if out.get("encoding") == "base64" else out["content"].encode()
        if len(data) > self._policy.max_file_read_bytes:
            raise FileAccessError("%s: %d bytes, over max_file_read_bytes" % (rel, len(data)))
        self._emit(EventType.FILE, {"op": "read", "path": rel, "bytes": len(data)})
        return data if encoding is None else data.decode(encoding)

    def upload_file(self, source: str, destination: Optional[str] = None):
        with open(source, "rb") as f:
            self.write_file(destination or os.path.basename(source), f.read())

    def download_file(self, source: str, destination: str):
        data = self.read_file(source, encoding=None)
        tmp = destination + ".part"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, destination)

    def artifacts(self, pattern: str = "**/*"):
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise ValueError("artifact pattern %r escapes the workspace" % pattern)
        out = self._call("artifacts", {"globs": [pattern]})
        return tuple(Artifact(a["path"], a.get("size", 0), a.get("sha256"))
                     for a in out.get("artifacts", []) if a.get("type", "file") == "file")

    # ---- snapshot, restore, fork ------------------------------------------------------------
    def snapshot(self, destination: str) -> SnapshotMetadata:
        self._approve("snapshot", {"destination": destination})
        out = self._call("snapshot", {})
        meta = SnapshotMetadata(destination, out.get("size", 0), out["snapshot"], time.time())
        ref = {"agentnest_snapshot": out["snapshot"], "size": meta.size, "sandbox": self._id,
               "server": self._client.url, "created_at": meta.created_at}
        tmp = destination + ".part"
        with open(tmp, "w") as f:
            json.dump(ref, f)
        os.replace(tmp, destination)
        self._emit(EventType.SNAPSHOT, {"sha256": meta.sha256})
        return meta

    def restore(self, source: str):
        self._approve("restore", {"source": source})
        with open(source) as f:
            try:
                ref = json.load(f)
            except ValueError:
                raise FileAccessError("%s is not a snapshot reference written by snapshot()" % source) from None
        self._call("restore", {"snapshot": ref["agentnest_snapshot"]})
        self._emit(EventType.RESTORE, {"sha256": ref["agentnest_snapshot"]})

    def fork(self) -> "Sandbox":
        self._approve("fork", {})
        out = self._call("fork", {})
        sb = Sandbox.__new__(Sandbox)
        sb.__dict__.update(self.__dict__)
        sb._id, sb._destroyed, sb._created = out["id"], False, time.monotonic()
        self._emit(EventType.FORK, {"child": out["id"]})
        return sb

    def python_session(self):
        from .session import PythonSession

        if getattr(self, "_session", None) is None or self._session.closed:
            self._session = PythonSession(self)
        return self._session

    def logs(self) -> str:
        out = self._call("events", {})
        return "\n".join(json.dumps(e, sort_keys=True) for e in out.get("events", []))

    def destroy(self):
        if self._destroyed:
            return
        try:
            self._client.call("destroy", {"sandbox": self._id})
        except SandboxDestroyedError:
            pass
        self._destroyed = True
        self._emit(EventType.DESTROYED, {})

    def as_tool(self, name: str = "run_python"):
        """A framework-neutral tool description: {"name", "description", "parameters" (JSON
        Schema), "callable"} running Python in this sandbox and returning its output as text."""

        def run(code: str) -> str:
            r = self.exec_python(code)
            return r.stdout + (r.stderr if not r.ok else "")

        return {"name": name, "description": "Run Python code in an isolated AgentNest sandbox; returns stdout.",
                "parameters": {"type": "object", "required": ["code"],
                               "properties": {"code": {"type": "string", "description": "Python source"}}},
                "callable": run}
