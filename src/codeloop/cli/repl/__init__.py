"""The interactive front end: `codeloop` without -p.

    app.py          the Repl: opens its session through the assembly, the prompt, toolbar, exit
    input_flow.py   echo and queueing of what is typed, Ctrl+D/Ctrl+O, the progress feed
    render.py       events → ANSI cells above the prompt
    cells.py        a tool call's title and body, a human line for results written for the model
    footer.py       under the input: the custom status line, vim mode (toggle_vim)
    statusline.py   settings statusLine: runs the command off the keystroke path, keeps its line
    progress.py     the live status lines (spinner, tokens, cost, Bash tail, subagents)
    keys.py         key bindings, behind the KeyActions protocol
    complete.py     `/` and `@` completion
    picker.py       the searchable list (/resume)
    dialogs/        the questions asked of the user while the session runs
"""
