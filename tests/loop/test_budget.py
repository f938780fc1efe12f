"""Token budget: parsing the user's request and the continue/stop rules of §11.6."""

import pytest

from codeloop.loop.budget import (COMPLETION_THRESHOLD, DIMINISHING_THRESHOLD, BudgetAction,
                                  BudgetTracker, check_token_budget, parse_token_budget)


@pytest.mark.parametrize("text, expected", [
    ("+500k", 500_000),
    ("  +2M fix everything", 2_000_000),
    ("+1.5k", 1_500),
    ("+1b", 1_000_000_000),
    ("refactor the parser +300k", 300_000),
    ("refactor the parser +300k.", 300_000),
    ("refactor the parser +2.5 m!  ", 2_500_000),
    ("please use 50k tokens on this", 50_000),
    ("Spend 2M tokens", 2_000_000),
    ("use 1 k token", 1_000),
])
def test_parse_token_budget(text, expected):
    result = parse_token_budget(text)
    assert result == expected and isinstance(result, int)


@pytest.mark.parametrize("text", [
    "", "fix the bug", "500k", "+500", "+500kb of logs", "the c++500k thing",
    "a+300k", "300k in the middle of a sentence", "use 5k", "use tokens 5k",
    "refactor +300k now",
])
def test_parse_token_budget_none(text):
    assert parse_token_budget(text) is None


def test_start_shorthand_wins_over_later_forms():
    assert parse_token_budget("+1k then use 5k tokens") == 1_000


def test_thresholds():
    assert COMPLETION_THRESHOLD == 0.9 and DIMINISHING_THRESHOLD == 500


@pytest.mark.parametrize("budget, agent_id", [(None, None), (0, None), (10_000, "agent-1")])
def test_no_budget_or_subagent_stops(budget, agent_id):
    tracker = BudgetTracker()
    decision = check_token_budget(tracker, agent_id=agent_id, budget=budget, turn_output_tokens=10)
    assert decision.action is BudgetAction.STOP and decision.action == "stop"
    assert decision.nudge_message is None
    assert tracker.continuation_count == 0


def test_continue_under_threshold_with_nudge():
    tracker = BudgetTracker()
    decision = check_token_budget(tracker, agent_id=None, budget=100_000, turn_output_tokens=12_345)
    assert decision.action == "continue"
    assert decision.nudge_message == ("Stopped at 12% of token target (12,345 / 100,000). "
                                      "Keep working \u2014 do not summarize.")
    assert decision.continuation_count == 1 and decision.pct == 12
    assert tracker.continuation_count == 1
    assert tracker.last_delta_tokens == 12_345 and tracker.last_global_turn_tokens == 12_345


def test_pct_rounds_half_up():
    decision = check_token_budget(BudgetTracker(), agent_id=None, budget=1000, turn_output_tokens=5)
    assert decision.pct == 1 and "Stopped at 1% " in decision.nudge_message


def test_deltas_track_consecutive_checks():
    tracker = BudgetTracker()
    check_token_budget(tracker, agent_id=None, budget=100_000, turn_output_tokens=10_000)
    check_token_budget(tracker, agent_id=None, budget=100_000, turn_output_tokens=14_000)
    assert tracker.continuation_count == 2
    assert tracker.last_delta_tokens == 4_000 and tracker.last_global_turn_tokens == 14_000


def test_stop_at_completion_threshold():
    tracker = BudgetTracker()
    first = check_token_budget(tracker, agent_id=None, budget=10_000, turn_output_tokens=8_999)
    assert first.action == "continue"
    done = check_token_budget(tracker, agent_id=None, budget=10_000, turn_output_tokens=9_000)
    assert done.action == "stop" and done.nudge_message is None
    assert not done.diminishing_returns
    assert done.completed_budget_run and done.continuation_count == 1
    assert tracker.continuation_count == 1


def test_stop_over_budget_without_continuations_is_a_plain_stop():
    decision = check_token_budget(BudgetTracker(), agent_id=None, budget=1_000, turn_output_tokens=5_000)
    assert decision.action == "stop" and not decision.completed_budget_run


def test_diminishing_returns_after_three_continuations():
    tracker = BudgetTracker(continuation_count=3, last_delta_tokens=100, last_global_turn_tokens=10_000)
    decision = check_token_budget(tracker, agent_id=None, budget=1_000_000, turn_output_tokens=10_400)
    assert decision.action == "stop" and decision.diminishing_returns
    assert decision.completed_budget_run
    assert tracker.continuation_count == 3  # a stop grants nothing


@pytest.mark.parametrize("count, last_delta, new_total", [
    (2, 100, 10_100),    # fewer than three continuations so far
    (3, 600, 10_100),    # the previous delta was still productive
    (3, 100, 10_600),    # this delta is productive
])
def test_not_diminishing_keeps_going(count, last_delta, new_total):
    tracker = BudgetTracker(continuation_count=count, last_delta_tokens=last_delta,
                            last_global_turn_tokens=10_000)
    decision = check_token_budget(tracker, agent_id=None, budget=1_000_000, turn_output_tokens=new_total)
    assert decision.action == "continue"
    assert tracker.continuation_count == count + 1
    assert tracker.last_delta_tokens == new_total - 10_000


def test_spinning_model_is_stopped_after_three_continuations_and_two_small_deltas():
    tracker = BudgetTracker()
    actions = []
    total = 0
    for step in (5_000, 100, 100, 100):
        total += step
        actions.append(check_token_budget(tracker, agent_id=None, budget=1_000_000,
                                          turn_output_tokens=total).action)
    assert actions == ["continue", "continue", "continue", "stop"]
    assert tracker.continuation_count == 3
