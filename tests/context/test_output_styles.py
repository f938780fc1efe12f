"""Output styles: resolution order (project over user, exact over case-insensitive), front matter,
broken files, and what each kind of style does to the system prompt."""

from pathlib import Path

from codeloop.context.memory import MEMORY_FILE_NAMES, find_nested_memory_files, memory_file_names
from codeloop.context.output_styles import BUILT_IN, StyleSource, resolve_output_style, style_dirs
from codeloop.context.prompt import DEFAULT_SYSTEM_PROMPT, build_system_prompt, instruction_files


def _style(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(text)


def test_project_style_wins_over_user_style_and_builtin_names_match_any_case(tmp_path):
    user, proj = tmp_path / "home", tmp_path / "proj"
    _style(user / "output-styles", "terse", "USER VERSION")
    _style(proj / ".claude" / "output-styles", "terse", "PROJECT VERSION")
    dirs = style_dirs(proj, [user])
    style, warnings = resolve_output_style("terse", dirs)
    assert warnings == [] and style.instructions == "PROJECT VERSION" and style.source is StyleSource.PROJECT
    assert not style.keep_coding_instructions
    style, _ = resolve_output_style("terse", style_dirs(proj, [user], project=False))
    assert style.instructions == "USER VERSION"
    style, _ = resolve_output_style("learning", dirs)
    assert style is BUILT_IN["Learning"]
    assert resolve_output_style("default", dirs) == (None, []) and resolve_output_style(None, dirs) == (None, [])


def test_front_matter_name_and_keep_flag_and_broken_files(tmp_path):
    folder = tmp_path / ".claude" / "output-styles"
    _style(folder, "file-name", "---\nname: Nice Name\nkeep-coding-instructions: true\n---\nBODY\n")
    _style(folder, "broken", "---\nname: never closed\nBODY\n")
    style, warnings = resolve_output_style("Nice Name", style_dirs(tmp_path, []))
    assert style.instructions == "BODY" and style.keep_coding_instructions
    assert len(warnings) == 1 and "broken.md" in warnings[0]
    missing, warnings = resolve_output_style("file-name", style_dirs(tmp_path, []))
    assert missing is None and any("not found" in w for w in warnings)
    bad, warnings = resolve_output_style(7, [])
    assert bad is None and "must be a string" in warnings[0]


def test_system_prompt_under_each_kind_of_style(tmp_path):
    folder = tmp_path / ".claude" / "output-styles"
    _style(folder, "solo", "SOLO INSTRUCTIONS")
    solo, _ = resolve_output_style("solo", style_dirs(tmp_path, []))
    assert build_system_prompt(tmp_path)[0] == DEFAULT_SYSTEM_PROMPT
    custom = build_system_prompt(tmp_path, output_style=solo, append="APPENDED")
    assert "# How to work" not in custom[0] and custom[-1] == "SOLO INSTRUCTIONS" and "APPENDED" in custom
    builtin = build_system_prompt(tmp_path, output_style=BUILT_IN["Explanatory"])
    assert "# How to work" in builtin[0] and "Be concise" not in builtin[0]
    assert builtin[-1] == BUILT_IN["Explanatory"].instructions
    # --system-prompt replaces everything, the style included
    assert build_system_prompt(tmp_path, custom="MINE", output_style=solo)[0] == "MINE"
    assert "SOLO INSTRUCTIONS" not in build_system_prompt(tmp_path, custom="MINE", output_style=solo)


def test_instruction_files_and_nested_memory_follow_sources(tmp_path):
    cfg, proj = tmp_path / "cfg", tmp_path / "proj"
    (proj / "sub").mkdir(parents=True)
    cfg.mkdir()
    (cfg / "CLAUDE.md").write_text("u")
    (proj / "CLAUDE.md").write_text("p")
    (proj / "CLAUDE.local.md").write_text("l")
    (proj / "sub" / "CLAUDE.md").write_text("np")
    (proj / "sub" / "CLAUDE.local.md").write_text("nl")

    def names(sources):
        return {p.name if p.parent != cfg else "user" for p, _ in instruction_files(proj, cfg, sources)}

    assert names(None) >= {"user", "CLAUDE.md", "CLAUDE.local.md"}
    assert names(frozenset()) == set()
    assert names(frozenset({"project"})) == {"CLAUDE.md"}
    assert names(frozenset({"user", "local"})) == {"user", "CLAUDE.local.md"}
    assert memory_file_names(None) == MEMORY_FILE_NAMES and memory_file_names(set()) == ()
    found = find_nested_memory_files(proj, names=memory_file_names({"local"}))
    assert [Path(m.path).name for m in found] == ["CLAUDE.local.md"]
