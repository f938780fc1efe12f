"""The WebFetch tool: fetch one URL, turn its HTML into markdown, answer the model's prompt about it.

Fetching is plain httpx with caps (time, bytes, redirects). The host is rewritten to its one
canonical spelling first (`permissions.hosts`: `http://2130706433/`, `0x7f.1` and `[::ffff:127.0.0.1]`
are all 127.0.0.1), and every decision — rules, preapproval, the scheme, redirects — is taken on
it and the connection made to it. `http://` is upgraded to `https://` except for loopback hosts,
which have no certificate to offer — that is also what lets the tests serve real pages from a
loopback server. A redirect that changes the scheme, the host (beyond "www.") or the port is
reported to the model instead of followed, as Claude Code does, so a permission granted for one
site never quietly reaches another. Pages are kept for 15 minutes.

The prompt is applied by a small fast model through the session's side provider
(`ctx.side_provider`, metered, so it counts in usage and cost); pages from the
preapproved documentation hosts that are already short markdown skip that call.

Permissions: read-only (plan mode may use it), but every domain asks unless a
`WebFetch(domain:host)` rule allows it or the host is preapproved. The preapproved list is a small
set of documentation hosts; `CODELOOP_WEBFETCH_DOMAINS` (comma-separated, settable through
settings "env") adds hosts, and `CODELOOP_WEBFETCH_DOMAINS=none` turns preapproval off.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlunsplit

from pydantic import BaseModel, ConfigDict, Field

from codeloop.tools.base import PermissionBehavior, PermissionDecision, Tool, ToolContext, ToolError, ToolResult

MAX_URL_LENGTH = 2000
MAX_BODY_BYTES = 10 * 1024 * 1024
MAX_MARKDOWN_CHARS = 100_000
FETCH_TIMEOUT_S = 60.0
MAX_REDIRECTS = 10
CACHE_TTL_S = 15 * 60
CACHE_MAX_CHARS = 50 * 1024 * 1024
SIDE_MAX_TOKENS = 4096
DEFAULT_SIDE_MODEL = "claude-haiku-4-5"
DOMAINS_ENV = "CODELOOP_WEBFETCH_DOMAINS"
# Documentation hosts that may be fetched without a question (Claude Code preapproves a similar set).
PREAPPROVED = frozenset({
    "docs.python.org", "peps.python.org", "pypi.org", "developer.mozilla.org", "docs.rs", "doc.rust-lang.org",
    "go.dev", "pkg.go.dev", "nodejs.org", "www.typescriptlang.org", "react.dev", "docs.djangoproject.com",
    "flask.palletsprojects.com", "fastapi.tiangolo.com", "docs.pydantic.dev", "numpy.org", "pandas.pydata.org",
    "docs.anthropic.com", "docs.claude.com", "code.claude.com", "kubernetes.io", "docs.docker.com",
    "git-scm.com", "www.postgresql.org", "redis.io", "learn.microsoft.com", "docs.oracle.com",
})

DESCRIPTION = """\
- Fetches content from a specified URL and processes it using an AI model
- Takes a URL and a prompt as input
- Fetches the URL content, converts HTML to markdown
- Processes the content with the prompt using a small, fast model
- Returns the model's response about the content
- Use this tool when you need to retrieve and analyze web content

Usage notes:
  - IMPORTANT: If an MCP-provided web fetch tool is available, prefer using that tool instead of this one, \
as it may have fewer restrictions.
  - The URL must be a fully-formed valid URL
  - HTTP URLs will be automatically upgraded to HTTPS
  - The prompt should describe what information you want to extract from the page
  - This tool is read-only and does not modify any files
  - Results may be summarized if the content is very large
  - Includes a self-cleaning 15-minute cache for faster responses when repeatedly accessing the same URL
  - When a URL redirects to a different host, the tool will inform you and provide the redirect URL in a \
special format. You should then make a new WebFetch request with the redirect URL to fetch the content.
  - WebFetch fails for authenticated or private URLs (Google Docs, Confluence, Jira…); use a specialized \
MCP tool for those."""

SIDE_PROMPT = """\
Web page content:
---
{content}
---

{prompt}

Provide a concise response based only on the content above. In your response:
 - Enforce a strict 125-character maximum for quotes from any source document. Open Source Software is ok \
as long as we respect the license.
 - Use quotation marks for exact language from articles; any language outside of the quotation should never \
be word-for-word the same.
 - You are not a lawyer and never comment on the legality of your own prompts and responses.
 - Never produce or reproduce exact song lyrics."""


class WebFetchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="The URL to fetch content from", json_schema_extra={"format": "uri"})
    prompt: str = Field(description="The prompt to run on the fetched content")


@dataclass
class Page:
    """A fetched web page: its URL, status, type and text."""
    url: str
    status: int
    content_type: str
    text: str          # markdown for HTML, the text itself otherwise
    nbytes: int
    fetched_at: float


@dataclass
class Redirect:
    """A redirect to another site, reported instead of followed."""
    original: str
    target: str
    status: int


_cache: dict[str, Page] = {}


def cached(url: str, now: float | None = None) -> Page | None:
    now = time.monotonic() if now is None else now
    for key in [k for k, p in _cache.items() if now - p.fetched_at > CACHE_TTL_S]:
        del _cache[key]  # self-cleaning: expired pages go on every lookup
    return _cache.get(url)


def _remember(page: Page) -> None:
    while _cache and sum(len(p.text) for p in _cache.values()) + len(page.text) > CACHE_MAX_CHARS:
        _cache.pop(next(iter(_cache)))
    _cache[page.url] = page


def host_of(url: str) -> str:
    """The canonical host of `url` ("" when it has none that parses)."""
    from codeloop.permissions.hosts import parse_web_url

    try:
        return parse_web_url(url).host
    except ValueError:
        return ""


def normalize_url(url: str) -> str:
    """The URL to fetch: validated, its host in canonical spelling (the one every decision is taken on,
    and the one connected to), http upgraded to https except on loopback hosts."""
    from codeloop.permissions.hosts import DEFAULT_PORTS, HostKind, host_kind, netloc, parse_web_url

    url = url.strip()
    if len(url) > MAX_URL_LENGTH:
        raise ToolError(f"Invalid URL: longer than {MAX_URL_LENGTH} characters.")
    try:
        parts, host, port = parse_web_url(url)
    except ValueError as exc:
        raise ToolError(f"Invalid URL: {exc}.") from None
    scheme = parts.scheme
    if scheme == "http" and host_kind(host) is not HostKind.LOOPBACK:
        scheme = "https"
        if port == DEFAULT_PORTS["https"]:
            port = None
    return urlunsplit(parts._replace(scheme=scheme, netloc=netloc(host, port)))


def preapproved_hosts(env: dict[str, str] | None = None) -> frozenset[str]:
    from codeloop.permissions.hosts import canonical_host

    raw = (os.environ if env is None else env).get(DOMAINS_ENV, "")
    if raw.strip().lower() == "none":
        return frozenset()
    extra = {canonical_host(h) for h in raw.split(",") if h.strip()}
    return PREAPPROVED | {h for h in extra if h}


def is_preapproved(url: str) -> bool:
    from codeloop.permissions.hosts import is_ip

    host = host_of(url)
    if not host:
        return False
    hosts = preapproved_hosts()
    return host in hosts or (not is_ip(host) and any(host.endswith("." + h) for h in hosts))


def may_follow(current: str, target: str) -> bool:
    """A redirect is followed only on the same site: same scheme, same port, same host give or take
    "www." (Claude Code's rule); anything else is reported to the model."""
    from codeloop.permissions.hosts import parse_web_url

    try:
        a, b = parse_web_url(current), parse_web_url(target)
    except ValueError:
        return False
    strip = lambda h: h[4:] if h.startswith("www.") else h  # noqa: E731
    return a.parts.scheme == b.parts.scheme and a.port == b.port and strip(a.host) == strip(b.host)


def html_to_markdown(html: str) -> str:
    """HTML → markdown with html2text: no dependencies, ~10 ms to import, keeps every piece of text
    (scripts and styles dropped). Lazily imported: only a WebFetch of an HTML page pays for it."""
    try:
        import html2text
    except ImportError:  # pragma: no cover - a broken install
        raise ToolError("WebFetch needs the html2text package: pip install html2text") from None
    conv = html2text.HTML2Text()
    conv.body_width = 0          # no hard wrapping: the side model reads it, not a terminal
    conv.ignore_images = True
    conv.unicode_snob = True
    return conv.handle(html).strip()


async def fetch(url: str, *, timeout: float | None = None, max_bytes: int | None = None) -> Page | Redirect:
    """GET `url`, following same-site redirects; a redirect elsewhere is returned, not followed."""
    import httpx

    url = normalize_url(url)   # the canonical host is what httpx connects to

    timeout = FETCH_TIMEOUT_S if timeout is None else timeout
    max_bytes = MAX_BODY_BYTES if max_bytes is None else max_bytes

    from codeloop.version import __version__

    headers = {"user-agent": f"codeloop/{__version__} (WebFetch)", "accept": "text/markdown, text/html, */*"}
    async with httpx.AsyncClient(follow_redirects=False, timeout=httpx.Timeout(timeout), headers=headers) as client:
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            try:
                async with client.stream("GET", current) as resp:
                    if resp.is_redirect:
                        # a redirect never downgrades to plain http (loopback aside)
                        target = normalize_url(str(resp.url.join(resp.headers.get("location", ""))))
                        if not may_follow(current, target):
                            return Redirect(current, target, resp.status_code)
                        current = target
                        continue
                    declared = int(resp.headers.get("content-length") or 0)
                    if declared > max_bytes:
                        raise ToolError(f"The page at {current} is {declared} bytes; WebFetch reads at most "
                                        f"{max_bytes} bytes.")
                    body = bytearray()
                    async for chunk in resp.aiter_bytes():
                        body += chunk
                        if len(body) > max_bytes:
                            raise ToolError(f"The page at {current} is larger than {max_bytes} bytes; "
                                            "WebFetch stops reading there.")
                    if resp.status_code >= 400:
                        raise ToolError(f"Request failed with status code {resp.status_code} "
                                        f"({resp.reason_phrase}) for {current}")
                    ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
                    text = bytes(body).decode(resp.encoding or "utf-8", "replace")
                    return Page(url, resp.status_code, ctype, text, len(body), time.monotonic())
            except httpx.TimeoutException:
                raise ToolError(f"Fetching {current} timed out after {timeout:g} s.") from None
            except httpx.HTTPError as exc:
                raise ToolError(f"Fetching {current} failed: {exc or type(exc).__name__}") from None
        raise ToolError(f"Too many redirects (more than {MAX_REDIRECTS}) fetching {url}")


def redirect_message(r: Redirect, prompt: str) -> str:
    import httpx

    return (f"REDIRECT DETECTED: The URL redirects to a different host.\n\n"
            f"Original URL: {r.original}\nRedirect URL: {r.target}\n"
            f"Status: {r.status} {httpx.codes.get_reason_phrase(r.status)}\n\n"
            f"To complete your request, I need to fetch content from the redirected URL. "
            f"Please use WebFetch again with these parameters:\n- url: \"{r.target}\"\n- prompt: \"{prompt}\"")


_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml", "application/javascript")


def to_markdown(page: Page) -> str:
    if page.content_type and not page.content_type.startswith(_TEXT_TYPES) and not page.content_type.endswith(
            ("+json", "+xml")):
        raise ToolError(f"WebFetch reads text pages; {page.url} is {page.content_type} ({page.nbytes} bytes).")
    if "html" in page.content_type or (not page.content_type and "<html" in page.text[:2000].lower()):
        return html_to_markdown(page.text)
    return page.text


def side_model(ctx: ToolContext, provider: Any) -> str:
    """The small fast model on Anthropic; on other providers the session's own model."""
    if getattr(provider, "name", "") == "anthropic":
        return os.environ.get("ANTHROPIC_SMALL_FAST_MODEL") or DEFAULT_SIDE_MODEL
    return ctx.model


async def apply_prompt(ctx: ToolContext, content: str, prompt: str) -> str:
    provider = ctx.side_provider
    if provider is None:
        raise ToolError("WebFetch cannot apply its prompt: this session has no model for side calls.")
    from codeloop.providers.assembly import assemble, text_of
    from codeloop.providers.base import ModelRequest

    request = ModelRequest(model=side_model(ctx, provider), max_tokens=SIDE_MAX_TOKENS,
                           messages=[{"role": "user", "content": [
                               {"type": "text", "text": SIDE_PROMPT.format(content=content, prompt=prompt)}]}])
    answer = text_of(await assemble(provider, request)).strip()
    return answer or "No response from model"


class WebFetchTool(Tool):
    name: ClassVar[str] = "WebFetch"
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[type[BaseModel]] = WebFetchInput

    def is_read_only(self, inp: BaseModel) -> bool:
        return True

    def is_concurrency_safe(self, inp: BaseModel) -> bool:
        return True

    async def check_permissions(self, inp: WebFetchInput, ctx: ToolContext) -> PermissionDecision:
        try:
            url = normalize_url(inp.url)
        except ToolError:
            return PermissionDecision(PermissionBehavior.ALLOW)  # call() reports the bad URL; nothing is fetched
        if is_preapproved(url):
            return PermissionDecision(PermissionBehavior.ALLOW)
        from codeloop.permissions.hosts import describe

        host = host_of(url)
        return PermissionDecision(PermissionBehavior.ASK, f"WebFetch of {describe(host)} needs permission "
                                                          f"(allow it with WebFetch(domain:{host})).")

    async def call(self, inp: WebFetchInput, ctx: ToolContext) -> ToolResult:
        started = time.monotonic()
        url = normalize_url(inp.url)
        page = cached(url)
        if page is None:
            got = await fetch(url)
            if isinstance(got, Redirect):
                msg = redirect_message(got, inp.prompt)
                return ToolResult(msg, data={"url": url, "code": got.status, "result": msg,
                                             "durationMs": int((time.monotonic() - started) * 1000)})
            page = Page(got.url, got.status, got.content_type, to_markdown(got), got.nbytes, got.fetched_at)
            _remember(page)
        content = page.text
        truncated = len(content) > MAX_MARKDOWN_CHARS
        if truncated:
            content = content[:MAX_MARKDOWN_CHARS] + "\n\n[Content truncated due to length...]"
        if is_preapproved(url) and "markdown" in page.content_type and not truncated:
            result = content  # documentation already in markdown: the model reads it directly
        else:
            result = await apply_prompt(ctx, content, inp.prompt)
        return ToolResult(result, data={"url": url, "code": page.status, "bytes": page.nbytes, "result": result,
                                        "codeText": "OK" if page.status < 300 else str(page.status),
                                        "durationMs": int((time.monotonic() - started) * 1000)})
