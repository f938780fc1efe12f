"""Broken settings fail closed (issue 13): the run stops with file:line:col, no request is sent,
and the deny rule the file was meant to hold is never silently dropped."""

import json
import os
import subprocess
import sys

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use

DENY = "Read(./secret.txt)"
CASES = [  # (scope, raw file, expected "line:col")
    ("user", b'{\n  "permissions": {\n    "deny": ["Read(./secret.txt)"', "3:34"),
    ("project", b'{\n  "permissions": {"deny": ["Read(./secret.txt)"],}\n}', "2:50"),
    ("local", b'{\n  // no secrets\n  "permissions": {"deny": ["Read(./secret.txt)"]}\n}', "2:3"),
    ("managed", b'{\n  "permissions": {"deny": ["Read(./secret\xff.txt)"]}\n}', "2:42"),
    ("cli", b'[{"permissions": {"deny": ["Read(./secret.txt)"]}}]', "1:1"),
    ("user", b'{\n  "permissions": {\n    "deny": "Read(./secret.txt)"\n  }\n}', "3:5"),
    ("managed", b'{"permissions": {"deny": [42, "Read(./secret.txt)"]}}', "1:18"),
    ("project", b'{\n "permissions": ["Read(./secret.txt)"]\n}', "2:2"),
]


def _paths(cwd):
    return {"user": cwd / ".cfg" / "settings.json", "project": cwd / ".claude" / "settings.json",
            "local": cwd / ".codeloop" / "settings.local.json", "managed": cwd / "etc" / "managed.json",
            "cli": cwd / "extra-settings.json"}


def run(cwd, args, url, *, input=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    env.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": url, "CODELOOP_CONFIG_DIR": str(cwd / ".cfg"),
                "HOME": str(cwd), "CODELOOP_MANAGED_SETTINGS": str(_paths(cwd)["managed"])})
    return subprocess.run([sys.executable, "-m", "codeloop", *args], cwd=cwd, env=env, input=input,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("scope,raw,where", CASES)
def test_broken_settings_stop_the_run_naming_file_line_col(tmp_path, scope, raw, where):
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    path = _paths(tmp_path)[scope]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw)
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(tmp_path / "secret.txt")})), sse(text("read it")))
    args = ["-p", "show me secret.txt", "--trust", "--dangerously-skip-permissions"]
    if scope == "cli":
        args += ["--settings", str(path)]
    with api.serve() as url:
        r = run(tmp_path, args, url)
    assert r.returncode == 1
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"{path}:{where}: " in lines[0], r.stderr
    assert api.requests == []                       # nothing was sent, nothing was read
    assert "TOP SECRET" not in r.stdout + r.stderr


def test_broken_settings_in_json_mode_give_an_error_result(tmp_path):
    path = _paths(tmp_path)["user"]
    path.parent.mkdir(parents=True)
    path.write_text('{"permissions": {"deny": "Read(./secret.txt)"}}')
    with ScriptedAPI(sse(text("never"))).serve() as url:
        r = run(tmp_path, ["-p", "hi", "--output-format", "json"], url)
    assert r.returncode == 1
    res = json.loads(r.stdout)
    assert res["is_error"] and f"{path}:1:18: 'permissions.deny' must be a list of strings" in res["errors"][0]


def test_a_well_formed_deny_rule_still_applies(tmp_path):
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    path = _paths(tmp_path)["user"]
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"permissions": {"deny": [DENY]}}))
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(tmp_path / "secret.txt")})), sse(text("denied")))
    with api.serve() as url:
        r = run(tmp_path, ["-p", "show me secret.txt", "--dangerously-skip-permissions"], url)
    assert r.returncode == 0, r.stderr
    assert "TOP SECRET" not in json.dumps(api.requests[1].messages)
