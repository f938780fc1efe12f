"""Read of a Jupyter notebook (.ipynb): every cell with its id, source and outputs, images as image blocks.

The notebook is plain JSON (nbformat 4), so reading needs no dependency; NotebookEdit uses
nbformat to validate what it writes. Text outputs are cut per output so one noisy cell cannot
flood the context; PNG/JPEG/GIF outputs become image content blocks the model can see.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codeloop.tools.base import ToolError, ToolResult

MAX_OUTPUT_CHARS = 10_000
MAX_IMAGES = 20
_IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _clip(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return text[:MAX_OUTPUT_CHARS] + f"\n... [output truncated: {len(text) - MAX_OUTPUT_CHARS} more characters]"


def load_notebook(path: Path, data: bytes | None = None) -> dict[str, Any]:
    """The notebook's JSON; `data` (bytes read from a checked descriptor) spares reopening by name."""
    try:
        nb = json.loads(data.decode("utf-8") if data is not None else path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ToolError(f"{path} is not a valid notebook: its JSON does not parse ({exc}).") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ToolError(f"{path} is not a valid notebook: it has no cells list.")
    return nb


def cell_id(cell: dict[str, Any], index: int) -> str:
    """The cell's id (nbformat ≥ 4.5), or `cell-N` for older notebooks without ids (as Claude Code)."""
    cid = cell.get("id")
    return str(cid) if cid else f"cell-{index}"


def _outputs(cell: dict[str, Any], images: list[dict[str, Any]]) -> list[str]:
    parts: list[str] = []
    for out in cell.get("outputs") or []:
        kind = out.get("output_type")
        if kind == "stream":
            parts.append(_clip(_text(out.get("text"))))
        elif kind == "error":
            tb = "\n".join(_text(line) for line in out.get("traceback") or [])
            parts.append(_clip(f"{out.get('ename', 'Error')}: {out.get('evalue', '')}\n{tb}".rstrip()))
        elif kind in ("execute_result", "display_data"):
            data = out.get("data") or {}
            image = next((m for m in _IMAGE_MIMES if m in data), None)
            if image is not None and len(images) < MAX_IMAGES:
                images.append({"type": "image", "source": {"type": "base64", "media_type": image,
                                                           "data": _text(data[image]).replace("\n", "")}})
                parts.append(f"[image output {len(images)}: {image}]")
            if "text/plain" in data:
                parts.append(_clip(_text(data["text/plain"])))
            elif "text/markdown" in data:
                parts.append(_clip(_text(data["text/markdown"])))
    return parts


def render_notebook(nb: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """(text of all cells, image blocks of their outputs)."""
    lang = ((nb.get("metadata") or {}).get("language_info") or {}).get("name") or "python"
    images: list[dict[str, Any]] = []
    chunks: list[str] = []
    for i, cell in enumerate(nb["cells"]):
        ctype = cell.get("cell_type", "code")
        head = f'<cell id="{cell_id(cell, i)}">'
        if ctype != "code":
            head += f"<cell_type>{ctype}</cell_type>"
        elif cell.get("execution_count") is not None:
            head += f"<execution_count>{cell['execution_count']}</execution_count>"
        body = _text(cell.get("source"))
        outs = _outputs(cell, images) if ctype == "code" else []
        text = f"{head}{body}</cell>"
        if outs:
            text += "\n<outputs>\n" + "\n".join(outs) + "\n</outputs>"
        chunks.append(text)
    header = f"Jupyter notebook ({lang}), {len(nb['cells'])} cells"
    return header + "\n\n" + "\n\n".join(chunks), images


def read_notebook(path: Path, data: bytes) -> ToolResult:
    nb = load_notebook(path, data)
    text, images = render_notebook(nb)
    content: str | list[dict[str, Any]] = [{"type": "text", "text": text}, *images] if images else text
    return ToolResult(content, data={"type": "notebook", "file": {"filePath": str(path),
                                                                  "cells": len(nb["cells"])}})
