"""Session paths, ids and lookup (codeloop.session.store)."""

import os
from pathlib import Path

import pytest

from codeloop.messages import user_message
from codeloop.session import store
from codeloop.session.store import InvalidSessionId
from codeloop.session.transcript import TranscriptWriter

ID_A = "11111111-1111-4111-8111-111111111111"
ID_B = "22222222-2222-4222-8222-222222222222"
ID_C = "33333333-3333-4333-8333-333333333333"


@pytest.fixture(autouse=True)
def config(tmp_path, monkeypatch):
    monkeypatch.setenv("CODELOOP_CONFIG_DIR", str(tmp_path / "cfg"))
    return tmp_path / "cfg"


def write_session(cwd, session_id, prompt="hello", mtime=None):
    path = store.session_path(cwd, session_id)
    w = TranscriptWriter(path, session_id, cwd)
    w.append_message(user_message(prompt))
    w.close()
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def test_config_dir_from_env_and_default(config, monkeypatch, tmp_path):
    assert store.config_dir() == config
    assert store.projects_dir() == config / "projects"
    monkeypatch.delenv("CODELOOP_CONFIG_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert store.config_dir() == tmp_path / "home" / ".codeloop"


def test_project_key():
    assert store.project_key(Path("/home/a/my_proj")) == "-home-a-my-proj"
    assert store.project_key("/srv/x.y z/Ünï") == "-srv-x-y-z--n-"


def test_project_key_of_relative_path_is_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert store.project_key(Path("sub")) == store.project_key(tmp_path / "sub")


def test_project_key_stays_a_valid_file_name_for_deep_paths():
    deep = "/" + "/".join(["directory"] * 40)
    key = store.project_key(deep)
    assert len(key) < 255
    assert key.startswith("-directory-directory")
    assert key != store.project_key(deep + "/other")


def test_session_paths(config, tmp_path):
    cwd = tmp_path / "proj"
    key = store.project_key(cwd)
    assert store.session_path(cwd, ID_A) == config / "projects" / key / f"{ID_A}.jsonl"
    assert store.session_dir(cwd, ID_A) == config / "projects" / key / ID_A
    assert not (config / "projects").exists()


def test_validate_session_id_accepts_uuids_and_lowercases():
    assert store.validate_session_id(ID_A) == ID_A
    assert store.validate_session_id(ID_A.upper()) == ID_A
    mixed = "ABCDEF01-2345-1789-abcd-ef0123456789"  # version 1 is fine too
    assert store.validate_session_id(mixed) == mixed.lower()
    new = store.new_session_id()
    assert store.validate_session_id(new) == new


@pytest.mark.parametrize("bad", ["../etc", "a/b", "", ID_A + "\n", ID_A[:-1], f"../{ID_A}",
                                 ID_A.replace("-", ""), "{" + ID_A + "}", None, 42])
def test_validate_session_id_rejects(bad):
    with pytest.raises(InvalidSessionId, match="invalid session id"):
        store.validate_session_id(bad)


def test_invalid_session_id_is_a_value_error_and_guards_paths(tmp_path):
    with pytest.raises(ValueError):
        store.session_path(tmp_path, "../../etc/passwd")


def test_latest_session_picks_newest_by_mtime(tmp_path):
    cwd = tmp_path / "proj"
    write_session(cwd, ID_A, mtime=1_000_000)
    write_session(cwd, ID_B, mtime=3_000_000)
    write_session(cwd, ID_C, mtime=2_000_000)
    assert store.latest_session(cwd) == ID_B


def test_latest_session_skips_files_without_messages(tmp_path):
    cwd = tmp_path / "proj"
    write_session(cwd, ID_A, mtime=1_000_000)
    empty = store.session_path(cwd, ID_B)
    empty.write_bytes(b"")
    os.utime(empty, (3_000_000, 3_000_000))
    summary_only = store.session_path(cwd, ID_C)
    w = TranscriptWriter(summary_only, ID_C, cwd)
    w.append_entry({"type": "summary", "summary": "nothing happened"})
    w.close()
    os.utime(summary_only, (2_000_000, 2_000_000))
    # Foreign files in the folder are never taken for sessions.
    (summary_only.parent / "notes.jsonl").write_text('{"type":"user","message":{"content":"x"}}\n')
    assert store.latest_session(cwd) == ID_A


def test_latest_session_none_when_no_project(tmp_path):
    assert store.latest_session(tmp_path / "nowhere") is None


def test_find_session_prefers_own_project_then_any(tmp_path):
    here, there = tmp_path / "here", tmp_path / "there"
    own = write_session(here, ID_A)
    other = write_session(there, ID_B)
    write_session(there, ID_A)
    assert store.find_session(ID_A, here) == own
    assert store.find_session(ID_B, here) == other
    assert store.find_session(ID_B.upper(), here) == other
    assert store.find_session(ID_C, here) is None


def test_find_session_rejects_bad_ids(tmp_path):
    with pytest.raises(InvalidSessionId):
        store.find_session("../x", tmp_path)


def test_list_sessions_newest_first_with_first_prompt(tmp_path):
    cwd = tmp_path / "proj"
    write_session(cwd, ID_A, prompt="first\nsession", mtime=1_000_000)
    write_session(cwd, ID_B, prompt="x" * 200, mtime=3_000_000)
    path_c = store.session_path(cwd, ID_C)
    w = TranscriptWriter(path_c, ID_C, cwd)
    w.append_message(user_message("caveat", is_meta=True))
    w.append_message(user_message("the real prompt"))
    w.close()
    os.utime(path_c, (2_000_000, 2_000_000))
    write_session(tmp_path / "elsewhere", store.new_session_id())

    infos = store.list_sessions(cwd)
    assert [i.session_id for i in infos] == [ID_B, ID_C, ID_A]
    assert [i.mtime for i in infos] == [3_000_000, 2_000_000, 1_000_000]
    assert infos[0].path == store.session_path(cwd, ID_B)
    assert infos[0].first_prompt == "x" * 79 + "…"
    assert len(infos[0].first_prompt) == 80
    assert infos[1].first_prompt == "the real prompt"
    assert infos[2].first_prompt == "first session"


def test_list_sessions_empty_project(tmp_path):
    assert store.list_sessions(tmp_path / "none") == []
