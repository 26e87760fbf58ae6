"""AsyncSandbox: every Sandbox method as a coroutine (each call runs in a worker thread:
the client's HTTP calls block)."""

import asyncio
import functools

from .sandbox import Sandbox


class AsyncSandbox:
    def __init__(self, sandbox: Sandbox):
        self._sb = sandbox

    @classmethod
    async def create(cls, *args, **kw):
        return cls(await asyncio.to_thread(functools.partial(Sandbox, *args, **kw)))

    @property
    def id(self):
        return self._sb.id

    @property
    def destroyed(self):
        return self._sb.destroyed

    @property
    def config(self):
        return self._sb.config

    @property
    def sync(self) -> Sandbox:
        return self._sb

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.destroy()

    async def fork(self):
        return AsyncSandbox(await asyncio.to_thread(self._sb.fork))

    async def stream_shell(self, script, **kw):
        chunks = await asyncio.to_thread(lambda: list(self._sb.stream_shell(script, **kw)))
        for c in chunks:
            yield c

    def __getattr__(self, name):
        fn = getattr(self._sb, name)
        if not callable(fn):
            return fn

        async def call(*args, **kw):
            return await asyncio.to_thread(functools.partial(fn, *args, **kw))

        return call
