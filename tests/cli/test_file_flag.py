"""`--file FILE_ID:PATH` (issue 25, item 8), the CLI as a subprocess against a loopback Files API:
bad ids and paths end in one `Error:` line before anything is fetched; a folder swapped for a
symlink during the download never lets the file land outside the working folder; the API key
never goes to another host on a redirect. Each attack sits beside the legitimate case it mirrors."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from codeloop.cli.startup.file_download import FileFlagError, fetch_content
from fakeapi import ScriptedAPI, sse, text
from test_print_mode import codeloop

Answer = tuple[int, dict[str, str], bytes]


class Routes:
    """GET answers by path (a tuple, or a callable run when the request arrives), and what came in."""

    def __init__(self) -> None:
        self.table: dict[str, Answer | Callable[[], Answer]] = {}
        self.seen: list[tuple[str, str | None, str | None]] = []   # path, x-api-key, anthropic-beta

    def __call__(self, h: BaseHTTPRequestHandler) -> None:
        self.seen.append((h.path, h.headers.get("x-api-key"), h.headers.get("anthropic-beta")))
        entry = self.table.get(h.path, (404, {}, b'{"type":"error","error":{"type":"not_found_error"}}'))
        status, headers, body = entry() if callable(entry) else entry
        h.send_response(status)
        for k, v in {**headers, "content-length": str(len(body))}.items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)

    def keys(self, path: str) -> list[str | None]:
        return [key for p, key, _ in self.seen if p == path]


def redirect(to: str) -> Answer:
    return 302, {"location": to}, b""


@contextmanager
def other_host(routes: Routes) -> Iterator[str]:
    """A second loopback server: another origin (its own port)."""
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            routes(self)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def work(tmp_path: Path) -> Path:
    cwd = tmp_path / "work"
    (cwd / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    return cwd


@pytest.fixture
def api():
    routes = Routes()
    routes.table["/v1/files/file_ok/content"] = (200, {}, b"downloaded bytes\n")
    scripted = ScriptedAPI(*(sse(text("ok")) for _ in range(4)))
    with scripted.serve(get=routes) as url:
        yield url, routes


def run(cwd: Path, url: str, *specs: str):
    return codeloop(["-p", "x", "--file", *specs], cwd=cwd, base_url=url)


def one_error_line(r) -> str:
    assert r.returncode == 1 and r.stdout == "", r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("Error: --file"), r.stderr
    return r.stderr


# -- ids and paths ------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, why", [
    ("file_ok:.", "names a directory"),
    ("file_ok:./", "names a directory"),
    ("file_ok:", "the path is empty"),
    (":x.txt", "the file id is empty"),
    ("no-separator", "expected FILE_ID:PATH"),
    ("file_ok:..", "'..' would leave"),
    ("file_ok:../escaped.txt", "'..' would leave"),
    ("file_ok:sub/../../escaped.txt", "'..' would leave"),
    ("file_ok:sub/../inside.txt", "'..' would leave"),      # fails closed: no `..` at all
    ("file_ok:sub", "is a directory"),
    ("file_ok:sub/", "names a directory"),
    ("file_ok:new/", "names a directory"),
    ("file_ok:away/escaped.txt", "leads outside the working directory"),
    ("file_ok:plain.txt/x", "is a file, not a directory"),
    ("../../v1/messages:x.txt", "is not a file id"),
    ("file?x=1:x.txt", "is not a file id"),
    ("file ok:x.txt", "is not a file id"),
])
def test_bad_specs_are_one_line_errors_before_any_download(work, api, spec, why):
    url, routes = api
    os.symlink(work.parent / "outside", work / "away")
    (work / "plain.txt").write_text("plain\n")
    err = one_error_line(run(work, url, spec))
    assert why in err and routes.seen == []
    assert sorted(p.name for p in work.parent.iterdir()) == ["outside", "work"]
    assert list((work.parent / "outside").iterdir()) == []


def test_absolute_path_is_refused(work, api):
    url, routes = api
    target = work.parent / "outside" / "abs.txt"
    assert "the path is absolute" in one_error_line(run(work, url, f"file_ok:{target}"))
    assert not target.exists() and routes.seen == []


def test_every_spec_is_checked_before_the_first_download(work, api):
    url, routes = api
    one_error_line(run(work, url, "file_ok:good.txt", "file_ok:."))
    assert routes.seen == [] and not (work / "good.txt").exists()


def test_legitimate_paths_are_written(work, api):
    url, routes = api
    os.symlink("sub", work / "linked")                     # a symlink that stays inside: followed, as Write does
    (work / "old.txt").write_text("old\n")
    r = run(work, url, "file_ok:data/deep/in.txt", "file_ok:./top.txt", "file_ok:linked/via-link.txt",
            "file_ok:old.txt")
    assert r.returncode == 0, r.stderr
    for path in ("data/deep/in.txt", "top.txt", "sub/via-link.txt", "old.txt"):
        assert (work / path).read_bytes() == b"downloaded bytes\n", path
    assert routes.keys("/v1/files/file_ok/content") == ["test-key"] * 4
    assert {beta for _, _, beta in routes.seen} == {"files-api-2025-04-14"}
    assert oct((work / "top.txt").stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_api_errors_are_one_line(work, api):
    url, _ = api
    assert "the API answered 404" in one_error_line(run(work, url, "file_nope:x.txt"))
    assert not (work / "x.txt").exists()


# -- a folder swapped for a symlink during the download --------------------------------------------
def test_folder_swapped_for_a_symlink_mid_download_writes_nothing_outside(work, api):
    url, routes = api
    outside = work.parent / "outside"

    def swap() -> Answer:   # runs while codeloop waits for the body: the folder becomes a link out
        os.rename(work / "sub", work / "sub.moved")
        os.symlink(outside, work / "sub")
        return 200, {}, b"PAYLOAD"
    routes.table["/v1/files/file_swap/content"] = swap
    err = one_error_line(run(work, url, "file_swap:sub/x.txt"))
    assert "replaced by a symlink" in err
    assert list(outside.iterdir()) == [] and list((work / "sub.moved").iterdir()) == []


def test_missing_folder_planted_as_a_symlink_mid_download_writes_nothing_outside(work, api):
    url, routes = api
    outside = work.parent / "outside"

    def plant() -> Answer:
        (work / "new").symlink_to(outside)
        return 200, {}, b"PAYLOAD"
    routes.table["/v1/files/file_plant/content"] = plant
    assert "replaced by a symlink" in one_error_line(run(work, url, "file_plant:new/deeper/x.txt"))
    assert list(outside.iterdir()) == []


def test_file_swapped_for_a_symlink_mid_download_is_replaced_not_written_through(work, api):
    url, routes = api
    secret = work.parent / "outside" / "bashrc"
    secret.write_text("keep\n")
    (work / "sub" / "x.txt").write_text("before\n")

    def swap() -> Answer:
        (work / "sub" / "x.txt").unlink()
        (work / "sub" / "x.txt").symlink_to(secret)
        return 200, {}, b"PAYLOAD"
    routes.table["/v1/files/file_swap/content"] = swap
    r = run(work, url, "file_swap:sub/x.txt")
    assert r.returncode == 0, r.stderr
    assert secret.read_text() == "keep\n"
    assert not (work / "sub" / "x.txt").is_symlink() and (work / "sub" / "x.txt").read_bytes() == b"PAYLOAD"


def test_same_download_without_a_swap_lands_in_the_folder(work, api):
    url, routes = api
    routes.table["/v1/files/file_swap/content"] = (200, {}, b"PAYLOAD")
    r = run(work, url, "file_swap:sub/x.txt")
    assert r.returncode == 0, r.stderr
    assert (work / "sub" / "x.txt").read_bytes() == b"PAYLOAD"


# -- redirects and the API key ------------------------------------------------------------------
def test_the_key_follows_a_redirect_on_the_api_origin_only(work, api):
    url, routes = api
    port = url.rsplit(":", 1)[1]
    away = Routes()
    with other_host(away) as other:
        routes.table.update({
            "/v1/files/file_same/content": redirect("/blobs/same"),
            "/blobs/same": (200, {}, b"same origin\n"),
            "/v1/files/file_away/content": redirect(f"{other}/blobs/away"),
            "/v1/files/file_named/content": redirect(f"http://localhost:{port}/blobs/named"),
            "/blobs/named": (200, {}, b"other host name\n"),
            "/v1/files/file_bounce/content": redirect(f"{other}/bounce"),
            "/blobs/back": (200, {}, b"came back\n"),
        })
        away.table.update({"/blobs/away": (200, {}, b"other port\n"), "/bounce": redirect(f"{url}/blobs/back")})
        r = run(work, url, "file_same:same.txt", "file_away:away.txt", "file_named:named.txt",
                "file_bounce:back.txt")
    assert r.returncode == 0, r.stderr
    assert (work / "same.txt").read_bytes() == b"same origin\n"
    assert (work / "away.txt").read_bytes() == b"other port\n"
    assert (work / "named.txt").read_bytes() == b"other host name\n"
    assert (work / "back.txt").read_bytes() == b"came back\n"
    assert routes.keys("/blobs/same") == ["test-key"]             # the API's own origin: the key goes
    assert [(p, k, b) for p, k, b in away.seen] == [("/blobs/away", None, None), ("/bounce", None, None)]
    assert routes.keys("/blobs/named") == [None]                 # localhost is another host than 127.0.0.1
    assert routes.keys("/blobs/back") == [None]                  # once it left, never again in that chain


def test_redirect_loops_and_odd_targets_are_one_line_errors(work, api):
    url, routes = api
    routes.table.update({"/v1/files/file_loop/content": redirect("/v1/files/file_loop/content"),
                         "/v1/files/file_ftp/content": redirect("ftp://files.example/x")})
    assert "too many redirects" in one_error_line(run(work, url, "file_loop:x.txt"))
    assert "not an http(s) URL" in one_error_line(run(work, url, "file_ftp:x.txt"))
    assert not (work / "x.txt").exists()


def test_https_never_redirects_down_to_plain_http():
    # no TLS server on loopback here: the wire is httpx's in-memory transport, the redirect logic is real
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(302, headers={"location": "http://files.example/x"})

    with httpx.Client(transport=httpx.MockTransport(answer)) as client, \
            pytest.raises(FileFlagError, match="from https to plain http"):
        fetch_content(client, "https://api.example", "file_ok", {"x-api-key": "k"})
    assert [str(r.url) for r in seen] == ["https://api.example/v1/files/file_ok/content"]
