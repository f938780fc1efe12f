"""Secrets stay out of the model's commands (issue 25): the environment Bash and background tasks
get leaves out codeloop's keys and tokens, but for what the user names; codeloop's own
/proc/<pid>/environ cannot be read by a command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fakeapi import ScriptedAPI, sse, text, tool_use
from codeloop.tools.base import ToolContext
from codeloop.tools.builtin.bash import BashTool
from codeloop.tools.builtin.bash_background import registry
from codeloop.tools.builtin.shell_env import command_environment, is_secret
from codeloop.tools.registry import parse_tool_input

SECRETS = {"ANTHROPIC_API_KEY": "sk-ant-secret", "ANTHROPIC_AUTH_TOKEN": "bearer-secret",
           "OPENAI_BASE_URL": "https://user:pw@proxy", "GITHUB_TOKEN": "ghp_secret", "DB_PASSWORD": "hunter2",
           "AWS_SECRET_ACCESS_KEY": "aws-secret", "GOOGLE_APPLICATION_CREDENTIALS": "/creds.json",
           "npm_config__authToken": "npm-secret"}


@pytest.fixture
def secrets(monkeypatch):
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("PLAIN_SETTING", "visible")


def test_which_names_are_secrets():
    assert all(is_secret(k) for k in SECRETS)
    assert not any(is_secret(k) for k in ("PATH", "HOME", "LANG", "SSH_AUTH_SOCK", "CODELOOP_CONFIG_DIR", "TERM"))


def test_named_variables_pass():
    env = command_environment(("GITHUB_TOKEN", "npm_config_*"), base={**SECRETS, "PATH": "/bin"})
    assert env == {"GITHUB_TOKEN": "ghp_secret", "npm_config__authToken": "npm-secret", "PATH": "/bin"}


async def run(ctx: ToolContext, command: str, **kw) -> str:
    tool = BashTool()
    res = await tool.call(parse_tool_input(tool, {"command": command, **kw}), ctx)
    return res.content if isinstance(res.content, str) else json.dumps(res.content)


async def test_bash_and_background_tasks_do_not_see_secrets(tmp_path, secrets):
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, session_dir=tmp_path / "s")
    out = await run(ctx, "env; printenv ANTHROPIC_API_KEY; echo done")
    assert "PLAIN_SETTING=visible" in out and "done" in out and "PATH=" in out
    assert not any(v in out for v in SECRETS.values()) and not any(f"{k}=" in out for k in SECRETS)
    await run(ctx, "env > bg.txt", run_in_background=True)
    task = next(iter(registry(ctx).tasks.values()))
    await task.done.wait()
    bg = (tmp_path / "bg.txt").read_text()
    assert "PLAIN_SETTING=visible" in bg and not any(v in bg for v in SECRETS.values())


async def test_the_user_can_pass_a_variable_on(tmp_path, secrets):
    ctx = ToolContext(cwd=tmp_path, project_dir=tmp_path, env_pass=("GITHUB_TOKEN",))
    out = await run(ctx, "echo gh=$GITHUB_TOKEN key=$ANTHROPIC_API_KEY")
    assert "gh=ghp_secret" in out and "key=\n" in out + "\n" and "sk-ant-secret" not in out


def cli(args: list[str], *, cwd: Path, url: str, env: dict[str, str] | None = None,
        prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    full.update({"ANTHROPIC_API_KEY": "sk-ant-cli-secret", "ANTHROPIC_BASE_URL": url,
                 "CODELOOP_CONFIG_DIR": str(cwd / ".cfg"), "HOME": str(cwd), **(env or {})})
    return subprocess.run([*(prefix or []), sys.executable, "-m", "codeloop", *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=120)


def result_of(api: ScriptedAPI) -> str:
    return json.dumps(api.requests[1].messages[-1]["content"][0])


def test_settings_env_and_pass_env_reach_commands_from_the_cli(tmp_path):
    settings = {"env": {"SERVICE_TOKEN": "from-settings"}, "passEnv": ["DEPLOY_*"]}
    api = ScriptedAPI(sse(tool_use("Bash", {"command": "echo s=$SERVICE_TOKEN d=$DEPLOY_KEY a=$ANTHROPIC_API_KEY"})),
                      sse(text("ok")))
    with api.serve() as url:
        r = cli(["-p", "go", "--allowedTools", "Bash", "--settings", json.dumps(settings)], cwd=tmp_path, url=url,
                env={"DEPLOY_KEY": "deploy-secret"})
    assert r.returncode == 0, r.stderr
    out = result_of(api)
    assert "s=from-settings" in out and "d=deploy-secret" in out and "sk-ant-cli-secret" not in out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_codeloops_own_environ_cannot_be_read_by_a_command(tmp_path):
    """The command runs as codeloop's user; as root (CI) with every capability that user reads every
    /proc file, so codeloop itself is started there with no capabilities at all (still uid 0, so it
    reads its own install wherever CI put it) — the check is the same one an ordinary user's session faces."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot start codeloop without capabilities")
        prefix = [setpriv, "--bounding-set=-all", "--inh-caps=-all", "--ambient-caps=-all", "--"]
    command = "cat /proc/$PPID/environ | tr '\\0' '\\n' | grep -c ANTHROPIC_API_KEY; echo rc=$?"
    api = ScriptedAPI(sse(tool_use("Bash", {"command": command})), sse(text("ok")))
    with api.serve() as url:
        r = cli(["-p", "go", "--allowedTools", "Bash", "--no-session-persistence"], cwd=tmp_path, url=url,
                prefix=prefix)
    assert r.returncode == 0, r.stderr
    out = result_of(api)
    assert "sk-ant-cli-secret" not in out and "Permission denied" in out


_DUMPABLE_PROBE = """
import sys
from codeloop.tools.builtin import shell_env
{setup}
shell_env.protect_process()
after = shell_env._prctl(3, 0)   # PR_GET_DUMPABLE
print(after, 'ctypes' in sys.modules)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
@pytest.mark.parametrize(("setup", "ctypes_loaded"), [
    ("", "False"),
    # an interpreter whose _ctypes offers no plain call: ctypes itself makes it, with the same effect
    ("import _ctypes; del _ctypes.call_function", "True"),
    # one whose call_function takes other arguments: the TypeError does not escape, ctypes calls
    ("import _ctypes\ndef call_function(*a):\n    raise TypeError('changed')\n_ctypes.call_function = call_function",
     "True"),
])
def test_protect_process_makes_codeloop_non_dumpable(setup, ctypes_loaded):
    """The prctl is made without importing ctypes (its class definitions were a fifth of the first
    tool turn), and still takes effect; where `_ctypes` lacks the entry point, ctypes makes it."""
    env = {k: v for k, v in os.environ.items() if k != "CODELOOP_ALLOW_PTRACE"}
    r = subprocess.run([sys.executable, "-c", _DUMPABLE_PROBE.format(setup=setup)], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", ctypes_loaded]
