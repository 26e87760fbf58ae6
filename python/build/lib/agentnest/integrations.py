"""Agent-framework glue: SandboxRunner (framework-neutral), and when the frameworks are
importable, build_langchain_tool and a smolagents-style SandboxExecutor."""

from .sandbox import Sandbox


class SandboxRunner:
    def __init__(self, runtime="python:3.12-slim", *, timeout=300, network_enabled=False,
                 security_policy=None, stateful=True, **kw):
        self._sb = Sandbox(runtime, timeout, network_enabled=network_enabled,
                           security_policy=security_policy, **kw)
        self._session = None
        if stateful:
            from .errors import UnsupportedCapabilityError

            try:
                self._session = self._sb.python_session()
            except UnsupportedCapabilityError:
                self._session = None

    @property
    def sandbox(self):
        return self._sb

    def run(self, code: str) -> str:
        if self._session is not None:
            r = self._session.run(code)
            parts = [r.stdout, r.stderr]
            if r.result is not None:
                parts.append(r.result)
            if r.error:
                parts.append(r.error)
            return "".join(p if p.endswith("\n") or not p else p + "\n" for p in parts if p)
        r = self._sb.exec_python(code)
        return r.stdout + r.stderr

    def close(self):
        self._sb.destroy()


class SandboxExecutor:
    """smolagents-style executor: __call__(code) -> (output, logs, is_final_answer)."""

    def __init__(self, runner=None, **kw):
        self._runner = runner or SandboxRunner(**kw)

    def __call__(self, code):
        out = self._runner.run(code)
        return out, out, False

    def send_variables(self, variables: dict):
        import json

        self._runner.run("globals().update(%s)" % json.dumps(variables))

    def send_tools(self, tools):
        return None

    def cleanup(self):
        self._runner.close()


def build_langchain_tool(runner=None, **kw):
    from langchain_core.tools import Tool  # optional dependency

    runner = runner or SandboxRunner(**kw)
    return Tool(name="agentnest_python", func=runner.run,
                description="Run Python code in an isolated AgentNest sandbox and return its output.")
