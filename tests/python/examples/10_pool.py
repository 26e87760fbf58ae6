# 0.3 API: SandboxPool(factory, size) acquire/release/close; a released sandbox is never reused
from agentnest import Sandbox, SandboxPool, PoolExhaustedError

pool = SandboxPool(lambda: Sandbox(timeout=120), size=2)
a = pool.acquire()
a.write_file("mine.txt", "a's data")
pool.release(a)
b = pool.acquire(timeout=60)
assert b.id != a.id and a.destroyed
assert b.exec(["ls", "/workspace"]).stdout == ""  # fresh workspace
pool.release(b)
pool.close()
try:
    pool.acquire(timeout=1)
    raise SystemExit("closed pool handed out a sandbox")
except PoolExhaustedError:
    pass
try:
    SandboxPool(lambda: None, size=1, max_uses=25)
    raise SystemExit("max_uses=25 accepted")
except ValueError:
    pass
print("ok")
