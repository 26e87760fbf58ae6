"""Approval hooks of the AgentNest 0.3 API, checked by the client before each operation
(the runtime's own --approve-with hooks, on the host, are checked by the server too)."""

import dataclasses
import enum


class Action(str, enum.Enum):
    EXECUTE = "execute"
    EXECUTE_PYTHON = "execute_python"
    EXECUTE_SHELL = "execute_shell"
    WRITE_FILE = "write_file"
    READ_FILE = "read_file"
    SNAPSHOT = "snapshot"
    RESTORE = "restore"
    FORK = "fork"


@dataclasses.dataclass(frozen=True)
class ApprovalRequest:
    action: Action
    sandbox_id: str
    details: dict


class ApprovalHook:
    def approve(self, request: ApprovalRequest) -> bool:  # pragma: no cover - interface
        raise NotImplementedError


class AllowAll(ApprovalHook):
    def approve(self, request):
        return True


class DenyAll(ApprovalHook):
    def approve(self, request):
        return False
