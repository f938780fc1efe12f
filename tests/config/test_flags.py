"""Feature flags and the EndConversation gate (spec 000 "Gate")."""

from __future__ import annotations

import pytest

from codeloop.config import flags
from codeloop.config.flags import (END_CONVERSATION_FLAG, end_conversation_enabled, feature_flag, flag_env_name,
                                   model_floors, model_passes_floor, parse_model_id, scope_pattern)

GOOD_MODEL = "claude-opus-4-8"
ON = {END_CONVERSATION_FLAG: True}


# -- model floor ------------------------------------------------------------------------------------

@pytest.mark.parametrize("model, passes", [
    ("claude-opus-4-7", False),
    ("claude-opus-4-8", True),
    ("claude-opus-4-10", True),
    ("claude-opus-5-0", True),
    ("claude-opus-4", False),
    ("claude-sonnet-4-9", False),
    ("claude-sonnet-5", True),
    ("claude-sonnet-5-1", True),
    ("claude-fable-5", True),
    ("claude-fable-4-9", False),
    ("claude-mythos-5", True),
    ("claude-mythos-4", False),
    ("claude-haiku-9", False),            # unknown family
    ("claude-unknown-99", False),
    ("claude-opus", False),               # unparseable: no version
    ("opus", False),                      # an alias is not canonical
    ("claude-opus-4-8[1m]", False),
    ("anthropic.claude-opus-4-8-v1:0", False),
    ("Claude-Opus-4-8", False),
    ("claude-opus-4-8 ", False),
    ("claude-opus-4-x", False),
    ("", False),
    (None, False),
])
def test_model_floor_table(model, passes):
    assert model_passes_floor(model) is passes


def test_a_date_suffix_is_not_part_of_the_version():
    assert parse_model_id("claude-opus-4-8-20260101") == ("opus", (4, 8))
    assert model_passes_floor("claude-opus-4-8-20260101") is True
    assert model_passes_floor("claude-opus-4-7-20260101") is False
    assert model_passes_floor("claude-sonnet-5-20260101") is True
    assert parse_model_id("claude-opus-20260101") is None


def test_the_floor_table_is_data():
    assert model_floors() == {"opus": (4, 8), "sonnet": (5,), "fable": (5,), "mythos": (5,)}


# -- flag parsing ---------------------------------------------------------------------------------

def test_feature_flag_reads_settings_then_env_wins():
    assert feature_flag("x", {"x": True}, {}) is True
    assert feature_flag("x", {"x": True}, {flag_env_name("x"): "false"}) is False
    assert feature_flag("x", {}, {"CODELOOP_FEATURE_X": '{"scope": "sdk-py"}'}) == {"scope": "sdk-py"}
    assert feature_flag("x", {"x": True}, {"CODELOOP_FEATURE_X": ""}) is True  # empty env = unset
    assert feature_flag("x", None, {}) is None
    assert feature_flag("x", {}, {"CODELOOP_FEATURE_X": "yes"}) == "yes"  # not JSON: kept as a string
    assert flag_env_name("end_conversation") == "CODELOOP_FEATURE_END_CONVERSATION"


@pytest.mark.parametrize("value, on", [
    (True, True), ({"scope": "cli"}, True), ({}, True), ({"scope": 3}, True),
    (False, False), ("yes", False), ("true", False), (1, False), (0, False), (None, False), ([], False),
    (["cli"], False),
])
def test_flag_values(value, on):
    assert (scope_pattern(value) is not None) is on


def test_scope_object_is_a_full_match_case_insensitive_regex():
    pattern = scope_pattern({"scope": "cli|sdk-py"})
    assert pattern.fullmatch("SDK-PY") and pattern.fullmatch("cli")
    assert not pattern.fullmatch("sdk-py-x") and not pattern.fullmatch("xcli") and not pattern.fullmatch("cli\n")


def test_an_invalid_scope_regex_falls_back_to_cli_only():
    pattern = scope_pattern({"scope": "sdk-(py"})
    assert pattern.fullmatch("cli")
    assert not pattern.fullmatch("sdk-(py") and not pattern.fullmatch("sdk-py")
    assert end_conversation_enabled(entrypoint="cli", model=GOOD_MODEL,
                                    flags={END_CONVERSATION_FLAG: {"scope": "(*"}}, env={}) is True
    assert end_conversation_enabled(entrypoint="sdk-py", model=GOOD_MODEL,
                                    flags={END_CONVERSATION_FLAG: {"scope": "(*"}}, env={}) is False


def test_an_overly_broad_valid_scope_is_honoured_as_written():
    assert end_conversation_enabled(entrypoint="sdk-ts", model=GOOD_MODEL,
                                    flags={END_CONVERSATION_FLAG: {"scope": ".*"}}, env={}) is True


# -- the gate -------------------------------------------------------------------------------------

def test_gate_default_scope_is_cli():
    assert end_conversation_enabled(entrypoint="cli", model=GOOD_MODEL, flags=ON, env={}) is True
    assert end_conversation_enabled(entrypoint="CLI", model=GOOD_MODEL, flags=ON, env={}) is True
    assert end_conversation_enabled(entrypoint="sdk-py", model=GOOD_MODEL, flags=ON, env={}) is False
    assert end_conversation_enabled(entrypoint="print", model=GOOD_MODEL, flags=ON, env={}) is False


@pytest.mark.parametrize("entrypoint", [None, ""])
def test_gate_needs_an_entrypoint_even_with_a_match_everything_scope(entrypoint):
    assert end_conversation_enabled(entrypoint=entrypoint, model=GOOD_MODEL,
                                    flags={END_CONVERSATION_FLAG: {"scope": ".*"}}, env={}) is False


def test_gate_needs_the_model_floor():
    assert end_conversation_enabled(entrypoint="cli", model="claude-opus-4-7", flags=ON, env={}) is False
    assert end_conversation_enabled(entrypoint="cli", model=None, flags=ON, env={}) is False


@pytest.mark.parametrize("settings, env", [
    ({}, {}),
    ({END_CONVERSATION_FLAG: False}, {}),
    ({END_CONVERSATION_FLAG: "yes"}, {}),
    ({END_CONVERSATION_FLAG: True}, {"CODELOOP_FEATURE_END_CONVERSATION": "false"}),
    ({}, {"CODELOOP_FEATURE_END_CONVERSATION": "yes"}),
])
def test_gate_is_off_unless_the_flag_is_on(settings, env):
    assert end_conversation_enabled(entrypoint="cli", model=GOOD_MODEL, flags=settings, env=env) is False


def test_gate_flag_from_env():
    env = {"CODELOOP_FEATURE_END_CONVERSATION": '{"scope": "sdk-py"}'}
    assert end_conversation_enabled(entrypoint="sdk-py", model=GOOD_MODEL, flags={}, env=env) is True
    assert end_conversation_enabled(entrypoint="cli", model=GOOD_MODEL, flags={}, env=env) is False


def test_gate_reads_os_environ_by_default(monkeypatch):
    monkeypatch.setenv("CODELOOP_FEATURE_END_CONVERSATION", "true")
    assert end_conversation_enabled(entrypoint="cli", model=GOOD_MODEL, flags={}) is True


def test_runtime_blocker_switches_it_off(monkeypatch):
    assert flags.END_CONVERSATION_RUNTIME_BLOCKED is False
    monkeypatch.setattr(flags, "END_CONVERSATION_RUNTIME_BLOCKED", True)
    assert end_conversation_enabled(entrypoint="cli", model=GOOD_MODEL,
                                    flags={END_CONVERSATION_FLAG: {"scope": ".*"}}, env={}) is False
