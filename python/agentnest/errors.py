"""The exception tree of the AgentNest 0.3 API, raised by this client.

AgentNestError
  RuntimeNotAvailableError   the server cannot be reached or started
  SandboxDestroyedError      the sandbox was destroyed or expired
  ImageNotFoundError         the image named is not in the server's image store
  ExecutionError             a command failed (result.check()); ExecutionTimeoutError: over its timeout
  FileAccessError            a file operation was refused (path, size, type)
  PolicyDeniedError          an approval hook or the server's policy refused the operation
  UnsupportedCapabilityError this server or host cannot do what was asked
  PoolExhaustedError         SandboxPool closed, or acquire() timed out
"""


class AgentNestError(Exception):
    """Base of every error this client raises (besides ValueError for bad arguments)."""

    def __init__(self, message, *, status=None, errno=None):
        super().__init__(message)
        self.status = status  # HTTP status from the server, if any
        self.errno = errno  # symbolic errno from the server ("ENOENT"), if any


class RuntimeNotAvailableError(AgentNestError):
    pass


class SandboxDestroyedError(AgentNestError):
    pass


class ImageNotFoundError(AgentNestError):
    """The image is not in the server's store (import it: `agentnest image import`)."""


class ExecutionError(AgentNestError):
    def __init__(self, message, result=None, **kw):
        super().__init__(message, **kw)
        self.result = result


class ExecutionTimeoutError(ExecutionError):
    pass


class FileAccessError(AgentNestError):
    pass


class PolicyDeniedError(AgentNestError):
    pass


class UnsupportedCapabilityError(AgentNestError):
    pass


class PoolExhaustedError(AgentNestError):
    pass
