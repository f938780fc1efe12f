"""The embedded local model: llama.cpp's own server, in-process, behind the OpenAI-compatible provider.

`LocalRuntime` starts `xllamacpp.Server` (the `codeloop[local]` extra) on 127.0.0.1 with a free
port the server picks itself, and stops it when codeloop closes the provider (or, as a last
resort, at interpreter exit) — no child process, nothing left listening. `LocalProvider` is an
`OpenAICompatProvider` pointed at it that always uses schema-constrained tool calls
(`constrained.py`): the llama.cpp server enforces JSON Schema, and the small models it runs
write reliable calls only under a grammar.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codeloop.providers.base import ModelRequest
from codeloop.providers.local_model import LocalModelError
from codeloop.providers.openai_compat import OpenAICompatProvider
from codeloop.providers.openai_translate import StreamTranslator, chat_body
from codeloop.providers.text_tools import ANSWER_KEY

DEFAULT_CONTEXT = 16_384
# Low but not zero: greedy decoding makes small models repeat themselves in loops.
DEFAULT_TEMPERATURE = 0.2
RUNTIME_HINT = "pip install 'codeloop[local]' (the embedded llama.cpp runtime, xllamacpp)"


def context_size(env: Mapping[str, str] | None = None) -> int:
    value = (os.environ if env is None else env).get("CODELOOP_LOCAL_CONTEXT", "")
    return int(value) if value.strip().isdigit() and int(value) >= 512 else DEFAULT_CONTEXT


class LocalRuntime:
    """One in-process llama.cpp server for one model file."""

    def __init__(self, model_path: Path, *, alias: str, n_ctx: int = DEFAULT_CONTEXT,
                 threads: int | None = None) -> None:
        self.model_path, self.alias, self.n_ctx = model_path, alias, n_ctx
        self.threads = threads or max(1, os.cpu_count() or 1)
        self._server: Any = None
        self._lock = threading.Lock()
        self.base_url = ""

    def start(self) -> str:
        """Load the model and listen; returns the OpenAI base URL (…/v1). Blocks while loading."""
        try:
            import xllamacpp
        except ImportError:
            raise LocalModelError(f"the local model runtime is not installed: {RUNTIME_HINT}") from None
        p = xllamacpp.CommonParams()
        p.model.path = str(self.model_path)
        p.model_alias = {self.alias}
        p.hostnames = ["127.0.0.1"]   # loopback only
        p.port = 0                    # the server binds a free port and reports it
        p.n_ctx = self.n_ctx
        p.n_parallel = 1
        p.cpuparams.n_threads = self.threads
        p.cpuparams_batch.n_threads = self.threads
        p.verbosity = -1
        p.warmup = False
        p.use_jinja = True
        try:
            server = xllamacpp.Server(p)
        except Exception as exc:  # noqa: BLE001 — the runtime raises plain RuntimeErrors
            raise LocalModelError(f"the local model failed to load from {self.model_path}: {exc}") from None
        with self._lock:
            self._server = server
        self.base_url = str(server.listening_address).rstrip("/") + "/v1"
        atexit.register(self.stop)
        return self.base_url

    def stop(self) -> None:
        # Dropping the last reference runs the server's destructor, which joins its threads.
        with self._lock:
            server, self._server = self._server, None
        del server

    @property
    def running(self) -> bool:
        return self._server is not None


class LocalProvider(OpenAICompatProvider):
    """The OpenAI-compatible provider on the embedded server, with constrained tool calls."""

    def __init__(self, runtime: LocalRuntime, *, descriptions: Mapping[str, str] | None = None,
                 input_defaults: Mapping[str, dict[str, Any]] | None = None, tool_first: bool = True,
                 rules: Any = None, extra_args: Mapping[str, tuple[str, ...]] | None = None,
                 fix_input: Any = None, transport: Any = None, base_url: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(api_key="", base_url=base_url or runtime.base_url, transport=transport,
                         require_key=False, name="local", **kwargs)
        self.runtime = runtime
        self.descriptions = dict(descriptions or {})
        self.tool_first = tool_first
        self.rules = rules   # constrained.ChangeRules: when a change must be made and checked
        self.input_defaults = {k: dict(v) for k, v in (input_defaults or {}).items()}
        self.extra_args = dict(extra_args or {})   # per tool: optional arguments offered as required
        self.fix_input = fix_input   # (name, input, the user's request) -> input, for each call the model writes

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        from codeloop.providers.constrained import constrained_body

        if not request.tools:  # side requests (compaction summaries, labels) are plain text
            body = chat_body(request, max_tokens_field=self.max_tokens_field, send_tools=False)
        else:
            body = constrained_body(request, max_tokens_field=self.max_tokens_field,
                                    descriptions=self.descriptions, tool_first=self.tool_first,
                                    rules=self.rules, extra_args=self.extra_args)
        body.setdefault("temperature", DEFAULT_TEMPERATURE)
        body.update(self.cache_options())
        return body

    def cache_options(self) -> dict[str, Any]:
        """llama.cpp's prompt cache, kept warm across turns: each turn's prompt is the previous
        one plus the newest call and result, so with the cache kept in one slot the server
        re-reads only the new tokens (prompt reading, ~50 tok/s on 2 cores, is most of a turn).
        The embedded server has one slot; a server the user runs may have several, and pinning
        them all to slot 0 would serialise its other clients, so there the server picks."""
        options: dict[str, Any] = {"cache_prompt": True}
        if self.runtime.running:
            options["id_slot"] = 0
        return options

    def translator(self, request: ModelRequest) -> StreamTranslator:
        fixing = self.rules is not None or self.fix_input is not None
        from codeloop.providers.request_rules import cut_pasted_report

        return StreamTranslator(request.model, tool_names=[t["name"] for t in request.tools if "name" in t],
                                answer_key=ANSWER_KEY, input_defaults=self.input_defaults,
                                fix_input=self._fixer(request) if fixing else None,
                                fix_answer=cut_pasted_report if self.rules is not None else None)

    def _fixer(self, request: ModelRequest) -> Any:
        """The profile's `fix_input` — kept only when it reveals nothing the model was not shown
        (`reveals_nothing`: the fixes read files outside the permission checks) — then: a change
        that already worked, made again exactly, is made a Read of its file instead
        (`repeats_a_change`): a look at what it did, not a second go."""
        from codeloop.providers.request_rules import repeats_a_change, request_of, reveals_nothing

        def fix(name: str, inp: dict[str, Any]) -> dict[str, Any] | tuple[str, dict[str, Any]]:
            if self.fix_input is not None:
                fixed = self.fix_input(name, inp, request_of(request.messages))
                inp = fixed if reveals_nothing(request.messages, inp, fixed) else inp
            if (self.rules is not None and isinstance(inp.get("file_path"), str)
                    and repeats_a_change(request.messages, self.rules, name, inp)):
                return "Read", {"file_path": inp["file_path"]}
            return inp
        return fix

    async def aclose(self) -> None:
        try:
            await super().aclose()
        finally:
            self.runtime.stop()


def start_local_provider(spec: str | None, models_dir: Path, *, progress: Any = None,
                         descriptions: Mapping[str, str] | None = None,
                         input_defaults: Mapping[str, dict[str, Any]] | None = None,
                         base_url: str | None = None, rules: Any = None,
                         **profile: Any) -> tuple[LocalProvider, str]:
    """Resolve `--model local[:spec]`, start the runtime and return (provider, model name).

    With `base_url` (CODELOOP_LOCAL_BASE_URL: a llama.cpp server the user runs, or a test's
    fake one) nothing is loaded or started; the profile and constrained calls still apply.
    `profile`: the rest of the local profile's steering (`extra_args`, `fix_input`)."""
    from codeloop.providers.local_model import resolve_model_file

    if base_url:
        name = model_name(spec)
        return LocalProvider(LocalRuntime(Path(name), alias=name), descriptions=descriptions,
                             input_defaults=input_defaults, base_url=base_url.rstrip("/"),
                             rules=rules, **profile), name
    path, name = resolve_model_file(spec, models_dir, progress)
    name = model_name(name)
    runtime = LocalRuntime(path, alias=name, n_ctx=context_size())
    runtime.start()
    return LocalProvider(runtime, descriptions=descriptions, input_defaults=input_defaults,
                         rules=rules, **profile), name


def model_name(name: str | None) -> str:
    """`local` or `local/<model>`: the prefix keeps every local model on the free, 16k-window
    row of the model table, whatever its file is called."""
    name = (name or "").strip()
    return f"local/{name}" if name and name != "local" else "local"
