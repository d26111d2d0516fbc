"""A withheld LVE's payload in its canonical form: an uncompressed tar of the LVE folder's files (sorted,
owners, times and modes fixed) with a random nonce, so that the same files give the same bytes and a
commitment (the SHA-256 of those bytes) reveals nothing of a guessable prompt.

Unpacking treats the tar as hostile: only regular files with plain relative names inside the LVE, none
that shadows the withheld LVE's own files, bounded in count and size; links, devices, absolute names,
`..` and anything else are refused with the name of the member.
"""

from __future__ import annotations

import hashlib
import io
import os
import secrets
import stat
import tarfile
from pathlib import Path, PurePosixPath

from lvegit.base.files import FileProblem, read_bytes, walk
from lvegit.disclosure.envelope import MAX_ENVELOPE_BYTES, EnvelopeError
from lvegit.lve.repo import WITHHELD_FILE

NONCE_MEMBER = ".lvegit-nonce"
PAYLOAD_FILE = "payload.age"  # the envelope
README_FILE = "README.md"  # generated from the payload: never withheld, never kept in clear
RESERVED = (WITHHELD_FILE, PAYLOAD_FILE, README_FILE, NONCE_MEMBER)
MAX_MEMBERS = 10_000
MAX_FILE_BYTES = 32 * 1024 * 1024


def commitment(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()


def payload_files(lve_dir: Path) -> dict[str, bytes]:
    """The files of a clear LVE folder that make its payload (everything but its README), by their
    path relative to the folder; a FileProblem for a link or any entry that is no regular file."""
    files: dict[str, bytes] = {}
    for folder, folders, others in walk(lve_dir):
        folders[:] = [name for name in folders if name != "__pycache__"]
        for name in others:
            path = folder / name
            relative = path.relative_to(lve_dir).as_posix()
            if relative == README_FILE:
                continue
            if not stat.S_ISREG(os.lstat(path).st_mode):
                raise FileProblem(f"'{relative}' is a link or no regular file: a payload holds files only")
            files[relative] = read_bytes(path, MAX_FILE_BYTES, within=lve_dir)
    return files


def pack(files: dict[str, bytes], nonce: bytes | None = None) -> bytes:
    """The canonical tar of `files` (relative path -> content) with a nonce (random unless given)."""
    members = {NONCE_MEMBER: nonce if nonce is not None else secrets.token_bytes(32), **files}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(members):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(members[name]), 0o644, 0
            tar.addfile(info, io.BytesIO(members[name]))
    return buffer.getvalue()


def _checked_name(name: str) -> str:
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or "\\" in name or "\x00" in name:
        raise EnvelopeError(f"the payload holds '{name[:200]}', a path out of the LVE folder")
    if path.as_posix() != name:
        raise EnvelopeError(f"the payload holds '{name[:200]}', a name not in its plain form")
    if path.parts[0] in RESERVED:
        raise EnvelopeError(f"the payload holds '{name}', which would shadow the withheld LVE's own files")
    return name


def unpack(payload: bytes) -> tuple[dict[str, bytes], bytes]:
    """The files of a payload (relative path -> content) and its nonce; an EnvelopeError naming the
    member for anything but plain files inside the LVE folder."""
    if len(payload) > MAX_ENVELOPE_BYTES:
        raise EnvelopeError(f"the payload is too large ({len(payload)} bytes)")
    files: dict[str, bytes] = {}
    nonce = b""
    try:
        with tarfile.open(fileobj=io.BytesIO(payload), mode="r:") as tar:
            for count, member in enumerate(tar, 1):
                if count > MAX_MEMBERS:
                    raise EnvelopeError(f"the payload holds more than {MAX_MEMBERS} files")
                if not member.isreg():
                    raise EnvelopeError(f"the payload holds '{member.name[:200]}', which is no regular file")
                handle = tar.extractfile(member)
                data = handle.read() if handle is not None else b""
                if member.name == NONCE_MEMBER:
                    nonce = data
                    continue
                name = _checked_name(member.name)
                if name in files or any(p in files for p in (str(x) for x in PurePosixPath(name).parents)):
                    raise EnvelopeError(f"the payload holds '{name}' twice, or under a file of that name")
                files[name] = data
    except tarfile.TarError as exc:
        raise EnvelopeError(f"the payload is no tar archive: {exc}") from None
    if "test.json" not in files:
        raise EnvelopeError("the payload holds no test.json")
    return files, nonce


def write_files(lve_dir: Path, files: dict[str, bytes]) -> None:
    """Write unpacked payload files into `lve_dir`, each a new file (never over an existing one, never
    through a link)."""
    for name, data in sorted(files.items()):
        target = lve_dir / name
        for parent in reversed(target.relative_to(lve_dir).parents):
            folder = lve_dir / parent
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                raise EnvelopeError(f"'{name}': a folder on its way is a link or a file")
            folder.mkdir(exist_ok=True, mode=0o700)
        try:
            descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            raise EnvelopeError(f"'{name}' exists already: nothing is written over it") from None
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
