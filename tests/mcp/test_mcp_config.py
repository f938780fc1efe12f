"""MCP configuration: .mcp.json, settings, --mcp-config (files and JSON), --strict-mcp-config, env expansion.
No SDK needed."""

import json

from codeloop.mcp.config import Source, Transport, expand_env
from codeloop.mcp.sources import load_mcp_configs


def write_project(tmp_path, servers):
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))


def test_project_settings_and_cli_merge_with_later_sources_winning(tmp_path):
    write_project(tmp_path, {"files": {"command": "npx", "args": ["-y", "fs-server"], "env": {"A": "1"}},
                             "shared": {"command": "from-project"}})
    cli_file = tmp_path / "extra.json"
    cli_file.write_text(json.dumps({"mcpServers": {"remote": {"type": "http", "url": "https://x/mcp",
                                                              "headers": {"Authorization": "Bearer t"}}}}))
    servers, errors = load_mcp_configs(
        tmp_path, settings_servers={"shared": {"command": "from-settings"}},
        cli_configs=[str(cli_file), json.dumps({"mcpServers": {"events": {"type": "sse", "url": "http://h/sse"}}})])
    assert errors == []
    assert list(servers) == ["files", "shared", "remote", "events"]
    files = servers["files"]
    assert (files.transport, files.command, files.args, dict(files.env), files.source) == (
        Transport.STDIO, "npx", ("-y", "fs-server"), {"A": "1"}, Source.PROJECT)
    assert servers["shared"].command == "from-settings" and servers["shared"].source is Source.SETTINGS
    assert servers["remote"].transport is Transport.HTTP
    assert dict(servers["remote"].headers) == {"Authorization": "Bearer t"}
    assert servers["events"].transport is Transport.SSE and servers["events"].source is Source.CLI


def test_strict_uses_only_cli_configs(tmp_path):
    write_project(tmp_path, {"files": {"command": "npx"}})
    servers, errors = load_mcp_configs(tmp_path, settings_servers={"s": {"command": "x"}},
                                       cli_configs=['{"mcpServers": {"only": {"command": "me"}}}'], strict=True)
    assert list(servers) == ["only"] and errors == []


def test_untrusted_folder_skips_project_file(tmp_path):
    write_project(tmp_path, {"files": {"command": "npx"}})
    servers, _ = load_mcp_configs(tmp_path, settings_servers={}, cli_configs=[], strict=False, include_project=False)
    assert servers == {}


def test_bad_entries_are_reported_without_dropping_the_good_ones(tmp_path):
    write_project(tmp_path, {"ok": {"command": "run"}, "nocmd": {"args": ["x"]}, "weird": {"type": "ftp", "url": "x"},
                             "nourl": {"type": "http"}})
    servers, errors = load_mcp_configs(tmp_path, settings_servers={}, cli_configs=["missing.json", "{not json"],
                                       strict=False, include_project=True)
    assert list(servers) == ["ok"]
    text = "\n".join(errors)
    assert "'nocmd'" in text and "command" in text and "'weird'" in text and "'nourl'" in text
    assert "missing.json" in text and "invalid JSON" in text and len(errors) == 5


def test_env_vars_expand_in_commands_urls_and_headers(tmp_path):
    env = {"TOKEN": "s3cret", "HOME": "/home/u"}
    write_project(tmp_path, {"a": {"command": "${HOME}/bin/srv", "args": ["--port", "${PORT:-8080}"],
                                   "env": {"KEY": "${TOKEN}"}},
                             "b": {"type": "http", "url": "https://h/${MISSING}", "headers": {"X": "Bearer ${TOKEN}"}}})
    servers, errors = load_mcp_configs(tmp_path, settings_servers={}, cli_configs=[], strict=False,
                                       include_project=True, env=env)
    assert errors == []
    assert servers["a"].command == "/home/u/bin/srv" and servers["a"].args == ("--port", "8080")
    assert servers["a"].env["KEY"] == "s3cret"
    assert servers["b"].url == "https://h/${MISSING}" and servers["b"].headers["X"] == "Bearer s3cret"
    assert expand_env("${A:-}x", {}) == "x"


def test_oauth_settings_of_remote_servers():
    from codeloop.mcp.config import parse_server

    ok = parse_server("r", {"type": "http", "url": "https://x/mcp", "oauth": {"clientId": "abc", "callbackPort": 8123}},
                      Source.CLI)
    assert dict(ok.oauth) == {"clientId": "abc", "callbackPort": 8123}
    assert dict(parse_server("r", {"type": "sse", "url": "https://x/sse"}, Source.CLI).oauth) == {}
    import pytest

    for bad, needle in (({"oauth": "yes"}, "must be an object"), ({"oauth": {"clientId": ""}}, "clientId"),
                        ({"oauth": {"callbackPort": 70000}}, "callbackPort"),
                        ({"oauth": {"callbackPort": True}}, "callbackPort")):
        with pytest.raises(ValueError, match=needle):
            parse_server("r", {"type": "http", "url": "https://x/mcp", **bad}, Source.CLI)
