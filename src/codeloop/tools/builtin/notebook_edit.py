"""The NotebookEdit tool: replace, insert or delete one Jupyter notebook cell, found by its id.

nbformat reads the notebook (upgrading old versions to 4) and validates the result before it is
written, so an edit never leaves a notebook Jupyter cannot open; it is an optional dependency
(`pip install 'codeloop[notebooks]'`), imported only when the tool runs. Like Edit, the notebook
must have been Read first and be unchanged since; the write is atomic (temp file + rename).
Permissions are Edit's: an edit tool, auto-allowed by acceptEdits inside the working directories.
"""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from codeloop.tools.base import Tool, ToolContext, ToolError, ToolResult

DESCRIPTION = """\
Completely replaces the contents of a specific cell in a Jupyter notebook (.ipynb file) with new source. \
Jupyter notebooks are interactive documents that combine code, text, and visualizations, commonly used for \
data analysis and scientific computing. The notebook_path parameter must be an absolute path, not a relative \
path. Cells are identified by cell_id (as shown by Read of the notebook). Use edit_mode=insert to add a new \
cell after the cell with cell_id (or at the beginning when cell_id is not given). Use edit_mode=delete to \
delete the cell with cell_id. You must Read the notebook before editing it."""


class CellType(str, Enum):
    CODE = "code"
    MARKDOWN = "markdown"


class EditMode(str, Enum):
    REPLACE = "replace"
    INSERT = "insert"
    DELETE = "delete"


class NotebookEditInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    notebook_path: str = Field(description="The absolute path to the Jupyter notebook file to edit (must be "
                                           "absolute, not relative)")
    cell_id: str | SkipJsonSchema[None] = Field(
        None, description="The ID of the cell to edit. When inserting a new cell, the new cell will be inserted "
                          "after the cell with this ID, or at the beginning if not specified.")
    new_source: str = Field(description="The new source for the cell")
    cell_type: CellType | SkipJsonSchema[None] = Field(
        None, description="The type of the cell (code or markdown). If not specified, it defaults to the current "
                          "cell type. If using edit_mode=insert, this is required.")
    edit_mode: EditMode | SkipJsonSchema[None] = Field(
        None, description="The type of edit to make (replace, insert, delete). Defaults to replace.")


def _nbformat() -> Any:
    try:
        import nbformat
    except ImportError:
        raise ToolError("NotebookEdit needs the nbformat package: pip install 'codeloop[notebooks]'") from None
    return nbformat


def _find(cells: list[Any], cid: str) -> int:
    from codeloop.tools.builtin.read_notebook import cell_id

    for i, cell in enumerate(cells):
        if cell_id(cell, i) == cid:
            return i
    if cid.isdigit() and int(cid) < len(cells):  # a bare index is what older Claude Code sent
        return int(cid)
    raise ToolError(f"Cell with ID \"{cid}\" not found in notebook.")


def _new_cell(nbf: Any, nb: Any, ctype: CellType, source: str) -> Any:
    maker = nbf.v4.new_code_cell if ctype is CellType.CODE else nbf.v4.new_markdown_cell
    cell = maker(source)
    if (nb.nbformat, nb.nbformat_minor) < (4, 5):
        cell.pop("id", None)  # ids are only valid from nbformat 4.5 on
    return cell


def _check_fresh(ctx: ToolContext, path: Path) -> None:
    record = ctx.read_files.get(str(path))
    if record is None:
        raise ToolError("File has not been read yet. Read it first before writing to it.")
    if path.stat().st_mtime_ns != record.mtime_ns:
        raise ToolError("File has been modified since read, either by the user or by a linter. "
                        "Read it again before attempting to write it.")


class NotebookEditTool(Tool):
    name: ClassVar[str] = "NotebookEdit"
    description: ClassVar[str] = DESCRIPTION
    input_model: ClassVar[type[BaseModel]] = NotebookEditInput

    async def call(self, inp: NotebookEditInput, ctx: ToolContext) -> ToolResult:
        from codeloop.tools.builtin.read import resolve_file_path, snapshot

        path = resolve_file_path(ctx, inp.notebook_path, self.name)
        if path.suffix != ".ipynb":
            raise ToolError("File must be a Jupyter notebook (.ipynb file). For editing other file types, use "
                            "the Edit tool.")
        if not path.is_file():
            raise ToolError(f"Notebook file does not exist: {path}")
        _check_fresh(ctx, path)
        mode = inp.edit_mode or EditMode.REPLACE
        if mode is EditMode.INSERT and inp.cell_type is None:
            raise ToolError("Cell type is required when using edit_mode=insert.")
        if mode is not EditMode.INSERT and not inp.cell_id:
            raise ToolError(f"cell_id is required for edit_mode={mode.value}.")
        nbf = _nbformat()
        try:
            nb = nbf.reads(path.read_text(encoding="utf-8"), as_version=4)
        except Exception as exc:  # noqa: BLE001 — nbformat raises many kinds for a bad file
            raise ToolError(f"{path} is not a valid notebook: {exc}") from None
        cells = nb.cells
        if mode is EditMode.INSERT:
            at = _find(cells, inp.cell_id) + 1 if inp.cell_id else 0
            cell = _new_cell(nbf, nb, inp.cell_type, inp.new_source)  # type: ignore[arg-type]
            cells.insert(at, cell)
            target = cell.get("id") or f"cell-{at}"
        else:
            at = _find(cells, inp.cell_id)  # type: ignore[arg-type]
            target = inp.cell_id
            if mode is EditMode.DELETE:
                del cells[at]
            else:
                cell = cells[at]
                new_type = inp.cell_type or CellType(cell.cell_type if cell.cell_type in ("code", "markdown")
                                                     else "markdown")
                if new_type.value != cell.cell_type:
                    fresh = _new_cell(nbf, nb, new_type, inp.new_source)
                    if "id" in cell:
                        fresh["id"] = cell["id"]
                    cells[at] = fresh
                else:
                    cell.source = inp.new_source
                    if cell.cell_type == "code":  # the old outputs describe code that is gone
                        cell.execution_count, cell.outputs = None, []
        try:
            nbf.validate(nb)
        except Exception as exc:  # noqa: BLE001 — nbformat.ValidationError and friends
            raise ToolError(f"The edit would leave an invalid notebook, so nothing was written: {exc}") from None
        text = nbf.writes(nb) + "\n"
        if ctx.before_write is not None:  # a checkpoint of what is there now (for /rewind)
            ctx.before_write(path, path.read_bytes())
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
        ctx.read_files[str(path)] = snapshot(path, text.encode(), partial=False)
        verb = {EditMode.REPLACE: "Updated cell", EditMode.INSERT: "Inserted cell",
                EditMode.DELETE: "Deleted cell"}[mode]
        return ToolResult(f"{verb} {target}" + ("" if mode is EditMode.DELETE else f" with {inp.new_source}"),
                          data={"new_source": inp.new_source, "cell_id": target, "cell_type":
                                (inp.cell_type or CellType.CODE).value, "edit_mode": mode.value,
                                "notebook_path": str(path), "error": ""})
