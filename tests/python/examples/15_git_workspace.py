# 0.3 API: GitWorkspace(sandbox): clone (here a repo made in the sandbox), status, diff, apply_patch
from agentnest import Sandbox
from agentnest.git import GitWorkspace

with Sandbox("debian", timeout=120) as sb:
    sb.exec_shell("command -v git").check()
    sb.exec_shell("git init -q /workspace/origin && cd /workspace/origin && echo one > f && "
                  "git -c user.email=t@example.com -c user.name=t add f && "
                  "git -c user.email=t@example.com -c user.name=t commit -qm init").check()
    g = GitWorkspace(sb, "/workspace/repo")
    g.clone("file:///workspace/origin", depth=0)
    sb.write_file("repo/f", "two\n")
    assert "M f" in g.status()
    patch = g.diff()
    assert "-one" in patch and "+two" in patch
    sb.exec_shell("cd /workspace/repo && git checkout -q -- f").check()
    g.apply_patch(patch)
    assert sb.read_file("repo/f") == "two\n"
print("ok")
