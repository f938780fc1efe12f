"""The local-model profile: what codeloop changes when a small model runs on this machine.

A 0.5–1.5B model on two CPU cores needs a short request (prompt processing is ~50–80 tok/s: the
full ~4.1k-token request would take 75–100 s per turn, this one ~900 tokens) and few tools, and
it must never run unsupervised (small models issue `rm -f` and edit files nobody asked about).
So `--model local` gets: a short system prompt with the rules that mattered most in
measurements (do nothing unrequested; make a requested change with tools and check it before
answering; answer as soon as a result answers the question, in the model's own words), a
worked example of a call, a check and an answer and one of a count answered from what a command
printed, only Read, Edit, Write, Bash, Glob and Grep with one-line descriptions (Bash's names the
command for each kind of file change), schema-constrained calls (the provider's job; an Edit's
new text never empty unless the request asks to remove something), the
sandbox switched on through settings (`sandbox.enabled`, read by
the sandbox layer where it exists) and never bypassPermissions.

The call fixes are `local_fixes.py`'s. Also owns starting the embedded model, when it is the
default (no key set and no model chosen, the model installed: `keyless_default`, decided at the
door) and the no-key error that names it or the one command that installs it (the progress bar
and the start-up line are the front ends': `cli.startup.local_offer`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

LOCAL_TOOLS = ("Read", "Edit", "Write", "Bash", "Glob", "Grep")
# in the order the model sees them: the first tools are the ones most tasks need
SHORT_DESCRIPTIONS = {
    "Read": "show a file's contents with line numbers (use it to answer questions about a file, and before Edit)",
    # whole lines: given a free choice, small models replace one word ("debug" by "true" in a
    # JSON file, "count" found three times) and break the line or fail as not unique
    "Edit": "change lines of an existing file: old_string is the whole line or lines to change, copied exactly "
            "from Read without the line numbers, new_string what those lines become; replace_all true replaces "
            "every occurrence of old_string (a name used in several places), false only one",
    # without the pointer a small model "copies" a file by writing out what it remembers of it
    "Write": "create a new file with the content you write, or replace a whole file (to copy a file: Bash cp)",
    # what each kind of file change needs, as commands: small models otherwise empty a file with
    # Edit when asked to delete it, or write a script and never make it executable
    # sizes, counts and permissions too: told only "count (wc -l)", a small model answers "which is
    # largest / how many words / which are executable" from a Glob listing of names, by guessing
    "Bash": "run a shell command and see its output: run a program (python3 x.py), count lines or words "
            "(wc -l, wc -w), see sizes and permissions (ls -l), delete (rm), move or rename (mv), copy (cp), "
            "make executable (chmod +x), replace a name everywhere in a file (sed -i)",
    # no literal example patterns here or in Grep's: a small model searches for the examples themselves
    # "(folder/* …)": asked for the largest file in a folder, a small model made up a kind (data/*.txt)
    "Glob": "list the names of the files whose paths match a glob pattern made from the folder and file kind in "
            "the request (the folder and * when it names no kind; names only: no sizes, lines or permissions)",
    "Grep": "search inside all files for a name or regular expression taken from the question (ignoring "
            "case); shows each matching line with its file name, and how many lines and files matched (to count "
            "the lines or files that mention a word)",
}
# Arguments the constrained calls cannot carry (only required ones are offered): Grep shows the
# matching lines themselves, which answers most "where is…/what is…" questions in one call. Case
# is ignored: a small model searches for the question's spelling ("Dana" for a file's "dana"),
# finds nothing and answers "not there"; a few extra lines it can read cost less.
INPUT_DEFAULTS = {"Grep": {"output_mode": "content", "-n": True, "head_limit": 50, "-i": True}}
# Optional arguments the local model must decide on every call: Edit's replace_all (offered only
# as an option, a small model never sets it, and a name used twice fails as "not unique").
EXTRA_ARGUMENTS = {"Edit": ("replace_all",)}
# When the final answer waits for a change (`providers.constrained.ChangeRules`): a request
# worded as a change (and not a question) needs an Edit, a Write or a file-changing command
# first, and after Edit, Write or a command that printed nothing, a check comes before the answer.
CHANGE_VERBS = ("rename", "delete", "remove", "move", "create", "make", "write", "add", "append", "fix",
                "change", "set", "update", "replace", "edit", "insert", "copy", "chmod")
CHANGE_COMMANDS = (r"\b(rm|mv|cp|chmod|touch|mkdir|tee|ln|truncate|patch)\b|\bsed\s+(-\w+\s+)*-i|"
                   r"(^|[^2&])>")
# A question these words ask is answered from what a command printed (wc, ls -l, grep -c): asked
# how many words, which file is longest or which scripts are executable, small models answer from
# a Read or a listing of names by guessing. Changes are not questions, so "make it executable" is not one.
MEASURE_WORDS = (r"\bhow (many|much|big|large|long)\b|\b(count|number of|largest|smallest|biggest|longest|"
                 r"shortest|most|fewest|sizes?|executable|permissions?)\b(?!\.\w)")  # not a file's name (count.py)
# A question about which files or lines mention, contain or use a word needs a search of contents
# (Grep), and a count of them is read from Grep's own tally ("(3 matching lines in 1 file)"):
# small models list files by name and answer "all of them", or run `wc -l` on the whole file.
# Functions, classes and methods defined in a file are found the same way ("def "), and counted
# from the tally's indented and top-level lines: asked for the top-level functions, a small model
# held to a command ran `grep -c 'def '` and counted the methods too.
SEARCH_QUESTION = (r"\b(files?|lines?|scripts?|modules?|functions?|classes|methods?)\b.*\b(mentions?|mentioning|"
                   r"contains?|containing|refers?|referring|includes?|including|imports?|importing|calls?|calling|"
                   r"says?|saying|uses?|using|defines?|defined|defining)\s+\w")
# Copying, moving or renaming a file is a command's job (cp, mv): offered Write, a small model
# writes the copy out from memory (a line or the final newline lost) and leaves the original.
# "Rename the function f" names no file after the verb, so Edit stays on offer there.
SHELL_ONLY = (r"\b(copy|copies|duplicate)\b|\b(move|rename)\s+(\S+\.\w+\b|every\b|all\b|"
              r"the (files?|folders?|directory)\b)")
# A change these words ask for is done only by this command: asked to write a script and make it
# executable, small models write it, look at it and declare it done.
NEEDED_COMMANDS = ((r"\bexecutable\b", r"\bchmod\b", "chmod +x"),)
# Unless the request asks to remove something, an Edit's new text may not be empty: asked to
# comment out or change a line, a small model writes an empty new_string and deletes the line.
KEEP_TEXT = (("Edit", "new_string"),)
# (the ways people ask for removal: a request that says any of them may empty a text, as before)
REMOVAL_WORDS = (r"\b(delete[sd]?|remov(e|es|ed|ing)|drop|erase|strip|clear|empty|cut|eliminate|purge|wipe|unset|trim"
                 r"|get\s+rid\s+of|take\s+out|without|no\s+longer)\b")
LOCAL_SYSTEM_PROMPT = """\
You are codeloop, a coding assistant that works on the user's files through tools.
Rules:
- Never guess what a file contains or what a command prints: find out with a tool.
- A question about a named file: Read that file. To find which file defines or mentions something: \
Grep for its name (a function: "def " then its name). To list files by name: Glob. To run a program, or to \
count or compare lines, words, sizes or permissions: Bash (wc, ls -l), then answer from what it prints.
- Do only what the user asked. Never change, create or delete files unless the user asked for it.
- Asked for a change, make it with tools; never only describe it. To change a file's text, Read it first, \
then Edit it: old_string the whole lines to change, copied exactly from what you read, new_string those \
lines as they should be. To delete, move, rename or chmod a file: Bash.
- Count or list only the kind of file the user named.
- As soon as a tool result answers the question, give your final answer. Never repeat a tool call.
- If a tool finds nothing, try another tool before you answer.
- Before the final answer to a change, look with a tool that it happened (Read, Glob or Grep).
- Paths are relative to the working directory. The final answer is one or two sentences in your own words \
with the actual names, numbers or text you found; never copy a tool's output into it.
Example (the user asked: change colour to color everywhere in notes.txt):
{"name": "Bash", "arguments": {"command": "sed -i 's/colour/color/g' notes.txt"}}
Result of Bash: (no output)
{"name": "Read", "arguments": {"file_path": "notes.txt"}}
Result of Read:
     1\tthe color of the sky
     2\ta color chart
{"answer": "notes.txt now says color on both of its lines."}
Example (the user asked: how many lines do the .log files in logs have?):
{"name": "Bash", "arguments": {"command": "wc -l logs/*.log"}}
Result of Bash:
   4 logs/a.log
  12 logs/b.log
  16 total
{"answer": "logs/a.log has 4 lines and logs/b.log has 12."}"""
# what the sandbox layer reads (settings key `sandbox.enabled`); a user setting still wins
SANDBOX_SETTINGS = {"sandbox": {"enabled": True}}
KEY_URL = "https://console.anthropic.com/settings/keys"


def change_rules() -> Any:
    from codeloop.providers.request_rules import ChangeRules

    return ChangeRules(check_after=("Edit", "Write"), request=r"\b(" + "|".join(CHANGE_VERBS) + r")\b",
                       shell_tool="Bash", commands=CHANGE_COMMANDS, measure=MEASURE_WORDS, shell_only=SHELL_ONLY,
                       needs=NEEDED_COMMANDS, search_tool="Grep", search_question=SEARCH_QUESTION,
                       keep_text=KEEP_TEXT, removal=REMOVAL_WORDS)


def steering() -> dict[str, Any]:
    """What the local provider applies to each request and call besides descriptions and rules:
    the extra arguments, and each call made to do what the model meant (`local_fixes.fix_call`)."""
    from codeloop.session.local_fixes import fix_call

    return {"extra_args": EXTRA_ARGUMENTS, "fix_input": fix_call}


def _with_sandbox(settings_arg: str | None) -> str:
    """`--settings` with the sandbox switched on underneath whatever the user passed."""
    if settings_arg is None:
        return json.dumps(SANDBOX_SETTINGS)
    text = settings_arg.strip()
    try:
        user = json.loads(text) if text.startswith("{") else json.loads(Path(text).expanduser().read_text())
    except (OSError, ValueError):
        return settings_arg  # the settings loader reports the bad value itself
    if not isinstance(user, dict):
        return settings_arg
    sandbox = {**SANDBOX_SETTINGS["sandbox"], **(user.get("sandbox") or {})}
    return json.dumps({**user, "sandbox": sandbox})


NO_BYPASS = ("the local model never runs with bypassPermissions: small models issue destructive "
             "commands; use --allowedTools or --permission-mode acceptEdits instead")


def profile(tools: list[str] | None, system_prompt: str | None,
            settings_arg: str | None) -> tuple[list[str], str, str, list[str]]:
    """(tools, system prompt, --settings value, warnings) narrowed to what a small local model can use."""
    warnings: list[str] = []
    if tools is None:
        tools = list(LOCAL_TOOLS)
    elif [t for t in tools if t not in LOCAL_TOOLS]:
        extra = [t for t in tools if t not in LOCAL_TOOLS]
        warnings.append(f"the local model profile offers only {', '.join(LOCAL_TOOLS)}; "
                        f"ignoring {', '.join(extra)}")
        tools = [t for t in tools if t in LOCAL_TOOLS]
    return tools, system_prompt if system_prompt is not None else LOCAL_SYSTEM_PROMPT, _with_sandbox(settings_arg), \
        warnings


def start_local(spec: str | None, *, progress: Any = None, notice: Any = None) -> tuple[Any, str]:
    """(provider, model name) for `--model local[:spec]`: the model assembled and verified if
    needed (`progress(done, total)` shows it), the runtime started. Raises LocalModelError."""
    import importlib.util
    import os

    from codeloop.providers.local import RUNTIME_HINT, start_local_provider
    from codeloop.providers.local_model import LocalModelError
    from codeloop.session.store import config_dir as _config_dir

    config_dir = _config_dir()

    base_url = os.environ.get("CODELOOP_LOCAL_BASE_URL", "").strip() or None
    if base_url:  # a llama.cpp server the user runs (or a test's fake one): nothing to load
        return start_local_provider(spec, config_dir / "models", descriptions=SHORT_DESCRIPTIONS,
                                    input_defaults=INPUT_DEFAULTS, base_url=base_url, rules=change_rules(),
                                    **steering())
    if importlib.util.find_spec("xllamacpp") is None:
        raise LocalModelError(f"the local model runtime is not installed: {RUNTIME_HINT}")
    if notice is not None:
        notice("loading the local model (a small model on this machine: expect slower, weaker answers than a "
               "hosted one)…")
    return start_local_provider(spec, config_dir / "models", progress=progress, descriptions=SHORT_DESCRIPTIONS,
                                input_defaults=INPUT_DEFAULTS, rules=change_rules(), **steering())


# What a machine with no key runs when nothing names a model: the bundled default, by its key,
# so `system/init` names the real model (`local/qwen2.5-coder-1.5b`) even behind a fake server.
KEYLESS_MODEL = "local:qwen2.5-coder-1.5b"
KEY_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "OPENROUTER_API_KEY")
# variables and settings keys by which someone chose a model or provider (then no default applies)
_CHOSEN_BY_ENV = ("ANTHROPIC_MODEL", "CODELOOP_PROVIDER")
INSTALL_COMMAND = "pip install 'codeloop[local,local-model]'"


def local_ready(config_dir: Path, env: Mapping[str, str] | None = None) -> bool:
    """The embedded model can serve without further installs: its runtime and the default model
    (chunk packages or an assembled file) are here, or `CODELOOP_LOCAL_BASE_URL` names a server."""
    import importlib.util
    import os

    from codeloop.providers.local_model import DEFAULT_KEY, is_installed, known_model

    env = os.environ if env is None else env
    if env.get("CODELOOP_LOCAL_BASE_URL", "").strip():
        return True
    model = known_model(DEFAULT_KEY)
    return (model is not None and importlib.util.find_spec("xllamacpp") is not None
            and is_installed(model, config_dir / "models"))


def keyless_default(settings: Any, config_dir: Path, env: Mapping[str, str] | None = None) -> bool:
    """The embedded model serves this run by default: no model or provider is chosen anywhere
    (flag, `ANTHROPIC_MODEL`, `CODELOOP_PROVIDER`, settings), no key for a hosted provider is set
    (environment, settings `env`, `apiKeyHelper`), and the model is installed. The caller has
    checked that no `--model` was given. With a key, nothing changes."""
    import os

    env = {**(os.environ if env is None else env), **settings.env()}
    if any(env.get(v) for v in _CHOSEN_BY_ENV) or settings.model() or settings.merged.get("provider"):
        return False
    if any(env.get(v) for v in KEY_VARIABLES) or settings.api_key_helper():
        return False
    return local_ready(config_dir, env)


def keyless_notice(model: str | None) -> str:
    """The one stderr line a keyless run starts with."""
    name = (model or "").removeprefix("local:") or "local"
    return (f"no API key: using the embedded local model {name} (a small model on this machine: slower and much "
            "weaker than Claude); set ANTHROPIC_API_KEY to use Claude")


def local_model_status(config_dir: Path) -> str:
    return "installed" if local_ready(config_dir) else f"install it with {INSTALL_COMMAND}"


def no_key_message(first_line: str, config_dir: Path) -> str:
    """The no-key error on one line: where to get a key, and the keyless way — the installed
    embedded model (`--model local`) or the one command that installs it — then other providers."""
    first = first_line.split(". ")[0].rstrip(".") + "."
    if local_ready(config_dir):
        keyless = "or run without one on this machine: --model local (the embedded model, installed)"
    else:
        keyless = f"or install the embedded local model, used when no key is set: {INSTALL_COMMAND} (about 1.1 GB)"
    return (f"{first} Get a key at {KEY_URL} and export ANTHROPIC_API_KEY, {keyless}. Other providers: "
            "--model openai:<model> (OPENAI_API_KEY), --model ollama:<model> (an Ollama server).")
