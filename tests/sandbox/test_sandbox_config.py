"""The `sandbox` settings block, the fail-closed start, and which commands run sandboxed."""

from __future__ import annotations

import pytest
from sandbox_helpers import make_sandbox, needs_bwrap, run_bash

from codeloop.config.sandbox import sandbox_settings
from codeloop.sandbox.runtime import Use
from codeloop.tools.base import ToolError


def test_defaults_and_keys():
    s = sandbox_settings({})
    assert not s.enabled and s.auto_allow and s.fail_if_unavailable and s.allowed_domains == ()
    s = sandbox_settings({"sandbox": {"enabled": True, "autoAllowBashIfSandboxed": False,
                                      "excludedCommands": ["docker *"], "failIfUnavailable": False,
                                      "network": {"allowedDomains": ["pypi.org"]},
                                      "filesystem": {"allowWrite": ["~/.cache"], "denyRead": ["~/.aws"]}}})
    assert s.enabled and not s.auto_allow and s.excluded_commands == ("docker *",)
    assert not s.fail_if_unavailable and s.allowed_domains == ("pypi.org",)
    assert s.allow_write == ("~/.cache",) and s.deny_read == ("~/.aws",) and not s.errors
    assert sandbox_settings({}, force_enable=True).enabled


@pytest.mark.parametrize("block, check", [
    ({"enabled": "yes"}, lambda s: s.enabled),
    ({"enabled": True, "autoAllowBashIfSandboxed": 1}, lambda s: not s.auto_allow),
    ({"enabled": True, "failIfUnavailable": "no"}, lambda s: s.fail_if_unavailable),
    ({"enabled": True, "excludedCommands": "docker"}, lambda s: s.excluded_commands == ()),
    ({"enabled": True, "network": {"allowedDomains": "*"}}, lambda s: s.allowed_domains == ()),
    ({"filesystem": "oops"}, lambda s: s.enabled),
])
def test_wrong_types_fall_back_to_the_safer_value(block, check):
    s = sandbox_settings({"sandbox": block})
    assert check(s) and s.errors


def test_a_non_object_block_enables_the_strictest_sandbox():
    s = sandbox_settings({"sandbox": True})
    assert s.enabled and not s.auto_allow and s.errors


def test_missing_bwrap_refuses_with_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.setenv("CODELOOP_BWRAP", str(tmp_path / "no-such-bwrap"))
    sandbox = make_sandbox(tmp_path)
    use, why = sandbox.use_for("touch f")
    assert use is Use.REFUSED
    [res] = run_bash(sandbox, tmp_path, "touch f")
    assert isinstance(res, ToolError) and "\n" not in str(res)
    assert "bubblewrap" in str(res) and "apt-get install bubblewrap" in str(res)
    assert "failIfUnavailable" in str(res) and not (tmp_path / "f").exists()


def test_broken_bwrap_refuses_and_explicit_fallback_runs_unsandboxed(tmp_path, monkeypatch):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CODELOOP_BWRAP", str(fake))
    [res] = run_bash(make_sandbox(tmp_path), tmp_path, "touch f")
    assert isinstance(res, ToolError) and "cannot start a sandbox" in str(res) and not (tmp_path / "f").exists()
    fallback = make_sandbox(tmp_path, failIfUnavailable=False)
    assert fallback.use_for("touch f")[0] is Use.UNSANDBOXED
    [res] = run_bash(fallback, tmp_path, "touch f")
    assert not res.is_error and (tmp_path / "f").exists()


@needs_bwrap
def test_which_commands_run_sandboxed(tmp_path):
    sandbox = make_sandbox(tmp_path, excludedCommands=["docker *"])
    assert sandbox.use_for("touch x")[0] is Use.SANDBOXED
    assert sandbox.use_for("git status")[0] is Use.SANDBOXED           # runs repository programs
    assert sandbox.use_for("ls -la")[0] is Use.SANDBOXED                # read-only too: no path around it
    assert sandbox.use_for("env")[0] is Use.SANDBOXED
    assert sandbox.use_for("docker ps && touch y")[0] is Use.UNSANDBOXED
    masked = make_sandbox(tmp_path, deny_read=["./secret.txt"])
    assert masked.use_for("cat secret.txt")[0] is Use.SANDBOXED         # masking is needed: no fast path
