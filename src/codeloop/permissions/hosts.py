"""Which host a URL really names: one spelling per address, and whether it is loopback or link-local.

Resolvers read many spellings of one IPv4 address (inet_aton's `2130706433`, `0177.0.0.1`,
`0x7f.1`, `127.1`), IPv6 spells IPv4 as `::ffff:127.0.0.1`, and IDNA maps some Unicode to ASCII
(`ｌｏｃａｌｈｏｓｔ`). `canonical_host` turns every one of them into the single spelling every
decision is taken on — WebFetch's permission rules, its preapproved hosts, whether plain http is
kept, whether a redirect stays on the site — and WebFetch connects to that same spelling, so no
alternative form reaches an address under another name. A host that looks numeric but is not a
valid address (WHATWG's "ends in a number" rule: `1.2.3.4.5`, `09.1`, `0x7g.1`) is refused rather
than handed to a resolver that might read it its own way. `ipaddress` is imported on first use.
"""

from __future__ import annotations

import enum
import re
import string
from typing import NamedTuple
from urllib.parse import SplitResult, urlsplit

_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")   # ASCII DNS names (labels; `_` occurs in the wild)
_HEX = frozenset(string.hexdigits.lower())
_OCT = frozenset("01234567")
_DEC = frozenset(string.digits)
METADATA = frozenset({"169.254.169.254", "fd00:ec2::254"})   # the cloud instance-metadata services


class HostKind(enum.Enum):
    LOOPBACK = "loopback"      # this machine: 127/8, ::1, 0.0.0.0 and :: (Linux connects them here), localhost
    LINK_LOCAL = "link-local"  # 169.254/16 and fe80::/10: the local link, where cloud metadata answers
    OTHER = "other"


def _ipv4_number(part: str) -> int | None:
    """One part of an IPv4 address as inet_aton (and WHATWG) read it: decimal, 0-octal or 0x-hex."""
    digits, base = part, 10
    if part.startswith("0x"):
        digits, base = part[2:], 16
    elif len(part) > 1 and part.startswith("0"):
        digits, base = part[1:], 8
    if not part:
        return None
    if not digits:
        return 0  # "0x" alone is zero (WHATWG)
    allowed = _HEX if base == 16 else _OCT if base == 8 else _DEC
    return int(digits, base) if set(digits) <= allowed else None


def _ends_in_number(labels: list[str]) -> bool:
    last = labels[-1]
    return bool(last) and (set(last) <= _DEC or (last.startswith("0x") and _ipv4_number(last) is not None))


def _ipv4(labels: list[str]) -> str | None:
    """WHATWG's IPv4 parser (the inet_aton forms): up to four parts, the last filling the rest."""
    if len(labels) > 4:
        return None
    numbers = [_ipv4_number(p) for p in labels]
    if any(n is None for n in numbers):
        return None
    nums = [n for n in numbers if n is not None]
    if any(n > 255 for n in nums[:-1]) or nums[-1] >= 256 ** (5 - len(nums)):
        return None
    value = nums[-1] + sum(n << (8 * (3 - i)) for i, n in enumerate(nums[:-1]))
    return ".".join(str((value >> shift) & 255) for shift in (24, 16, 8, 0))


def _ipv6(host: str) -> str | None:
    import ipaddress

    if "%" in host:
        return None  # a zone id (`fe80::1%eth0`) picks an interface; nothing a fetch should choose
    try:
        addr = ipaddress.IPv6Address(host)
    except ValueError:
        return None
    if addr.ipv4_mapped is not None:
        return str(addr.ipv4_mapped)   # `::ffff:127.0.0.1` is 127.0.0.1 on a dual-stack socket
    return addr.compressed


def canonical_host(host: str) -> str | None:
    """The one spelling of `host` (as `urlsplit().hostname` gives it, or a rule's domain): a dotted-quad
    IPv4 address, a compressed IPv6 address without brackets, or a lower-case ASCII name without a
    trailing dot. None when it is no valid host, or a numeric host that is no valid address."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        return _ipv6(host)
    if not host.isascii():
        import idna  # httpx's own IDNA library: what it would send is what we decide on

        try:
            host = idna.encode(host, uts46=True).decode("ascii")
        except (idna.IDNAError, UnicodeError, ValueError):
            return None
    labels = host.split(".")
    if len(labels) > 1 and labels[-1] == "":
        labels.pop()   # one trailing dot: the same name, fully qualified
    if not labels or "" in labels:
        return None
    if _ends_in_number(labels):
        return _ipv4(labels)
    name = ".".join(labels)
    return name if len(name) <= 253 and _NAME.fullmatch(name) else None


def is_ip(canonical: str) -> bool:
    """Is this canonical host an address (matched exactly, never as a parent domain)?"""
    return ":" in canonical or _ends_in_number(canonical.split("."))


def host_kind(canonical: str) -> HostKind:
    """Loopback, link-local or other, for a host `canonical_host` returned."""
    if not is_ip(canonical):
        return HostKind.LOOPBACK if canonical == "localhost" or canonical.endswith(".localhost") else HostKind.OTHER
    import ipaddress

    addr = ipaddress.ip_address(canonical)
    if addr.is_loopback or addr.is_unspecified or (addr.version == 4 and addr in ipaddress.ip_network("0.0.0.0/8")):
        return HostKind.LOOPBACK
    if addr.is_link_local:
        return HostKind.LINK_LOCAL
    return HostKind.OTHER


def describe(canonical: str) -> str:
    """The host for a question to the user, with what kind of place it is."""
    kind = host_kind(canonical)
    if canonical in METADATA:
        return f"{canonical} (the cloud instance-metadata address)"
    if kind is HostKind.LOOPBACK:
        return f"{canonical} (loopback: this machine)"
    if kind is HostKind.LINK_LOCAL:
        return f"{canonical} (link-local: where cloud metadata services answer)"
    return canonical


# An http(s) URL split once: the parts as written, its canonical host, its port (None: the
# default). Functional form: no annotation text for typing to compile (see shell_words.Redirect).
WebURL = NamedTuple(  # noqa: UP014 — see above
    "WebURL", [("parts", SplitResult), ("host", str), ("port", int | None)])


DEFAULT_PORTS = {"http": 80, "https": 443}


def parse_web_url(url: str) -> WebURL:
    """Split an http(s) URL and canonicalise its host; ValueError (one line, why) when it is not one
    whose host every parser reads alike: no scheme or host, credentials, a bad port, a bad host."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{url!r} does not parse ({exc})") from None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"{url!r}. Give a fully-formed http(s) URL, e.g. https://example.com/page")
    if "@" in parts.netloc:
        raise ValueError("URLs with credentials (user:password@host) are not fetched")
    host = canonical_host(parts.hostname)
    if host is None:
        raise ValueError(f"{parts.hostname!r} is not a valid host name or address")
    return WebURL(parts, host, None if port == DEFAULT_PORTS[parts.scheme] else port)


def netloc(canonical: str, port: int | None) -> str:
    """`host[:port]` for a URL, with IPv6 in brackets."""
    host = f"[{canonical}]" if ":" in canonical else canonical
    return host if port is None else f"{host}:{port}"
