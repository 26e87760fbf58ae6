"""AgentNest: the Python client of the AgentNest sandbox runtime, over `agentnest serve`,
offering the AgentNest 0.3 API (Sandbox, AsyncSandbox, ...).  Standard library only."""

from .aio import AsyncSandbox
from .errors import (AgentNestError, ExecutionError, ExecutionTimeoutError, FileAccessError,
                     ImageNotFoundError, PolicyDeniedError, PoolExhaustedError, RuntimeNotAvailableError,
                     SandboxDestroyedError, UnsupportedCapabilityError)
from .policy import NetworkMode, NetworkPolicy, SecurityPolicy
from .pool import SandboxPool
from .sandbox import Sandbox
from .session import PythonSession
from .types import (Artifact, EventType, ExecutionChunk, ExecutionResult, JsonLogObserver, MemoryObserver,
                    ResourceLimits, SandboxEvent, Secret, SessionResult, SnapshotMetadata)
from ._transport import Client

__version__ = "0.4.0"
__all__ = ["Sandbox", "AsyncSandbox", "Secret", "SecurityPolicy", "NetworkPolicy", "NetworkMode",
           "ResourceLimits", "ExecutionResult", "ExecutionChunk", "SessionResult", "PythonSession",
           "SnapshotMetadata", "Artifact", "SandboxPool", "SandboxEvent", "EventType", "MemoryObserver",
           "JsonLogObserver", "Client", "AgentNestError", "RuntimeNotAvailableError", "SandboxDestroyedError",
           "ExecutionError", "ExecutionTimeoutError", "FileAccessError", "PolicyDeniedError",
           "UnsupportedCapabilityError", "PoolExhaustedError", "ImageNotFoundError"]
