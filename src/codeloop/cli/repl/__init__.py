"""The interactive front end: `codeloop` without -p.

    app.py          the Repl: opens its session through the assembly, the prompt, toolbar, exit
    input_flow.py   echo and queueing of what is typed (Esc takes the queue back), Ctrl+D/Ctrl+O,
                    the progress feed
    render.py       events → ANSI cells above the prompt
    progress.py     the live status lines (spinner, tokens, cost, Bash tail, subagents)
    keys.py         key bindings, behind the KeyActions protocol
    complete.py     `/` and `@` completion, Enter on an open menu, the room a menu needs
    picker.py       the searchable list (/resume)
    dialogs/        the questions asked of the user while the session runs
"""
