"""Read's documents that are not text files: PDFs (read_pdf.py) and Jupyter notebooks (read_notebook.py).

Kept apart from read.py so plain reads never import them. Read takes the read record (so
NotebookEdit, like Edit, can insist the notebook was read and is unchanged since).
"""

from __future__ import annotations

from pathlib import Path

from codeloop.tools.base import ToolContext, ToolResult


def read_document(path: Path, data: bytes, pages: str | None, ctx: ToolContext) -> ToolResult:
    """`data`: the file's bytes, read by Read from the descriptor it checked (no-follow, inode)."""
    if path.suffix.lower() == ".pdf":
        from codeloop.tools.builtin.read_pdf import read_pdf

        # Page images only for models that take images (providers may say otherwise).
        result = read_pdf(path, data, pages, images=ctx.images_supported)
    else:
        from codeloop.tools.builtin.read_notebook import read_notebook

        result = read_notebook(path, data)
    return result
