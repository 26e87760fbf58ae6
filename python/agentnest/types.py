"""Data objects of the AgentNest 0.3 API: results, chunks, metadata, limits, secrets, events."""

import dataclasses
import enum
import time
from typing import Any, Optional, Tuple

from .errors import ExecutionError


class Secret:
    """A secret value: given to the sandbox as an environment variable, redacted as
    [REDACTED] in every captured output by the runtime, never shown by str()/repr()."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        if not isinstance(value, str) or not value:
            raise ValueError("Secret needs a non-empty string")
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __str__(self):
        return "[REDACTED]"

    def __repr__(self):
        return "Secret('[REDACTED]')"


@dataclasses.dataclass(frozen=True)
class ResourceLimits:
    memory: str = "512m"
    cpus: float = 1.0
    pids: int = 256
    gpus: int = 0


@dataclasses.dataclass(frozen=True)
class ExecutionResult:
    command: Tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str
    duration: float
    timed_out: bool = False
    oom_killed: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def check(self) -> "ExecutionResult":
        if not self.ok:
            detail = self.stderr.strip() or self.stdout.strip() or "no output"
            raise ExecutionError("command exited with status %d: %s" % (self.exit_code, detail), self)
        return self


@dataclasses.dataclass(frozen=True)
class ExecutionChunk:
    stream: str  # "stdout" | "stderr" | "status"
    data: str = ""
    timestamp: float = dataclasses.field(default_factory=time.time)
    exit_code: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class SessionResult:
    stdout: str
    stderr: str
    result: Optional[str] = None  # repr of a final expression
    error: Optional[str] = None  # the traceback text
    value: Any = None  # JSON form of the final expression, when it has one (new)
    error_type: Optional[str] = None  # structured error (new): type, message
    error_message: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def check(self) -> "SessionResult":
        if self.error is not None:
            lines = [l for l in self.error.strip().splitlines() if l.strip()]
            raise ExecutionError(lines[-1] if lines else "session call failed")
        return self


@dataclasses.dataclass(frozen=True)
class SnapshotMetadata:
    path: str
    size: int
    sha256: str
    created_at: float


@dataclasses.dataclass(frozen=True)
class Artifact:
    path: str
    size: int
    sha256: Optional[str]


def str_enum(name: str, module: str, *values: str):
    """A str-valued enum.Enum class `name` of `module` with one member per value, named as the
    value in upper case (EventType.FORK == "fork"); the same as `class name(str, enum.Enum)`
    with NAME = "name" lines."""
    return enum.Enum(name, [(v.upper(), v) for v in values], type=str, module=module, qualname=name)


# The workspace operations, both an approval Action and an EventType.
WORKSPACE_OPS = ("snapshot", "restore", "fork")

EventType = str_enum("EventType", __name__, "created", "exec", "file", *WORKSPACE_OPS, "destroyed", "expired", "other")
EventType.__doc__ = "What a SandboxEvent reports."


@dataclasses.dataclass(frozen=True)
class SandboxEvent:
    type: EventType
    sandbox_id: str
    details: dict
    timestamp: float = dataclasses.field(default_factory=time.time)


class MemoryObserver:
    """Keeps every SandboxEvent in .events."""

    def __init__(self):
        self.events = []

    def __call__(self, event: SandboxEvent):
        self.events.append(event)


class JsonLogObserver:
    """Writes each SandboxEvent as one JSON line to a file object (secret values never appear:
    the client only reports names)."""

    def __init__(self, stream):
        self.stream = stream

    def __call__(self, event: SandboxEvent):
        import json

        self.stream.write(json.dumps({"type": event.type.value, "sandbox": event.sandbox_id,
                                      "time": event.timestamp, "details": event.details}) + "\n")
        self.stream.flush()
