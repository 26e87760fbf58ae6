"""GitWorkspace: git run INSIDE the sandbox (the host never runs git on sandbox data)."""

import shlex

_SAFE = "git -c core.fsmonitor=false -c core.hooksPath=/dev/null -c diff.external= "


class GitWorkspace:
    def __init__(self, sandbox, directory: str = "/workspace/repo"):
        if not directory.startswith("/workspace"):
            raise ValueError("directory must be under /workspace")
        self.sandbox, self.directory = sandbox, directory

    def _git(self, args, **kw):
        return self.sandbox.exec_shell("cd %s && %s%s" % (shlex.quote(self.directory), _SAFE, args), **kw).check()

    def clone(self, url: str, *, ref=None, depth=1):
        opts = "--depth %d " % depth if depth else ""
        if ref:
            opts += "--branch %s " % shlex.quote(ref)
        self.sandbox.exec_shell("%sclone %s%s %s" % (_SAFE, opts, shlex.quote(url), shlex.quote(self.directory))).check()

    def diff(self, *, staged=False) -> str:
        return self._git("diff --no-ext-diff --no-textconv --binary" + (" --staged" if staged else "")).stdout

    def status(self) -> str:
        return self._git("status --porcelain").stdout

    def apply_patch(self, patch: str):
        self.sandbox.write_file(".agentnest-patch.diff", patch)
        self._git("apply /workspace/.agentnest-patch.diff && rm -f /workspace/.agentnest-patch.diff")
