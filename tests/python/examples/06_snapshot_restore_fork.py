# 0.3 API: snapshot(destination) -> SnapshotMetadata, restore(source), fork()
import os, tempfile
from agentnest import Sandbox

with Sandbox() as sb, tempfile.TemporaryDirectory() as d:
    sb.write_file("state.txt", "one")
    meta = sb.snapshot(os.path.join(d, "snap"))
    assert meta.size > 0 and len(meta.sha256) == 64
    sb.write_file("state.txt", "two")
    sb.restore(os.path.join(d, "snap"))
    assert sb.read_file("state.txt") == "one"
    child = sb.fork()
    try:
        assert child.id != sb.id and child.read_file("state.txt") == "one"
        child.write_file("state.txt", "child")
        assert sb.read_file("state.txt") == "one"
    finally:
        child.destroy()
print("ok")
