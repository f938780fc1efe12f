"""Writes of the commands that bring files in from an archive or the network, for `shell_writes`.

Owns `fetcher_targets`: the archive `tar` creates (extraction writes names only the archive
knows: unknown), the file `curl -o`/`wget -O` saves (a name taken from the URL is unknown), and
the local destination of `rsync`/`scp`. Pure functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable


def fetcher_targets(name: str, args: list[str], add: Callable[[str, int, str], None],
                    out: list[tuple[str | None, str]]) -> list[tuple[str | None, str]]:
    """tar (the archive it creates; extraction writes unknown names), curl/wget (`-o`/`-O` file;
    a name taken from the URL is unknown), rsync/scp (the local destination)."""
    if name == "tar":
        clusters = "".join(a.lstrip("-") for k, a in enumerate(args)
                           if (k == 0 and not a.startswith("--")) or (a.startswith("-") and not a.startswith("--")))
        if "x" in clusters or any(a in ("--extract", "--get") for a in args):
            return [(None, "tar extraction")]
        for k, a in enumerate(args):
            if a.startswith("--file="):
                add(a[7:], k, "tar archive")
            elif k + 1 < len(args) and (a in ("-f", "--file") or (
                    "f" in a and not a.startswith("--") and (a.startswith("-") or k == 0))):
                add(args[k + 1], k + 1, "tar archive")
        return out
    if name in ("curl", "wget"):
        valued = ("-o", "--output") if name == "curl" else ("-O", "--output-document")
        letter = valued[0][1]
        for k, a in enumerate(args):
            cluster = a[1:] if a.startswith("-") and not a.startswith("--") else ""
            if (a in valued or cluster.endswith(letter)) and k + 1 < len(args):
                add(args[k + 1], k + 1, f"{name} output")          # `-o f`, `-so f`, `-qO f`
            elif letter in cluster:
                add(cluster.split(letter, 1)[1], k, f"{name} output")   # `-ofile`
            elif a.startswith(valued[1] + "="):
                add(a.split("=", 1)[1], k, f"{name} output")
            elif (name == "curl" and a in ("-O", "--remote-name", "-J", "--output-dir")) or \
                    (name == "wget" and a in ("-P", "--directory-prefix")):
                out.append((None, f"{name} output"))
        if name == "wget" and not out:
            out.append((None, "wget output"))          # saved under a name taken from the URL
        return out
    positional = [(k, a) for k, a in enumerate(args) if not a.startswith("-")]
    if len(positional) >= 2 and ":" not in positional[-1][1]:
        add(positional[-1][1], positional[-1][0], f"{name} destination")
    return out
