"""`/plugin`'s words (issue 28): the same actions as `codeloop plugin`, one usage line otherwise."""

import pytest

from codeloop.input.plugin_command import USAGE, Action, parse_words


def test_words_become_actions():
    assert parse_words(["install", "greet@team", "-s", "project"]) == (Action.INSTALL, "greet@team", "project")
    assert parse_words(["i", "greet@team"]) == (Action.INSTALL, "greet@team", "user")
    assert parse_words(["marketplace", "add", "./m"]) == (Action.MARKET_ADD, "./m", "user")
    assert parse_words(["marketplace", "rm", "team"]) == (Action.MARKET_REMOVE, "team", "user")
    assert parse_words(["list"]) == (Action.LIST, None, "user")
    assert parse_words(["marketplace", "update"]) == (Action.MARKET_UPDATE, None, "user")
    assert parse_words(["remove", "greet"]) == (Action.UNINSTALL, "greet", "user")


@pytest.mark.parametrize("words", [["bogus"], ["install"], ["list", "extra"], ["enable", "x", "-s", "galaxy"],
                                   ["marketplace"], []])
def test_bad_words_give_the_usage_line(words):
    with pytest.raises(ValueError, match="usage: plugin install") as info:
        parse_words(words)
    assert str(info.value) == USAGE
