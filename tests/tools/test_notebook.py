"""Read of .ipynb and NotebookEdit (issue 16) on real notebooks (tests/fixtures/notebooks):
cells with ids and outputs, images as image blocks, replace/insert/delete by id, nbformat validation."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop.permissions.policy import PermissionMode, PermissionPolicy
from codeloop.tools.base import PermissionBehavior, ToolError
from codeloop.tools.builtin.notebook_edit import NotebookEditTool
from codeloop.tools.builtin.read import ReadTool
from codeloop.tools.registry import parse_tool_input
from fakeapi import ScriptedAPI, sse, text, tool_use

nbformat = pytest.importorskip("nbformat")
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "notebooks"


@pytest.fixture
def nb(tmp_path):
    return Path(shutil.copy(FIXTURES / "analysis.ipynb", tmp_path / "analysis.ipynb"))


async def test_read_notebook_shows_cells_outputs_and_images(ctx, run, nb):
    res = await run(ReadTool(), ctx, file_path=str(nb))
    textblock, image = res.content
    body = textblock["text"]
    assert body.startswith("Jupyter notebook (python), 4 cells")
    assert '<cell id="intro"><cell_type>markdown</cell_type># Sales analysis' in body
    assert '<cell id="totals"><execution_count>1</execution_count>totals = ' in body and "255" in body
    assert "ZeroDivisionError: division by zero" in body and "[image output 1: image/png]" in body
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
    assert base64.b64decode(image["source"]["data"]).startswith(b"\x89PNG")
    assert str(nb) in ctx.read_files and res.data["file"]["cells"] == 4


async def test_read_of_a_broken_notebook_is_a_clear_error(ctx, run, tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json")
    with pytest.raises(ToolError, match="not a valid notebook"):
        await run(ReadTool(), ctx, file_path=str(bad))


async def test_replace_insert_delete_by_cell_id(ctx, run, nb):
    tool = NotebookEditTool()
    with pytest.raises(ToolError, match="has not been read"):
        await run(tool, ctx, notebook_path=str(nb), cell_id="totals", new_source="x")
    await run(ReadTool(), ctx, file_path=str(nb))
    res = await run(tool, ctx, notebook_path=str(nb), cell_id="totals", new_source="print(sum([1, 2]))")
    assert res.content.startswith("Updated cell totals")
    cells = nbformat.read(nb, as_version=4).cells
    cell = next(c for c in cells if c.id == "totals")
    assert cell.source == "print(sum([1, 2]))" and cell.outputs == [] and cell.execution_count is None
    await run(tool, ctx, notebook_path=str(nb), cell_id="intro", new_source="## Setup", cell_type="code",
              edit_mode="insert")
    await run(tool, ctx, notebook_path=str(nb), new_source="# Title", cell_type="markdown", edit_mode="insert")
    await run(tool, ctx, notebook_path=str(nb), cell_id="oops", new_source="", edit_mode="delete")
    await run(tool, ctx, notebook_path=str(nb), cell_id="plot", new_source="Plot removed", cell_type="markdown")
    read = nbformat.read(nb, as_version=4)
    nbformat.validate(read)
    assert [c.cell_type for c in read.cells] == ["markdown", "markdown", "code", "code", "markdown"]
    assert [c.source for c in read.cells][:3] == ["# Title", "# Sales analysis\nQuarterly totals.", "## Setup"]
    assert read.cells[4].id == "plot" and "oops" not in [c.id for c in read.cells]


async def test_edit_errors_lose_no_data(ctx, run, nb):
    tool = NotebookEditTool()
    await run(ReadTool(), ctx, file_path=str(nb))
    before = nb.read_bytes()
    with pytest.raises(ToolError, match='Cell with ID "nope" not found'):
        await run(tool, ctx, notebook_path=str(nb), cell_id="nope", new_source="x")
    with pytest.raises(ToolError, match="Cell type is required"):
        await run(tool, ctx, notebook_path=str(nb), new_source="x", edit_mode="insert")
    with pytest.raises(ToolError, match="cell_id is required"):
        await run(tool, ctx, notebook_path=str(nb), new_source="x", edit_mode="delete")
    with pytest.raises(ToolError, match="cell_type"):
        await run(tool, ctx, notebook_path=str(nb), cell_id="intro", new_source="x", cell_type="raw")
    other = nb.with_name("notes.txt")
    other.write_text("x")
    with pytest.raises(ToolError, match=r"\.ipynb"):
        await run(tool, ctx, notebook_path=str(other), cell_id="a", new_source="x")
    nb.write_text(before.decode().replace("Quarterly", "Yearly"))   # changed behind the model's back
    with pytest.raises(ToolError, match="modified since read"):
        await run(tool, ctx, notebook_path=str(nb), cell_id="intro", new_source="x")
    assert "Yearly" in nb.read_text()


async def test_legacy_notebook_without_ids_uses_cell_n(ctx, run, tmp_path):
    nb = Path(shutil.copy(FIXTURES / "legacy-v4.4.ipynb", tmp_path / "old.ipynb"))
    res = await run(ReadTool(), ctx, file_path=str(nb))
    assert '<cell id="cell-0">' in res.content and '<cell id="cell-1"><cell_type>markdown' in res.content
    await run(NotebookEditTool(), ctx, notebook_path=str(nb), cell_id="cell-1", new_source="more notes")
    await run(NotebookEditTool(), ctx, notebook_path=str(nb), cell_id="cell-0", new_source="y = 2",
              cell_type="code", edit_mode="insert")
    read = nbformat.read(nb, as_version=4)
    nbformat.validate(read)
    assert [c.source for c in read.cells] == ["x = 1", "y = 2", "more notes"] and "id" not in read.cells[1]


async def test_permissions_are_edit_permissions(tmp_path, ctx, nb):
    tool = NotebookEditTool()
    raw = {"notebook_path": str(nb), "cell_id": "intro", "new_source": "x"}
    inp = parse_tool_input(tool, raw)
    opinion = await tool.check_permissions(inp, ctx)
    assert PermissionPolicy(cwd=tmp_path).decide(tool, inp, opinion, raw).behavior is PermissionBehavior.ASK
    accept = PermissionPolicy(cwd=tmp_path, mode=PermissionMode.ACCEPT_EDITS)
    assert accept.decide(tool, inp, opinion, raw).behavior is PermissionBehavior.ALLOW
    plan = PermissionPolicy(cwd=tmp_path, mode=PermissionMode.PLAN)
    assert plan.decide(tool, inp, opinion, raw).behavior is PermissionBehavior.DENY
    deny = PermissionPolicy(cwd=tmp_path, mode=PermissionMode.ACCEPT_EDITS, deny=["Edit(*.ipynb)"])
    assert deny.decide(tool, inp, opinion, raw).behavior is PermissionBehavior.DENY


def test_cli_read_then_edit_a_notebook(tmp_path):
    nb = Path(shutil.copy(FIXTURES / "analysis.ipynb", tmp_path / "analysis.ipynb"))
    api = ScriptedAPI(sse(tool_use("Read", {"file_path": str(nb)}, id="r")),
                      sse(tool_use("NotebookEdit", {"notebook_path": str(nb), "cell_id": "intro",
                                                    "new_source": "# Revenue analysis"}, id="e")),
                      sse(text("Renamed the notebook's heading.")))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CODELOOP_"))}
    with api.serve() as url:
        env.update({"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": url, "CODELOOP_CONFIG_DIR": str(tmp_path / ".c"),
                    "HOME": str(tmp_path)})
        r = subprocess.run([sys.executable, "-m", "codeloop", "-p", "rename", "--output-format", "json",
                            "--permission-mode", "acceptEdits"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    read_result = next(b for b in api.requests[1].messages[-1]["content"] if b.get("type") == "tool_result")
    assert [b["type"] for b in read_result["content"]] == ["text", "image"]
    assert json.loads(r.stdout)["permission_denials"] == []
    assert nbformat.read(nb, as_version=4).cells[0].source == "# Revenue analysis"
