# 0.3 API: write_file, read_file (text and bytes), upload_file, download_file; path safety
import os, tempfile
from agentnest import Sandbox

with Sandbox() as sb, tempfile.TemporaryDirectory() as d:
    sb.write_file("notes/a.txt", "héllo")
    assert sb.read_file("notes/a.txt") == "héllo"
    sb.write_file("b.bin", b"\x00\xff\x01")
    assert sb.read_file("b.bin", encoding=None) == b"\x00\xff\x01"
    src = os.path.join(d, "up.txt")
    with open(src, "w") as f:
        f.write("uploaded\n")
    sb.upload_file(src, "up.txt")
    assert sb.exec(["cat", "up.txt"]).stdout == "uploaded\n"
    sb.download_file("notes/a.txt", os.path.join(d, "down.txt"))
    assert open(os.path.join(d, "down.txt"), encoding="utf-8").read() == "héllo"
    for bad in ("../etc/passwd", "/etc/passwd"):
        try:
            sb.read_file(bad)
            raise SystemExit("read_file(%r) was allowed" % bad)
        except ValueError:
            pass
print("ok")
