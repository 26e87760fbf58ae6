# 0.3 API: stream_shell yields stdout/stderr chunks, then one status chunk
from agentnest import Sandbox

with Sandbox() as sb:
    chunks = list(sb.stream_shell("echo out; echo err >&2; exit 4"))
    assert chunks[-1].stream == "status" and chunks[-1].exit_code == 4, chunks
    assert "".join(c.data for c in chunks if c.stream == "stdout") == "out\n"
    assert "".join(c.data for c in chunks if c.stream == "stderr") == "err\n"
print("ok")
