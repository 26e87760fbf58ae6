# 0.3 API: AsyncSandbox.create, async with, awaitable methods, async stream_shell
import asyncio
from agentnest import AsyncSandbox

async def main():
    async with await AsyncSandbox.create(timeout=120) as sb:
        r = await sb.exec_python("print('async')")
        assert r.stdout == "async\n"
        await sb.write_file("f.txt", "x")
        assert await sb.read_file("f.txt") == "x"
        assert (await sb.exec(["echo", "new in ours"])).stdout == "new in ours\n"
        chunks = [c async for c in sb.stream_shell("echo s")]
        assert chunks[-1].exit_code == 0
        child = await sb.fork()
        await child.destroy()

asyncio.run(main())
print("ok")
