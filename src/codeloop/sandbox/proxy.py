"""Network for the sandbox when domains are allowed: a filtering proxy and the bridge to it.

Owns `DomainProxy` (host side) and `BRIDGE_CODE` (sandbox side). The sandbox has no network
device but loopback. Inside it, a tiny Python forwarder listens on 127.0.0.1:PORT; for each
connection it asks the host, over a socketpair end bwrap passes in (a descriptor, no socket
file), for a connected socket to `DomainProxy` and relays the bytes. The forwarder never creates
a Unix socket itself, so the seccomp filter that refuses them (`seccomp.py`) covers everything
in the sandbox, forwarder and bwrap's own init included. `DomainProxy` answers as an HTTP proxy:
`CONNECT host:port` (HTTPS and anything tunnelled) and plain `GET http://host/…`, each only when
the host is on the allowlist (`example.com` exactly, `*.example.com` its subdomains); anything
else gets `403`. Commands reach it through `HTTP(S)_PROXY`/`http(s)_proxy`, which curl, pip,
git, npm and Python's urllib honour; a program that ignores the proxy variables has no route out
at all (fail closed).
"""

from __future__ import annotations

import socket
import threading

_HEAD_LIMIT = 16384
BRIDGE_PORT = 3128

# Runs inside the sandbox as `python3 -c BRIDGE_CODE FD PORT cmd…`: forks the forwarder (its
# output detached so it never holds the Bash tool's pipes), closes FD, then execs the command.
# Per connection the forwarder writes one byte on FD and receives one connected socket back
# (SCM_RIGHTS). The PID namespace ends the forwarder when the command's sandbox goes away.
BRIDGE_CODE = r"""
import os, socket, sys, threading
fd, port, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port)); srv.listen(64)
if os.fork() == 0:
    null = os.open(os.devnull, os.O_RDWR)
    for n in (0, 1, 2): os.dup2(null, n)
    ctl, lock = socket.socket(fileno=fd), threading.Lock()
    def pump(a, b):
        try:
            while (d := a.recv(65536)): b.sendall(d)
        except OSError: pass
        for s in (a, b):
            try: s.shutdown(socket.SHUT_RDWR)
            except OSError: pass
    def serve(c):
        try:
            with lock:
                ctl.sendall(b"c"); _, fds, _, _ = socket.recv_fds(ctl, 1, 1)
            u = socket.socket(fileno=fds[0])
        except (OSError, IndexError): c.close(); return
        threading.Thread(target=pump, args=(c, u), daemon=True).start(); pump(u, c)
    while True:
        c, _ = srv.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
os.close(fd); srv.close()
os.execvp(argv[0], argv)
"""


def host_allowed(host: str, domains: tuple[str, ...]) -> bool:
    host = host.strip().lower().rstrip(".")
    if not host:
        return False
    for d in domains:
        d = d.strip().lower().rstrip(".")
        if d.startswith("*."):
            if host.endswith(d[1:]) and host != d[2:]:
                return True
        elif host == d:
            return True
    return False


def _split_host(authority: str, default_port: int) -> tuple[str, int] | None:
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = authority.rpartition(":") if ":" in authority else (authority, "", "")
    try:
        return host, int(port) if port else default_port
    except ValueError:
        return None


class DomainProxy:
    """An HTTP proxy that only connects to allowed hosts, reached through per-call channels
    (thread per connection)."""

    def __init__(self, domains: tuple[str, ...]):
        self.domains = domains

    def channel(self) -> tuple[socket.socket, socket.socket]:
        """(host end, sandbox end) of one call's channel. The caller passes the sandbox end's
        descriptor to bwrap and, when the call ends, closes it and shuts the host end down (the
        serving thread owns the host end and closes it: closing a socket another thread is
        blocked on would neither wake it nor keep its descriptor number from being reused)."""
        host, inside = socket.socketpair()
        threading.Thread(target=self._hand_out, args=(host,), daemon=True, name="codeloop-sandbox-proxy").start()
        return host, inside

    def _hand_out(self, ctl: socket.socket) -> None:
        """One connected socket to the proxy for each byte the forwarder sends."""
        try:
            while ctl.recv(1):
                mine, theirs = socket.socketpair()
                try:
                    socket.send_fds(ctl, [b"c"], [theirs.fileno()])
                except OSError:
                    mine.close()
                    return
                finally:
                    theirs.close()
                threading.Thread(target=self._serve, args=(mine,), daemon=True).start()
        except OSError:
            pass
        finally:
            ctl.close()

    def _serve(self, conn: socket.socket) -> None:
        try:
            head = b""
            while b"\r\n\r\n" not in head and len(head) < _HEAD_LIMIT:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            line, _, rest = head.partition(b"\r\n")
            parts = line.decode("latin-1").split()
            if len(parts) != 3:
                return self._refuse(conn, "400 Bad Request", "not an HTTP proxy request")
            method, target, version = parts
            if method == "CONNECT":
                where = _split_host(target, 443)
            elif target.startswith("http://"):
                authority, _, path = target[7:].partition("/")
                where = _split_host(authority, 80)
            else:
                return self._refuse(conn, "400 Bad Request", "only CONNECT and http:// requests are proxied")
            if where is None or not host_allowed(where[0], self.domains):
                host = where[0] if where else target
                return self._refuse(conn, "403 Forbidden", f"{host} is not in sandbox.network.allowedDomains")
            upstream = socket.create_connection(where, timeout=30)
            upstream.settimeout(None)
            if method == "CONNECT":
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                _, _, early = head.partition(b"\r\n\r\n")
                if early:
                    upstream.sendall(early)
            else:
                upstream.sendall(f"{method} /{path} {version}\r\n".encode("latin-1") + rest)
            t = threading.Thread(target=_pump, args=(conn, upstream), daemon=True)
            t.start()
            _pump(upstream, conn)
            t.join(timeout=5)
        except OSError:
            pass
        finally:
            conn.close()

    @staticmethod
    def _refuse(conn: socket.socket, status: str, why: str) -> None:
        body = f"codeloop sandbox: {why}\n".encode()
        conn.sendall(f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                     + body)


def _pump(a: socket.socket, b: socket.socket) -> None:
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def proxy_env(port: int = BRIDGE_PORT) -> dict[str, str]:
    url = f"http://127.0.0.1:{port}"
    return {"HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
            "NO_PROXY": "", "no_proxy": ""}
