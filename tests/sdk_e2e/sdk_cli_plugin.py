"""A pytest plugin for the child run of the SDK's e2e tests: every SDK client finds codeloop as its
CLI, exactly as `ClaudeAgentOptions(cli_path=...)` would (the tests themselves name no path)."""

import os

from claude_agent_sdk._internal.transport import subprocess_cli


def pytest_configure(config):
    cli = os.environ["CODELOOP_SDK_E2E_CLI"]
    subprocess_cli.SubprocessCLITransport._find_cli = lambda self: cli
