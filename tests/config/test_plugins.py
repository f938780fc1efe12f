"""Loading a plugin folder (issue 28): the manifest's fields and paths, the standard layout,
${CLAUDE_PLUGIN_ROOT}, and one warning naming the file for each bad part."""

import json

from codeloop.config.plugins import load_plugin, merged_hooks


def write(path, content):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_no_manifest_takes_the_folder_name_and_the_standard_layout(tmp_path):
    root = tmp_path / "tidy"
    write(root / "commands" / "a.md", "A")
    write(root / ".mcp.json", {"mcpServers": {"s": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/s", "args": ["x"]}}})
    plugin, warnings = load_plugin(root)
    assert warnings == [] and plugin is not None and plugin.name == "tidy" and plugin.id == "tidy@inline"
    assert plugin.command_paths == (root.resolve() / "commands",) and plugin.agent_paths == ()
    server = plugin.mcp_servers["s"]
    assert server["command"] == f"{root.resolve()}/bin/s"
    assert server["env"] == {"CLAUDE_PLUGIN_ROOT": str(root.resolve())}


def test_manifest_paths_inline_parts_and_what_is_refused(tmp_path):
    root = tmp_path / "p"
    write(root / "extra" / "one.md", "One")
    write(root / ".claude-plugin" / "plugin.json", {
        "name": "p", "version": "2.0.0", "commands": ["./extra/one.md", "../outside", "./missing"],
        "hooks": {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "run ${CLAUDE_PLUGIN_ROOT}/x"}]}],
                            "PreToolUse": "not a list"}},
        "mcpServers": {"inline": {"type": "http", "url": "https://example.com/${CLAUDE_PLUGIN_ROOT}"}}})
    plugin, warnings = load_plugin(root)
    assert plugin is not None and plugin.version == "2.0.0"
    assert plugin.command_paths == (root.resolve() / "extra" / "one.md",)
    assert any("'../outside' leads out of the plugin" in w for w in warnings)
    assert any("'./missing' does not exist" in w for w in warnings)
    assert any("hooks.PreToolUse" in w for w in warnings)
    (stop,) = plugin.hooks["Stop"]
    assert stop["hooks"][0]["command"].endswith(f"run {root.resolve()}/x")
    assert "CLAUDE_PLUGIN_ROOT=" in stop["hooks"][0]["command"]
    assert plugin.mcp_servers["inline"]["url"] == f"https://example.com/{root.resolve()}"
    assert merged_hooks({"Stop": [{"hooks": []}]}, (plugin,))["Stop"][1] is stop


def test_a_plugin_that_cannot_load_says_why_once(tmp_path):
    bad = write(tmp_path / "bad" / ".claude-plugin" / "plugin.json", '{"name": "has space"}')
    plugin, warnings = load_plugin(bad.parent.parent)
    assert plugin is None and len(warnings) == 1 and str(bad) in warnings[0] and "'name'" in warnings[0]
    plugin, warnings = load_plugin(tmp_path / "nowhere")
    assert plugin is None and warnings == [f"plugin folder {tmp_path / 'nowhere'} does not exist or is not a folder"]
    broken_hooks = write(tmp_path / "h" / "hooks" / "hooks.json", "{oops")
    plugin, warnings = load_plugin(tmp_path / "h")
    assert plugin is not None and plugin.hooks == {}
    assert len(warnings) == 1 and str(broken_hooks) in warnings[0] and "invalid JSON" in warnings[0]
