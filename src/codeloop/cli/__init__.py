"""Front ends (layer 8, the top). Rooms that never import each other (import-linter checks it):

    main.py       the entry point: subcommands, parse, the headless door, the REPL door
    lifecycle.py  how a process ends when signals arrive (shared by the front ends)
    startup/      flags → RunOptions, once; the start-up questions; the local model's offer
    repl/         the interactive session: app, rendering, keys, completion, dialogs
    headless/     print mode, the stream-json session and the SDK control protocol
    commands/     `codeloop sessions`, `codeloop mcp`, `codeloop batch`

Every front end gets its session from `session.assembly`; none wires a capability itself.
"""
