"""The REPL's footer under the input: the custom status line and the vim mode indicator.

Owns when the status line (`repl.statusline`, settings `statusLine`) is told that something it
could show changed — the ticker pokes it with `status_signature()` ten times a second, which
costs a tuple — and the input's editing mode: settings `editorMode: "vim"` starts the prompt in
prompt_toolkit's vi mode (insert mode first, Esc for normal mode, as Claude Code's vim mode), the
mode shown as `-- INSERT --` / `-- NORMAL --` before the permission mode. `toggle_vim(repl)`
switches it for this session: `/vim` calls it through its host (`Repl.toggle_vim`), since the
input layer cannot import the REPL. A mixin of `repl.Repl`.
"""

from __future__ import annotations

from typing import Any

# prompt_toolkit's InputMode values → the names vim (and Claude Code's status line JSON) use
VIM_LABELS = {"vi-insert": "INSERT", "vi-insert-multiple": "INSERT", "vi-navigation": "NORMAL",
              "vi-replace": "REPLACE", "vi-replace-single": "REPLACE"}


class FooterMixin:
    options: Any
    conv: Any
    renderer: Any
    session: Any
    started_at: float
    status_line: Any = None              # a repl.statusline.StatusLine when settings ask for one
    _vim: bool | None = None             # None: as settings `editorMode` says

    def _invalidate(self) -> None: ...

    # -- vim -------------------------------------------------------------------------------------
    @property
    def vim_on(self) -> bool:
        if self._vim is None:
            from codeloop.session.options import EditorMode
            self._vim = self.options.interface.editor_mode is EditorMode.VIM
        return self._vim

    def editing_mode(self) -> Any:
        from prompt_toolkit.enums import EditingMode

        return EditingMode.VI if self.vim_on else EditingMode.EMACS

    def vim_mode(self) -> str | None:
        """INSERT, NORMAL, VISUAL or REPLACE while vim mode is on; None when it is off."""
        if not self.vim_on:
            return None
        app = self.session.app if self.session is not None else None
        if app is None:
            return "INSERT"
        if app.current_buffer.selection_state is not None:
            return "VISUAL"
        return VIM_LABELS.get(app.vi_state.input_mode.value, "NORMAL")

    def toggle_vim(self) -> bool:
        return toggle_vim(self)

    # -- the footer ---------------------------------------------------------------------------------
    def footer_parts(self) -> list[tuple[str, str]]:
        """The status line's fragments (a line of their own), then the vim mode before the mode line."""
        parts: list[tuple[str, str]] = []
        if self.status_line is not None and self.status_line.fragments:
            parts += [*self.status_line.fragments, ("", "\n")]
        mode = self.vim_mode()
        if mode is not None and not (self.status_line is not None and self.status_line.opts.hide_vim_mode):
            parts.append(("class:vim", f"-- {mode} --"))
        return parts

    def status_signature(self) -> tuple[Any, ...]:
        c = self.conv
        return (c.session_id, len(c.messages), round(c.cost_usd, 6), c.config.model, c.config.policy.mode,
                self.vim_mode(), str(c.tool_context.cwd), self.renderer.lines_added, self.renderer.lines_removed)

    def start_footer(self) -> None:
        opts = self.options.interface.status_line
        if opts is None:
            return
        from codeloop.cli.repl.statusline import StatusLine, status_input

        def payload() -> dict[str, Any]:
            return status_input(self.conv, started_at=self.started_at, vim_mode=self.vim_mode(),
                                lines=(self.renderer.lines_added, self.renderer.lines_removed))
        self.status_line = StatusLine(opts, payload, lambda: self.conv.tool_context.cwd, self._invalidate)
        self.status_line.start()
        self.poke_footer()

    def poke_footer(self) -> None:
        if self.status_line is not None:
            self.status_line.poke(self.status_signature())

    def stop_footer(self) -> None:
        if self.status_line is not None:
            self.status_line.stop()


def toggle_vim(repl: Any) -> bool:
    """Vim mode on or off for this session (the REPL's input); True when it is on now. Takes a
    `repl.Repl` (anything with FooterMixin): the `/vim` command's host."""
    from prompt_toolkit.key_binding.vi_state import InputMode

    repl._vim = not repl.vim_on
    if repl.session is not None:
        repl.session.editing_mode = repl.editing_mode()
        repl.session.app.vi_state.input_mode = InputMode.INSERT
    repl.poke_footer()
    repl._invalidate()
    return bool(repl._vim)
