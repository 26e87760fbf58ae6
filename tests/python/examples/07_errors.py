# 0.3 API: ExecutionTimeoutError (the sandbox lives on), SandboxDestroyedError, ValueError
from agentnest import Sandbox, ExecutionTimeoutError, SandboxDestroyedError

sb = Sandbox(timeout=120)
try:
    sb.exec(["sleep", "30"], timeout=1)
    raise SystemExit("no timeout")
except ExecutionTimeoutError:
    pass
assert sb.exec(["true"]).ok  # still alive
for bad in ([], "echo"):
    try:
        sb.exec(bad)
        raise SystemExit("exec(%r) accepted" % (bad,))
    except ValueError:
        pass
sb.destroy()
sb.destroy()  # idempotent
assert sb.destroyed
try:
    sb.exec(["true"])
    raise SystemExit("exec after destroy")
except SandboxDestroyedError:
    pass
try:
    Sandbox(workdir="/etc")
    raise SystemExit("workdir /etc accepted")
except ValueError:
    pass
print("ok")
