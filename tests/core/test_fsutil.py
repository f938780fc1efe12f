"""fsutil.atomic_write: bytes or chunks replace a file whole; a failure part-way leaves the old file
and no temporary file behind."""

from __future__ import annotations

import pytest

from codeloop.fsutil import atomic_write


@pytest.mark.parametrize("durable", [True, False])
def test_chunks_replace_the_file_and_mode_is_applied(tmp_path, durable):
    target = tmp_path / "sub" / "f.bin"
    atomic_write(target, b"old")
    atomic_write(target, iter([b"ab", b"", b"cd"]), mode=0o600, dir_mode=0o700, durable=durable)
    assert target.read_bytes() == b"abcd" and oct(target.stat().st_mode & 0o777) == "0o600"
    assert sorted(p.name for p in target.parent.iterdir()) == ["f.bin"]


def test_a_failing_chunk_source_leaves_the_old_file(tmp_path):
    target = tmp_path / "f.bin"
    atomic_write(target, b"old")

    def chunks():
        yield b"new part"
        raise OSError("source changed")

    with pytest.raises(OSError, match="source changed"):
        atomic_write(target, chunks(), durable=False)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]
