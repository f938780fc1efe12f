"""The local-model profile and provider, as units (issue 19): flags the profile narrows, the
sandbox setting it adds under the user's own settings, and the bodies `LocalProvider` sends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeloop.cli.startup.options import options_from_argv
from codeloop.session.local_profile import LOCAL_SYSTEM_PROMPT, LOCAL_TOOLS, SHORT_DESCRIPTIONS, no_key_message, profile
from codeloop.session.options import SetupError
from codeloop.providers.base import ModelRequest
from codeloop.providers.local import LocalProvider, LocalRuntime, context_size, model_name
from codeloop.providers.select import api_key_source, resolve_provider, split_model_flag


def test_profile_narrows_tools_prompt_and_turns_the_sandbox_on():
    tools, prompt, settings, warnings = profile(None, None, None)
    assert warnings == [] and tools == list(LOCAL_TOOLS) and prompt == LOCAL_SYSTEM_PROMPT
    assert json.loads(settings) == {"sandbox": {"enabled": True}}


def test_profile_keeps_user_choices_and_settings(tmp_path):
    tools, prompt, settings, warnings = profile(["Read", "WebFetch"], "mine", json.dumps({"model": "x"}))
    assert tools == ["Read"] and "ignoring WebFetch" in warnings[0] and prompt == "mine"
    assert json.loads(settings) == {"model": "x", "sandbox": {"enabled": True}}
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"sandbox": {"enabled": False}}))
    assert json.loads(profile(None, None, str(f))[2]) == {"sandbox": {"enabled": False}}  # the user's choice wins


def test_profile_reaches_the_options(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / "cfg"))
    options = options_from_argv(["-p", "x", "--model", "local"])
    assert options.local_profile and options.tools == LOCAL_TOOLS
    assert options.prompts.system_prompt == LOCAL_SYSTEM_PROMPT
    assert options.settings.merged["sandbox"] == {"enabled": True}


@pytest.mark.parametrize("flags", [["--dangerously-skip-permissions"], ["--permission-mode", "bypassPermissions"]])
def test_profile_refuses_bypass(flags, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / "cfg"))
    with pytest.raises(SetupError, match="never runs with bypassPermissions"):
        options_from_argv(["-p", "x", "--model", "local", *flags])


def test_model_flag_resolution():
    assert split_model_flag("local")[0].value == "local"
    assert resolve_provider("local", env={}) == ("local", None)
    assert resolve_provider("local:/models/x.gguf", env={}) == ("local", "/models/x.gguf")
    assert resolve_provider("qwen3:8b", env={"CODELOOP_PROVIDER": "ollama"}) == ("ollama", "qwen3:8b")
    assert model_name(None) == "local" and model_name("qwen2.5-coder-1.5b") == "local/qwen2.5-coder-1.5b"
    assert context_size({"CODELOOP_LOCAL_CONTEXT": "8192"}) == 8192 and context_size({}) == 16_384
    assert context_size({"CODELOOP_LOCAL_CONTEXT": "lots"}) == 16_384


def test_local_models_are_free_with_a_small_window():
    from codeloop.providers.models import model_info

    info = model_info("local/some-model")
    assert info.prices.input == 0 and info.prices.output == 0 and info.context_window == 16_384


def test_api_key_source_per_provider():
    assert api_key_source("anthropic", env={"ANTHROPIC_API_KEY": "k"}) == "ANTHROPIC_API_KEY"
    assert api_key_source("anthropic", env={"ANTHROPIC_AUTH_TOKEN": "t"}) == "ANTHROPIC_AUTH_TOKEN"
    assert api_key_source("anthropic", env={}, helper=True) == "apiKeyHelper"
    assert api_key_source("anthropic", env={}) == "none"
    assert api_key_source("openai", env={"OPENAI_API_KEY": "k"}) == "OPENAI_API_KEY"
    assert api_key_source("openrouter", env={"OPENROUTER_API_KEY": "k"}) == "OPENROUTER_API_KEY"
    assert api_key_source("ollama", env={"OPENAI_API_KEY": "k"}) == "none"
    assert api_key_source("local", env={"OPENAI_API_KEY": "k"}) == "none"


def test_no_key_message_names_the_install_command_or_the_installed_model(tmp_path, monkeypatch):
    monkeypatch.delenv("CODELOOP_LOCAL_BASE_URL", raising=False)
    monkeypatch.setattr("codeloop.providers.local_model.chunk_files", lambda model: None)
    msg = no_key_message("ANTHROPIC_API_KEY is not set. Export your key and try again.", tmp_path)
    assert msg.startswith("ANTHROPIC_API_KEY is not set. Get a key") and len(msg.splitlines()) == 1
    assert msg.count("pip install") == 1 and "pip install 'codeloop[local,local-model]'" in msg
    assert "ollama:" in msg and "openai:" in msg
    monkeypatch.setenv("CODELOOP_LOCAL_BASE_URL", "http://127.0.0.1:9/v1")   # a server counts as installed
    msg = no_key_message("ANTHROPIC_API_KEY is not set.", tmp_path)
    assert "--model local (the embedded model, installed)" in msg and "pip install" not in msg


TOOLS = [{"name": n, "description": "long " * 50, "input_schema": {
    "type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}}
         for n in ("Grep", "Read")]


def test_local_provider_bodies():
    p = LocalProvider(LocalRuntime(Path("m.gguf"), alias="m"), descriptions=SHORT_DESCRIPTIONS,
                      base_url="http://127.0.0.1:9/v1")
    msgs = [{"role": "user", "content": "what is in a.txt?"}]
    body = p.request_body(ModelRequest(model="local", messages=msgs, tools=TOOLS, max_tokens=64))
    names = [o["properties"]["name"]["const"] for o in body["response_format"]["json_schema"]["schema"]["anyOf"]]
    assert names == ["Read", "Grep"]           # the profile's order, and no answer before a first call
    assert "long long" not in body["messages"][0]["content"]  # the short descriptions replace the long ones
    assert body["temperature"] == 0.2 and "tools" not in body
    plain = p.request_body(ModelRequest(model="local", messages=msgs, max_tokens=64))
    assert "response_format" not in plain and plain["messages"][-1]["content"] == "what is in a.txt?"
    assert p.name == "local" and not p.runtime.running
    # the prompt cache stays warm across turns; a server the user runs picks its own slot
    assert body["cache_prompt"] is True and plain["cache_prompt"] is True and "id_slot" not in body


def test_the_embedded_server_keeps_every_turn_in_its_one_slot():
    runtime = LocalRuntime(Path("m.gguf"), alias="m")
    runtime._server = object()   # as if started: the embedded server runs one slot
    p = LocalProvider(runtime, base_url="http://127.0.0.1:9/v1")
    msgs = [{"role": "user", "content": "hi"}]
    first = p.request_body(ModelRequest(model="local", messages=msgs, tools=TOOLS, max_tokens=64))
    later = p.request_body(ModelRequest(model="local", messages=[*msgs, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a"}}]}, {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}], tools=TOOLS, max_tokens=64))
    assert first["id_slot"] == later["id_slot"] == 0 and first["cache_prompt"] is later["cache_prompt"] is True
    # each turn's prompt extends the last one, so the cached tokens are a prefix of the new prompt
    assert [m["content"] for m in later["messages"][:2]] == [m["content"] for m in first["messages"][:2]]
    runtime._server = None


def _turn(name, inp, result, i):
    return [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": name, "input": inp}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": result}]}]


def _offers_answer(p, msgs):
    body = p.request_body(ModelRequest(model="local", messages=msgs, tools=EDIT_TOOLS, max_tokens=64))
    return any("answer" in o["properties"] for o in body["response_format"]["json_schema"]["schema"]["anyOf"])


EDIT_TOOLS = [{"name": n, "description": "", "input_schema": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}
              for n in ("Read", "Edit", "Bash")]


def test_a_change_is_checked_before_the_final_answer():
    from codeloop.session.local_profile import change_rules

    p = LocalProvider(LocalRuntime(Path("m.gguf"), alias="m"), descriptions=SHORT_DESCRIPTIONS,
                      base_url="http://127.0.0.1:9/v1", rules=change_rules())
    prompt = [{"role": "user", "content": "what does a.py call?"}]
    read = _turn("Read", {"command": "a.py"}, "1\tdef f(): pass\n2\tf()", 1)
    edit = _turn("Edit", {"command": "x"}, "The file a.py has been updated. Here's the result of running `cat -n`", 2)
    assert _offers_answer(p, [*prompt, *read])             # a result that answers
    assert not _offers_answer(p, [*prompt, *read, *edit])  # an edit's own report is not a check
    check = _turn("Read", {"command": "a.py"}, "1\tdef g(): pass\n2\tg()", 3)
    assert _offers_answer(p, [*prompt, *read, *edit, *check])
    silent = _turn("Bash", {"command": "rm old.txt"}, "", 4)  # printed nothing: shows nothing
    assert not _offers_answer(p, [*prompt, *read, *silent])
    assert _offers_answer(p, [*prompt, *read, *silent, *_turn("Bash", {"command": "ls"}, "a.py", 5)])
    many = [m for i in range(6) for m in _turn("Edit", {"command": str(i)}, "updated", 10 + i)]
    assert _offers_answer(p, [*prompt, *many])             # after six calls the answer is allowed anyway
    # without the profile's rules only the silent command counts
    plain = LocalProvider(LocalRuntime(Path("m.gguf"), alias="m"), base_url="http://127.0.0.1:9/v1")
    assert _offers_answer(plain, [*prompt, *read, *edit]) and not _offers_answer(plain, [*prompt, *read, *silent])


def test_a_requested_change_is_made_before_the_final_answer():
    from codeloop.session.local_profile import change_rules

    p = LocalProvider(LocalRuntime(Path("m.gguf"), alias="m"), descriptions=SHORT_DESCRIPTIONS,
                      base_url="http://127.0.0.1:9/v1", rules=change_rules())
    prompt = [{"role": "user", "content": "Rename f to g in a.py."}]
    grep = _turn("Grep", {"command": "f"}, "a.py:1:def f(): pass", 1)
    assert not _offers_answer(p, [*prompt, *grep])        # found something, changed nothing
    body = p.request_body(ModelRequest(model="local", messages=[*prompt, *grep], tools=EDIT_TOOLS, max_tokens=64))
    assert "Nothing has been changed yet" in body["messages"][-1]["content"]
    sed = _turn("Bash", {"command": "sed -i 's/f/g/' a.py"}, "", 2)
    ls = _turn("Bash", {"command": "grep -n g a.py"}, "1:def g(): pass", 3)
    assert _offers_answer(p, [*prompt, *grep, *sed, *ls])  # changed, then checked
    later = p.request_body(ModelRequest(model="local", messages=[*prompt, *grep, *sed, *ls], tools=EDIT_TOOLS,
                                        max_tokens=64))
    assert later["messages"][:4] == body["messages"][:4]   # earlier turns render the same: the cache holds
    echo = _turn("Bash", {"command": "echo ready"}, "ready", 2)
    assert not _offers_answer(p, [*prompt, *grep, *echo])  # a command that changes no file is no change
    question = [{"role": "user", "content": "Which file should I change?"}]
    assert _offers_answer(p, [*question, *grep])           # a question is answered, not acted on


def test_after_one_look_a_requested_change_is_offered_only_the_tools_that_change_files():
    from codeloop.session.local_profile import change_rules

    p = LocalProvider(LocalRuntime(Path("m.gguf"), alias="m"), descriptions=SHORT_DESCRIPTIONS,
                      base_url="http://127.0.0.1:9/v1", rules=change_rules())
    prompt = [{"role": "user", "content": "Rename f to g in a.py."}]

    def offered(msgs):
        body = p.request_body(ModelRequest(model="local", messages=msgs, tools=EDIT_TOOLS, max_tokens=64))
        return [o["properties"]["name"]["const"] if "name" in o["properties"] else "answer"
                for o in body["response_format"]["json_schema"]["schema"]["anyOf"]]

    assert offered(prompt) == ["Read", "Edit", "Bash"]            # the first call may look
    grep = _turn("Grep", {"command": "f"}, "a.py:1:def f(): pass", 1)
    assert offered([*prompt, *grep]) == ["Edit", "Bash"]
    edit = _turn("Edit", {"command": "x"}, "updated", 2)
    assert offered([*prompt, *grep, *edit]) == ["Read"]        # changed: the next call is a look
    check = _turn("Read", {"command": "a.py"}, "1\tdef g(): pass", 3)
    assert offered([*prompt, *grep, *edit, *check]) == ["Read", "Edit", "Bash", "answer"]


def test_a_question_that_counts_or_compares_is_answered_from_a_command():
    from codeloop.session.local_profile import change_rules

    p = LocalProvider(LocalRuntime(Path("m.gguf"), alias="m"), descriptions=SHORT_DESCRIPTIONS,
                      base_url="http://127.0.0.1:9/v1", rules=change_rules())

    def body(msgs):
        return p.request_body(ModelRequest(model="local", messages=msgs, tools=EDIT_TOOLS, max_tokens=64))

    prompt = [{"role": "user", "content": "How many words are in poem.txt?"}]
    read = _turn("Read", {"command": "poem.txt"}, "     1\tthe quick brown fox", 1)
    assert not _offers_answer(p, [*prompt, *read])          # read, not counted: no answer yet
    schema = body([*prompt, *read])["response_format"]["json_schema"]["schema"]
    assert [o["properties"]["name"]["const"] for o in schema["anyOf"]] == ["Bash"]   # after one look, only a command
    assert "Nothing has been measured yet" in body([*prompt, *read])["messages"][-1]["content"]
    # the command for a count of matching lines is named (the model ran wc -l on the whole file)
    assert "grep -c PATTERN FILE counts only the lines that match" in body([*prompt, *read])["messages"][-1]["content"]
    silent = _turn("Bash", {"command": "true"}, "", 2)       # printed nothing: measured nothing
    assert not _offers_answer(p, [*prompt, *read, *silent])
    wc = _turn("Bash", {"command": "wc -w poem.txt"}, "11 poem.txt", 3)
    assert _offers_answer(p, [*prompt, *read, *wc])
    # a question about contents, or a file whose name holds the word, is answered from the Read
    for question in ("What is on line one of poem.txt?", "What does count.py print?"):
        assert _offers_answer(p, [{"role": "user", "content": question}, *read])
    # a change that uses the word is no question: made and checked, it may be answered
    change = [{"role": "user", "content": "Make run.sh executable."}]
    chmod = _turn("Bash", {"command": "chmod +x run.sh"}, "", 4)
    look = _turn("Read", {"command": "run.sh"}, "     1\techo hi", 5)
    assert _offers_answer(p, [*change, *chmod, *look])


def test_a_copy_or_move_of_files_is_offered_no_tool_that_writes_files():
    from codeloop.session.local_profile import change_rules

    p = LocalProvider(LocalRuntime(Path("m.gguf"), alias="m"), descriptions=SHORT_DESCRIPTIONS,
                      base_url="http://127.0.0.1:9/v1", rules=change_rules())

    def offered(content):
        msgs = [{"role": "user", "content": content}]
        schema = p.request_body(ModelRequest(model="local", messages=msgs, tools=EDIT_TOOLS, max_tokens=64))
        return [o["properties"]["name"]["const"] for o in schema["response_format"]["json_schema"]["schema"]["anyOf"]]

    assert offered("Copy logo.svg into the assets folder.") == ["Read", "Bash"]
    assert offered("Make a copy of a.txt named b.txt.") == ["Read", "Bash"]
    # moving or renaming a file too, not renaming a name inside one
    assert offered("Rename draft.md to final.md.") == ["Read", "Bash"]
    assert offered("Move every .png file here into images.") == ["Read", "Bash"]
    assert offered("Rename f to g in a.py.") == ["Read", "Edit", "Bash"]
    assert offered("In a.py, rename the function f to g.") == ["Read", "Edit", "Bash"]


def test_a_change_is_not_done_until_the_command_it_needs_has_run():
    from codeloop.session.local_profile import change_rules

    p = LocalProvider(LocalRuntime(Path("m.gguf"), alias="m"), descriptions=SHORT_DESCRIPTIONS,
                      base_url="http://127.0.0.1:9/v1", rules=change_rules())

    def body(msgs):
        return p.request_body(ModelRequest(model="local", messages=msgs, tools=EDIT_TOOLS, max_tokens=64))

    def offered(msgs):
        return [o["properties"]["name"]["const"] if "name" in o["properties"] else "answer"
                for o in body(msgs)["response_format"]["json_schema"]["schema"]["anyOf"]]

    prompt = [{"role": "user", "content": "Create run.sh that prints ready, and make it executable."}]
    write = _turn("Edit", {"command": "run.sh"}, "File created successfully at: run.sh", 1)
    look = _turn("Read", {"command": "run.sh"}, "     1\techo ready", 2)
    assert offered([*prompt, *write]) == ["Bash"]            # written, not yet executable: only the shell
    assert offered([*prompt, *write, *look]) == ["Bash"]
    assert "needs the command chmod +x" in body([*prompt, *write, *look])["messages"][-1]["content"]
    chmod = _turn("Bash", {"command": "chmod +x run.sh"}, "", 3)
    assert not _offers_answer(p, [*prompt, *write, *chmod])  # silent: looked at first
    ls = _turn("Read", {"command": "run.sh"}, "     1\techo ready", 4)
    assert _offers_answer(p, [*prompt, *write, *chmod, *ls])
    # a question with the word asks for no command to be run on a file
    question = [{"role": "user", "content": "Which scripts in bin are executable?"}]
    listing = _turn("Bash", {"command": "ls -l bin"}, "-rwxr-xr-x 1 a a 3 b.sh", 5)
    assert _offers_answer(p, [*question, *listing])
