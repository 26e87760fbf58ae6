# 0.3 API: Secret in environment, redacted in captured output (ours: [REDACTED:NAME])
from agentnest import Sandbox, Secret

token = Secret("s3cr3t-value-123")
assert "s3cr3t" not in str(token) and "s3cr3t" not in repr(token)
with Sandbox(environment={"API_TOKEN": token, "PLAIN": "visible"}) as sb:
    r = sb.exec_shell('echo "$API_TOKEN $PLAIN"')
    assert "s3cr3t-value-123" not in r.stdout and "[REDACTED" in r.stdout and "visible" in r.stdout, r.stdout
print("ok")
