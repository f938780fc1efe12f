"""Saving a granted Bash rule to .claude/settings.local.json (issue 17 item 2): merged, atomic,
and never at the cost of the file's existing content."""

import json
import os

import pytest

from codeloop.cli.repl.dialogs.permission import bash_rule
from codeloop.config.settings import load_settings
from codeloop.config.settings_write import SettingsWriteError, add_permission_rule


def test_creates_the_file_and_the_rule_is_loaded_back(tmp_path):
    path = add_permission_rule(tmp_path, "Bash(npm test:*)")
    assert path == tmp_path / ".claude" / "settings.local.json"
    assert json.loads(path.read_text()) == {"permissions": {"allow": ["Bash(npm test:*)"]}}
    rules = load_settings(tmp_path, trusted=True).permission_rules()
    assert any(rule == "Bash(npm test:*)" for _, rule, _ in rules)


def test_merges_with_existing_content_once_and_keeps_the_mode(tmp_path):
    path = tmp_path / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"model": "opus", "permissions": {"allow": ["Read"], "deny": ["Bash(rm:*)"]}}))
    os.chmod(path, 0o600)
    add_permission_rule(tmp_path, "Bash(git status:*)")
    add_permission_rule(tmp_path, "Bash(git status:*)")
    data = json.loads(path.read_text())
    assert data == {"model": "opus", "permissions": {"allow": ["Read", "Bash(git status:*)"], "deny": ["Bash(rm:*)"]}}
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["settings.local.json"]   # no temp file left


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"permissions": []}', '{"permissions": {"allow": "x"}}'])
def test_a_malformed_file_is_left_untouched(tmp_path, content):
    path = tmp_path / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_text(content)
    with pytest.raises(SettingsWriteError) as err:
        add_permission_rule(tmp_path, "Bash(ls:*)")
    assert "rule not saved" in str(err.value)
    assert path.read_text() == content


@pytest.mark.parametrize("command, rule", [
    ("git status --short", "Bash(git status:*)"),
    ("npm run build", "Bash(npm run:*)"),
    ("ls -la", "Bash(ls:*)"),
    ("pytest tests/x.py -q", "Bash(pytest:*)"),
    ("git -C /tmp status", "Bash(git -C /tmp status)"),
    ("make", "Bash(make)"),
    # compound commands, launchers and paths are only ever remembered exactly
    ("make && rm -rf /", "Bash(make && rm -rf /)"),
    ("python -c 'import os'", "Bash(python -c 'import os')"),
    ("sudo apt-get install x", "Bash(sudo apt-get install x)"),
    ("./run.sh fast", "Bash(./run.sh fast)"),
    ("FOO=1 make", "Bash(FOO=1 make)"),
    ("echo hi > out.txt", "Bash(echo hi > out.txt)"),
])
def test_bash_rule_offers_a_prefix_only_where_it_is_safe(command, rule):
    assert bash_rule(command) == rule
