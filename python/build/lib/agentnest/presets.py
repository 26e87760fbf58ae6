"""Presets of the AgentNest 0.3 API, on the runtime's shipped profiles."""

from .sandbox import Sandbox


def browser_sandbox(*, timeout=300, image="browser", **kw):
    kw.setdefault("memory", "2g")
    kw.setdefault("pids", 512)
    return Sandbox(image, timeout, profile="browser", **kw)


def gpu_sandbox(image="python", *, gpus=1, **kw):
    return Sandbox(image, kw.pop("timeout", 300), gpus=gpus, profile="gpu", **kw)
