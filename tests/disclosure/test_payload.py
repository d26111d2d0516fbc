from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from lvegit.disclosure.payload import NONCE_MEMBER, EnvelopeError, commitment, pack, unpack, write_files


def test_the_canonical_form_is_the_same_bytes_for_the_same_files_and_nonce() -> None:
    files = {"test.json": b"{}", "instances/a.jsonl": b"{}\n"}
    assert pack(files, b"n") == pack(dict(reversed(files.items())), b"n")
    assert unpack(pack(files, b"n")) == (files, b"n")
    # a fresh nonce each time: a commitment to a guessable prompt cannot be confirmed by guessing
    assert commitment(pack(files)) != commitment(pack(files))


def _tar(*members: tarfile.TarInfo, data: bytes = b"x") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for member in members:
            if member.isreg():
                member.size = len(data)
            tar.addfile(member, io.BytesIO(data) if member.isreg() else None)
    return buffer.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, target: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (_member("test.json", tarfile.SYMTYPE, "/etc/passwd"), "no regular file"),
        (_member("instances", tarfile.LNKTYPE, "test.json"), "no regular file"),
        (_member("../escape.json"), "out of the LVE folder"),
        (_member("/etc/cron.d/x"), "out of the LVE folder"),
        (_member("./test.json"), "plain form"),
        (_member("withheld.json"), "shadow"),
        (_member("payload.age"), "shadow"),
        (_member("README.md"), "shadow"),
        (_member("dev", tarfile.CHRTYPE), "no regular file"),
    ],
)
def test_hostile_payload_members_are_refused_by_name(member: tarfile.TarInfo, message: str) -> None:
    with pytest.raises(EnvelopeError, match=message) as caught:
        unpack(_tar(_member("test.json"), member))
    assert member.name[:20] in str(caught.value)


def test_a_payload_is_a_tar_with_a_test_json() -> None:
    with pytest.raises(EnvelopeError, match="no tar"):
        unpack(b"not a tar" * 100)
    with pytest.raises(EnvelopeError, match="no test\\.json"):
        unpack(_tar(_member(NONCE_MEMBER)))


def test_unpacked_files_are_written_new_never_over_a_file_or_through_a_link(tmp_path: Path) -> None:
    (tmp_path / "instances").symlink_to(tmp_path.parent)
    with pytest.raises(EnvelopeError, match="link"):
        write_files(tmp_path, {"instances/a.jsonl": b"x"})
    (tmp_path / "test.json").write_text("kept")
    with pytest.raises(EnvelopeError, match="exists already"):
        write_files(tmp_path, {"test.json": b"x"})
    assert (tmp_path / "test.json").read_text() == "kept"
