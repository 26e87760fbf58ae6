# 0.3 API: SecurityPolicy(allowed_images=..., require_image_digest=...), NetworkPolicy validation
from agentnest import Sandbox, SecurityPolicy, NetworkPolicy, PolicyDeniedError

try:
    Sandbox("busybox", security_policy=SecurityPolicy(allowed_images=("python:3.12-slim",)))
    raise SystemExit("image outside allowed_images accepted")
except PolicyDeniedError:
    pass
try:
    Sandbox(security_policy=SecurityPolicy(require_image_digest=True))
    raise SystemExit("image without digest accepted")
except PolicyDeniedError:
    pass
for bad in (lambda: NetworkPolicy.allowlist(), lambda: NetworkPolicy("none", domains=("a.example",))):
    try:
        bad()
        raise SystemExit("bad NetworkPolicy accepted")
    except ValueError:
        pass
with Sandbox(security_policy=SecurityPolicy(allowed_images=("python:3.12-slim",))) as sb:
    assert sb.exec(["true"]).ok
# an egress allowlist reaches the server as create's "network"/"allow" (it was refused as
# unsupported before the server took them)
with Sandbox(security_policy=SecurityPolicy(network=NetworkPolicy.allowlist(cidrs=("192.0.2.0/24:443",)))) as sb:
    assert sb.exec(["true"]).ok
print("ok")
