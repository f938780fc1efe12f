"""The headless front ends (`-p`), whose every line has Claude Code's shape.

    print_mode.py    one prompt: text | json | stream-json out, exit status, signals
    stream_json.py   the multi-turn JSONL session the SDKs drive (--input-format stream-json)
    control.py       the SDK control protocol's messages and simple answers
    sdk_glue.py      what an SDK brings: hook callbacks, agents, in-process MCP servers, mirror
    output.py        result lines, exit statuses and the event Printer (shared by the two above)
"""
