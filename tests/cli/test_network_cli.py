"""A misbehaving network, end to end (issue 13): waits are bounded and never silent; calls that
cannot succeed fail at once, saying which setting to check."""

import json
import os
import subprocess
import sys

from fakeapi import ScriptedAPI, error, no_headers, plain, sse, stalled, text


def run(cwd, args, url, env=None):
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_", "CLAUDE_"))}
    full.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": url, "CODELOOP_CONFIG_DIR": str(cwd / ".cfg"),
                 "HOME": str(cwd)}, **(env or {}))
    return subprocess.run([sys.executable, "-m", "codeloop", *args], cwd=cwd, env=full, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)


def test_a_stalled_stream_is_retried_and_the_retry_is_shown(tmp_path):
    api = ScriptedAPI(stalled(text("half an ans", chunks=3), after=3, stall_s=20), sse(text("the whole answer")))
    with api.serve() as url:
        r = run(tmp_path, ["-p", "hi"], url, env={"CLAUDE_STREAM_IDLE_TIMEOUT_MS": "700"})
    assert r.returncode == 0, r.stderr
    assert r.stdout == "the whole answer\n"
    assert "stream idle" in r.stderr and "retrying in" in r.stderr   # the wait was not silent
    assert len(api.requests) == 2


def test_no_headers_is_bounded_and_reported(tmp_path):
    api = ScriptedAPI(no_headers(hold_s=20), no_headers(hold_s=20))
    with api.serve() as url:
        r = run(tmp_path, ["-p", "hi", "--output-format", "json"], url,
                env={"CODELOOP_HEADERS_TIMEOUT_MS": "500", "CODELOOP_MAX_RETRIES": "1"})
    assert r.returncode == 1
    res = json.loads(r.stdout)
    assert res["is_error"] and "no response headers" in res["result"]
    assert len(api.requests) == 2


def test_a_wrong_endpoint_fails_at_once_naming_anthropic_base_url(tmp_path):
    api = ScriptedAPI(*[plain(404, "Not Found") for _ in range(3)])
    with api.serve() as url:
        r = run(tmp_path, ["-p", "hi"], url)
    assert r.returncode == 1 and len(api.requests) == 1
    assert r.stderr.strip() == f"Error: API Error: 404 Not Found — check ANTHROPIC_BASE_URL (now {url}): " \
                               "nothing answers the API path there"


def test_retry_after_3600_is_not_waited_for(tmp_path):
    api = ScriptedAPI(error(429, "rate_limit_error", "Number of requests has exceeded your rate limit",
                            {"retry-after": "3600"}), sse(text("never")))
    with api.serve() as url:
        r = run(tmp_path, ["-p", "hi"], url)
    assert r.returncode == 1 and len(api.requests) == 1
    assert "exceeded your rate limit" in r.stderr and "retry after 3600s" in r.stderr


def test_401_names_the_key(tmp_path):
    with ScriptedAPI(error(401, "authentication_error", "invalid x-api-key")).serve() as url:
        r = run(tmp_path, ["-p", "hi"], url)
    assert r.returncode == 1 and "invalid x-api-key" in r.stderr
    assert "check your API key (ANTHROPIC_API_KEY)" in r.stderr
