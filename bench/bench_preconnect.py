"""Time to the first request over a network with round-trip time (never run by the test suite).

    python bench/bench_preconnect.py [--src A --src B] [--rtt-ms 60] [--rounds 7]

A real `codeloop -p` subprocess talks https to the fake API through a loopback proxy that holds
every chunk for half the round-trip time in each direction, so the TLS handshake and the request
cost what they would over a real network (the TCP handshake itself, made by the kernel, does
not). Reports the median from process start to the request reaching the server, per checkout,
rounds interleaved. The trusted CAs are certifi's bundle plus the test certificate (the
context then costs what it costs against the real API). The proxy cannot delay the TCP
handshake (the kernel makes it) nor DNS (an address is used), so those real-network savings of a
preconnect do not show here. Needs `openssl` for a test certificate.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fakeapi import ScriptedAPI, sse, text  # noqa: E402


class DelayProxy:
    """Forwards TCP to `target`, each chunk delivered `delay_s` after it arrived (order kept)."""

    def __init__(self, target: tuple[str, int], delay_s: float) -> None:
        self.target, self.delay_s = target, delay_s
        self.loop = asyncio.new_event_loop()
        self.port = 0
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait()

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue = asyncio.Queue()

        async def deliver() -> None:
            while (item := await queue.get()) is not None:
                due, data = item
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                writer.write(data)
                await writer.drain()
            writer.close()

        task = asyncio.ensure_future(deliver())
        while data := await reader.read(65536):
            queue.put_nowait((time.monotonic() + self.delay_s, data))
        queue.put_nowait(None)
        await task

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer), return_exceptions=True)


def one(src: Path, url: str, cert: str, home: str, arrivals: list[float]) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_", "CLAUDE_", "SSL_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update({"ANTHROPIC_API_KEY": "bench", "ANTHROPIC_BASE_URL": url, "SSL_CERT_FILE": cert,
                "CODELOOP_CONFIG_DIR": home, "HOME": home, "PYTHONPATH": str(src / "src")})
    arrivals.clear()
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "codeloop", "-p", "go", "--no-session-persistence"], cwd=home, env=env,
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or not arrivals:
        raise RuntimeError(f"{src}: run failed: {r.stderr[-1000:]}")
    return (arrivals[0] - t0) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", action="append", type=Path, help="checkout to measure (repeatable)")
    ap.add_argument("--rtt-ms", type=float, default=60.0)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    srcs = args.src or [ROOT]
    arrivals: list[float] = []

    def respond(req, _):
        arrivals.append(time.perf_counter())
        return sse(text("ok"))

    with tempfile.TemporaryDirectory() as tmp:
        cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                        "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert],
                       check=True, capture_output=True)
        # the trusted CAs a real client loads: certifi's bundle (what codeloop uses by default), plus
        # the test certificate, so the TLS context costs what it costs against the real API
        import certifi

        bundle = os.path.join(tmp, "bundle.pem")
        Path(bundle).write_text(Path(certifi.where()).read_text() + "\n" + Path(cert).read_text())
        api = ScriptedAPI(*[lambda r, i=i: respond(r, i) for i in range((args.rounds + 1) * len(srcs))])
        with api.serve(tls=(cert, key)) as url:
            port = int(url.rsplit(":", 1)[1])
            proxy = DelayProxy(("127.0.0.1", port), args.rtt_ms / 2000)
            purl = f"https://127.0.0.1:{proxy.port}"
            results: dict[Path, list[float]] = {s: [] for s in srcs}
            homes = {s: tempfile.mkdtemp(dir=tmp) for s in srcs}
            for s in srcs:
                one(s, purl, bundle, homes[s], arrivals)   # warm caches
            for _ in range(args.rounds):
                for s in srcs:
                    results[s].append(one(s, purl, bundle, homes[s], arrivals))
    print(f"start -> first request reaches the server, https, RTT {args.rtt_ms:g} ms (median of {args.rounds})")
    for s in srcs:
        print(f"  {s}: {statistics.median(results[s]):7.1f} ms   (runs: {', '.join(f'{x:.0f}' for x in results[s])})")


if __name__ == "__main__":
    main()
