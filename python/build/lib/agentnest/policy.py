"""Policies of the AgentNest 0.3 API: NetworkMode, NetworkPolicy, SecurityPolicy."""

import dataclasses
import enum
from typing import Optional, Tuple


class NetworkMode(str, enum.Enum):
    DENY = "none"
    ALLOW = "full"
    ALLOWLIST = "allowlist"


@dataclasses.dataclass(frozen=True)
class NetworkPolicy:
    mode: NetworkMode = NetworkMode.DENY
    domains: Tuple[str, ...] = ()
    cidrs: Tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "mode", NetworkMode(self.mode))
        object.__setattr__(self, "domains", tuple(self.domains))
        object.__setattr__(self, "cidrs", tuple(self.cidrs))
        if self.mode == NetworkMode.ALLOWLIST and not (self.domains or self.cidrs):
            raise ValueError("an allowlist needs at least one domain or CIDR")
        if self.mode != NetworkMode.ALLOWLIST and (self.domains or self.cidrs):
            raise ValueError("domains and CIDRs are only for NetworkMode.ALLOWLIST")

    @classmethod
    def denied(cls):
        return cls(NetworkMode.DENY)

    @classmethod
    def allowed(cls):
        return cls(NetworkMode.ALLOW)

    @classmethod
    def allowlist(cls, domains=(), cidrs=()):
        return cls(NetworkMode.ALLOWLIST, tuple(domains), tuple(cidrs))

    def entries(self):
        """The runtime's --allow entries (NAME[:PORTS], *.ZONE, CIDR[:PORTS])."""
        return list(self.domains) + list(self.cidrs)


@dataclasses.dataclass(frozen=True)
class SecurityPolicy:
    network: NetworkPolicy = dataclasses.field(default_factory=NetworkPolicy.denied)
    max_output_bytes: int = 10 * 1024 * 1024
    max_file_read_bytes: int = 64 * 1024 * 1024
    allowed_images: Tuple[str, ...] = ()
    require_image_digest: bool = False
    seccomp_profile: Optional[str] = None

    def check_image(self, image: str):
        from .errors import PolicyDeniedError

        if self.allowed_images and image not in self.allowed_images:
            raise PolicyDeniedError("image %r is not in the policy's allowed_images" % image)
        if self.require_image_digest and "@sha256:" not in image:
            raise PolicyDeniedError("image %r: the policy requires an @sha256: digest" % image)
        if self.max_file_read_bytes <= 0:
            raise ValueError("max_file_read_bytes must be positive")
