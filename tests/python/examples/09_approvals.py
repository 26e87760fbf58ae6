# 0.3 API: approval hooks: DenyAll, a custom hook, PolicyDeniedError before anything runs
from agentnest import Sandbox, PolicyDeniedError
from agentnest.approvals import Action, ApprovalHook, DenyAll

class NoShell(ApprovalHook):
    def __init__(self):
        self.seen = []

    def approve(self, request):
        self.seen.append(request.action)
        return request.action != Action.EXECUTE_SHELL

hook = NoShell()
with Sandbox(approval_hook=hook) as sb:
    assert sb.exec_python("print(1)").ok
    try:
        sb.exec_shell("touch /workspace/x")
        raise SystemExit("shell was not denied")
    except PolicyDeniedError as e:
        assert "execute_shell" in str(e)
    assert sb.exec(["ls", "/workspace"]).stdout == ""  # nothing ran
    assert hook.seen == [Action.EXECUTE_PYTHON, Action.EXECUTE_SHELL, Action.EXECUTE]
with Sandbox(approval_hook=DenyAll()) as sb:
    try:
        sb.write_file("a", "b")
        raise SystemExit("write was not denied")
    except PolicyDeniedError:
        pass
print("ok")
