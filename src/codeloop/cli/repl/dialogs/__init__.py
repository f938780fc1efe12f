"""The REPL's questions to the user while a session runs.

    choice.py       the mechanism: a numbered choice or a picker in the toolbar, one at a time
    permission.py   "may this tool run?" and what "don't ask again" means per tool
    tool_forms.py   the forms of AskUserQuestion and ExitPlanMode
"""
