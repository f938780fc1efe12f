"""The OS sandbox for Bash on Linux (bubblewrap).

`layout.py` decides what the sandboxed filesystem looks like (writable roots, protected paths
kept read-only, Read-deny paths masked), `bwrap.py` turns that into a `bwrap` command line and
probes whether bwrap can start, `proxy.py` is the domain-filtering network proxy, and
`runtime.py` holds `Sandbox`, the object the permission policy and the Bash tool share.
`planted.py` finds and undoes configuration a call planted in subfolders (nested git config,
hooks, gitlinks, `.git` files, `.claude/`, `.codeloop/`, `.mcp.json`), with `gitconf.py` reading
git's config and index; `leftovers.py` removes placeholder mount points a dead process left.
Nothing is imported here: callers import the submodule they need (start-up time).
"""
