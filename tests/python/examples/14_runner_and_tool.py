# 0.3 API: SandboxRunner.run(code) -> str; ours adds Sandbox.as_tool()
from agentnest import Sandbox
from agentnest.integrations import SandboxRunner

runner = SandboxRunner(stateful=False)
try:
    assert runner.run("print('from runner')") == "from runner\n"
finally:
    runner.close()
with Sandbox() as sb:
    tool = sb.as_tool()
    assert tool["name"] and tool["parameters"]["required"] == ["code"]
    assert tool["callable"]("print(2 + 2)") == "4\n"
print("ok")
