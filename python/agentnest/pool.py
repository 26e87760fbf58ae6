"""SandboxPool: sandboxes made ahead by a factory, each handed out ONCE.

0.3 reused a sandbox up to max_uses=25 times, leaking files, processes and variables between
users; here a released sandbox is destroyed and replaced, so only max_uses=1 is accepted."""

import queue
import threading

from .errors import PoolExhaustedError

_CLOSED = object()  # put by close(): wakes an acquire() waiting on the empty pool


class SandboxPool:
    def __init__(self, factory, *, size: int = 2, max_uses: int = 1):
        if max_uses != 1:
            raise ValueError("max_uses must be 1: a pooled sandbox is never reused (state would leak)")
        if size < 1:
            raise ValueError("size must be at least 1")
        self._factory, self._size = factory, size
        self._ready = queue.Queue()
        self._closed = False
        self._lock = threading.Lock()
        self._out = set()
        self._refills = []  # threads making replacements; close() waits for them
        for _ in range(size):
            self._ready.put(factory())

    def _refill(self):
        try:
            sb = self._factory()
        except Exception:  # the next acquire() makes one itself
            return
        with self._lock:
            if self._closed:
                sb.destroy()
                return
        self._ready.put(sb)

    def acquire(self, timeout=None):
        if self._closed:
            raise PoolExhaustedError("pool is closed")
        try:
            sb = self._ready.get(timeout=timeout) if timeout is not None else self._ready.get()
        except queue.Empty:
            raise PoolExhaustedError("no sandbox ready within %ss" % timeout) from None
        if sb is _CLOSED:
            self._ready.put(_CLOSED)  # for the next one waiting
            raise PoolExhaustedError("pool is closed")
        with self._lock:
            if self._closed:  # close() ran while this get() took it: close() did not see it handed out
                closed = True
            else:
                closed = False
                self._out.add(sb)
                t = threading.Thread(target=self._refill, daemon=True)
                self._refills = [r for r in self._refills if r.is_alive()] + [t]
                t.start()
        if closed:
            sb.destroy()
            raise PoolExhaustedError("pool is closed")
        return sb

    def release(self, sb):
        with self._lock:
            self._out.discard(sb)
        sb.destroy()

    def close(self):
        """Destroy every sandbox of the pool, handed out or not, and those still being made.

        Waits for the replacements being made: a program that exits right after close() would
        otherwise end a refill thread between the server's create and its destroy, and leave
        that sandbox running until its timeout."""
        with self._lock:
            self._closed = True
            out = list(self._out)
            refills = list(self._refills)
        for t in refills:  # each destroys what it made, since _closed is set
            t.join()
        while True:
            try:
                sb = self._ready.get_nowait()
            except queue.Empty:
                break
            if sb is not _CLOSED:
                sb.destroy()
        self._ready.put(_CLOSED)
        for sb in out:
            sb.destroy()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
