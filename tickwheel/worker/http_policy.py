"""Which hosts `http` tasks may call: optional allow and deny lists.

Entries are host names (`api.example.com`, or `*.example.com` for its subdomains), IP
addresses, or networks (`10.0.0.0/8`, `::1/128`). A target is allowed when the allow
list is empty or matches it, and the deny list does not. A host name is checked as
written at submission and by every address it resolves to before each call, so a name
pointing at a denied network is refused too (a DNS answer that changes between the check
and the connection is not caught: deny at the network layer as well where that matters).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass, field

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class _Rules:
    names: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()
    networks: tuple[Network, ...] = ()

    @classmethod
    def parse(cls, text: str) -> _Rules:
        names, suffixes, networks = set(), [], []
        for entry in (e.strip().lower() for e in text.split(",")):
            if not entry:
                continue
            if entry.startswith("*."):
                suffixes.append(entry[1:])
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                names.add(entry.rstrip("."))
        return cls(frozenset(names), tuple(suffixes), tuple(networks))

    def __bool__(self) -> bool:
        return bool(self.names or self.suffixes or self.networks)

    def matches_name(self, host: str) -> bool:
        return host in self.names or host.endswith(self.suffixes)

    def matches_address(self, address: str) -> bool:
        ip = ipaddress.ip_address(address)
        return any(ip in network for network in self.networks)


@dataclass(frozen=True)
class HttpPolicy:
    allow: _Rules = field(default_factory=_Rules)
    deny: _Rules = field(default_factory=_Rules)

    @classmethod
    def parse(cls, allow: str = "", deny: str = "") -> HttpPolicy:
        return cls(_Rules.parse(allow), _Rules.parse(deny))

    def refusal(self, host: str, addresses: list[str] | None = None) -> str | None:
        """Why calling `host` is not allowed, or None. Without `addresses` (at submission)
        a host name is judged by the name rules alone; networks are checked once it is
        resolved."""
        host = host.lower().rstrip(".").strip("[]")
        checked = [host] if _is_ip(host) else (addresses or [])
        undecided = addresses is None and not _is_ip(host)
        if self.deny and (
            self.deny.matches_name(host) or any(self.deny.matches_address(a) for a in checked)
        ):
            return f"{host} is on the deny list"
        allowed = self.allow.matches_name(host) or any(
            self.allow.matches_address(a) for a in checked
        )
        if self.allow and not allowed and not (undecided and self.allow.networks):
            return f"{host} is not on the allow list"
        return None

    async def refusal_resolved(self, host: str, port: int) -> str | None:
        """As `refusal`, with every address the name resolves to now."""
        if not (self.allow or self.deny) or _is_ip(host.strip("[]")):
            return self.refusal(host, [])
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        return self.refusal(host, [str(info[4][0]) for info in infos])


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True
