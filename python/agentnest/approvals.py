"""Approval hooks of the AgentNest 0.3 API, checked by the client before each operation
(the runtime's own --approve-with hooks, on the host, are checked by the server too)."""

import dataclasses

from .types import WORKSPACE_OPS, str_enum

Action = str_enum("Action", __name__, "execute", "execute_python", "execute_shell", "write_file", "read_file",
                  *WORKSPACE_OPS)
Action.__doc__ = "What an ApprovalRequest asks to do."


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
