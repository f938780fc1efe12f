"""Issue 24, the parity matrix's model row: a model switch goes through the session, so what runs
after it — a /compact, a subagent — runs on the new model, on every front end.

Each front end switches the way its users do (parity_frontends.*.model_then_compact):

    repl         start with --model sonnet, a prompt, `/model haiku`, then `/compact`
    print        one-shot: a first run on sonnet, then `-p /compact --resume ID --model haiku`
    stream-json  a prompt, a control_request set_model haiku, then a user message "/compact"
    sdk          ClaudeSDKClient(model="sonnet"), a query, client.set_model("haiku"), then "/compact"
    subagent     (stream-json) set_model haiku, then a prompt whose answer delegates to a subagent that
                 inherits the model: the subagent's requests name haiku

The compaction request is told from the others by its summary instructions (paritykit.is_compaction).
"""

from __future__ import annotations

import pytest

from parity_frontends import FRONT_ENDS, NEEDS, StreamJsonProc
from paritykit import DONE, SUB_DONE, FakeModel, delegates, says

START, NEW = "sonnet", "haiku"


@pytest.mark.parametrize("front_end", list(FRONT_ENDS))
def test_model_switch_then_compact(front_end, project, request):
    for need in NEEDS.get(front_end, ()):
        request.getfixturevalue(need)
    model = FakeModel(main=[says(DONE)])
    with model.api.serve() as url:
        outcome = FRONT_ENDS[front_end].model_then_compact(project, url, START, NEW)
    why = f"model × {front_end}\nrequests:\n{model.describe()}\n{outcome}"
    main = model.thread(False)
    assert main and START in main[0].body["model"], "the first prompt did not run on the start-up model\n" + why
    compactions = model.compactions()
    assert compactions, "no compaction request reached the model\n" + why
    assert NEW in compactions[-1].body["model"], \
        f"the compaction ran on {compactions[-1].body['model']}, not the model switched to\n" + why


def test_model_switch_reaches_the_subagent(project):
    model = FakeModel(main=[delegates(), says(DONE)], sub=[says(SUB_DONE)])
    with model.api.serve() as url:
        s = StreamJsonProc(project, url, "--model", START)
        try:
            s.send({"type": "control_request", "request_id": "parity_set_model",
                    "request": {"subtype": "set_model", "model": NEW}})
            s.wait_for(lambda l: l.get("type") == "control_response"
                       and l["response"].get("request_id") == "parity_set_model")
            s.send({"type": "user", "message": {"role": "user", "content": "run the parity check"},
                    "parent_tool_use_id": None, "session_id": ""})
            s.wait_for(lambda l: l.get("type") == "result")
        finally:
            code = s.close()
    outcome = s.outcome(code)
    why = f"model × subagent\nrequests:\n{model.describe()}\n{outcome}"
    sub = model.thread(True)
    assert sub, "the subagent sent no request\n" + why
    assert all(NEW in r.body["model"] for r in sub), "the subagent did not run on the model switched to\n" + why
    assert outcome.final is not None and DONE in outcome.final, "the run did not reach its final answer\n" + why
