# 0.3 API: Sandbox as a context manager, exec (argv), ExecutionResult.ok/.check()
from agentnest import Sandbox, ExecutionError

with Sandbox("python:3.12-slim", timeout=120) as sb:
    r = sb.exec(["echo", "hello"])
    assert r.ok and r.stdout == "hello\n", r
    bad = sb.exec(["sh", "-c", "echo oops >&2; exit 3"])
    assert bad.exit_code == 3 and not bad.ok
    try:
        bad.check()
        raise SystemExit("check() did not raise")
    except ExecutionError as e:
        assert "status 3" in str(e) and "oops" in str(e), e
print("ok")
