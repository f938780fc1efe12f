"""A fake front end and a real Conversation on the scripted API, for the input-layer tests."""

from __future__ import annotations

from codeloop.input.commands import CommandRegistry
from codeloop.input.dispatch import Dispatcher
from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.providers.anthropic import AnthropicProvider
from codeloop.session.conversation import Conversation, ConversationConfig
from codeloop.tools.registry import builtin_tools


def make_conv(api, cwd, *, mode=PermissionMode.BYPASS, deny=()):
    cfg = ConversationConfig(cwd=cwd, model="claude-sonnet-4-5", tools=builtin_tools(), system_prompt=["test"],
                             user_context={}, policy=PermissionPolicy(mode=mode, cwd=cwd, deny=list(deny)))
    provider = AnthropicProvider(api_key="k", base_url="http://fake", transport=api.transport())
    return Conversation(cfg, provider, session_id="11111111-2222-4333-8444-555555555555")


class FakeFront:
    def __init__(self, conv, choices=()):
        self.conv = conv
        self.shown: list[tuple[str, str]] = []
        self.events = []
        self.exited = False
        self.choices = list(choices)
        self.finished: list[tuple[float, bool]] = []
        self.on_event = None

    def show(self, text, *, style=""):
        self.shown.append((text, style))

    async def render_events(self, events):
        async for ev in events:
            self.events.append(ev)

    async def choose(self, title, options):
        self.shown.append((title, "choice"))
        return self.choices.pop(0) if self.choices else None

    async def switch_conversation(self, conv, *, reason):
        old, self.conv = self.conv, conv
        await old.aclose(reason)

    def request_exit(self):
        self.exited = True

    def render_event(self, ev):
        self.events.append(ev)
        if self.on_event:
            self.on_event(ev)

    def query_started(self):
        pass

    def query_finished(self, duration_s, aborted):
        self.finished.append((duration_s, aborted))

    def text(self) -> str:
        return "\n".join(t for t, _ in self.shown)


def make_dispatcher(api, cwd, **kw):
    conv = make_conv(api, cwd, **{k: v for k, v in kw.items() if k in ("mode", "deny")})
    front = FakeFront(conv, kw.get("choices", ()))
    registry = CommandRegistry.load(cwd, cwd / ".cfg", home=cwd / "home")
    d = Dispatcher(front, registry, **{k: v for k, v in kw.items() if k in ("idle_return", "clock", "idle_after_s",
                                                                          "idle_min_tokens")})
    return d, front
