# 0.3 API: artifacts(pattern) -> Artifact(path, size, sha256)
import hashlib
from agentnest import Sandbox

with Sandbox() as sb:
    sb.exec_shell("mkdir -p out && printf abc > out/r.csv && echo x > other.txt").check()
    arts = sb.artifacts("**/*.csv")
    assert [a.path for a in arts] == ["out/r.csv"], arts
    assert arts[0].size == 3 and arts[0].sha256 == hashlib.sha256(b"abc").hexdigest()
print("ok")
