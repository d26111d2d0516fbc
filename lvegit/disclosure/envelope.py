"""The age envelope of a withheld payload: encryption and decryption by pyrage (the `disclosure` extra;
lvegit writes no cryptography of its own), and the reading of an envelope's header, which needs no key.

An X25519 stanza does not name its recipient, so the header tells how many recipients a payload was
encrypted to, never which: the abstract lists them, and validation checks that the counts agree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lvegit.base.errors import LVEError, UsageError
from lvegit.base.extras import require

if TYPE_CHECKING:
    from pyrage import x25519

MAGIC = b"age-encryption.org/v1\n"
MAX_ENVELOPE_BYTES = 64 * 1024 * 1024  # a payload larger than this is no LVE
MAX_HEADER_BYTES = 64 * 1024
MAX_STANZAS = 256
# A recipient as age writes it: Bech32 of an X25519 public key.
RECIPIENT_PATTERN = r"^age1[02-9ac-hj-np-z]{58}$"
_RECIPIENT = re.compile(RECIPIENT_PATTERN)
_IDENTITY = re.compile(r"AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}")
_BASE64_LINE = re.compile(rb"[A-Za-z0-9+/]{0,64}")
_MAC = re.compile(rb"--- [A-Za-z0-9+/]{43}")


class EnvelopeError(LVEError):
    """An envelope that cannot be used: the message says why, never what it holds."""


def _pyrage() -> Any:
    require("a withheld LVE's payload", "disclosure", "pyrage")
    import pyrage

    return pyrage


def is_recipient(text: str) -> bool:
    return _RECIPIENT.fullmatch(text) is not None


def stanza_types(data: bytes) -> list[str]:
    """The type of each stanza of an age v1 (binary) header, grease included; an EnvelopeError where
    `data` is no such envelope (armored, truncated, oversized, a body line out of the format)."""
    if len(data) > MAX_ENVELOPE_BYTES:
        raise EnvelopeError(f"the envelope is too large ({len(data)} bytes, limit {MAX_ENVELOPE_BYTES})")
    if not data.startswith(MAGIC):
        raise EnvelopeError("not an age envelope (binary, version 1): the first line is wrong")
    end = data.find(b"\n---", len(MAGIC) - 1, MAX_HEADER_BYTES)
    if end == -1:
        raise EnvelopeError("the age header has no end ('---' line) in its first 64 KiB")
    header = data[len(MAGIC) : end + 1].split(b"\n")[:-1]
    mac_end = data.find(b"\n", end + 1)
    if mac_end == -1 or not _MAC.fullmatch(data[end + 1 : mac_end]):
        raise EnvelopeError("the age header's MAC line is malformed")
    if mac_end + 1 == len(data):
        raise EnvelopeError("the envelope holds no payload after its header")
    types: list[str] = []
    body_open = False
    for raw in header:
        if raw.startswith(b"-> "):
            if body_open:
                raise EnvelopeError("a stanza of the age header has no final short body line")
            arguments = raw[3:].split(b" ")
            if not arguments[0] or any(not a or not a.isascii() for a in arguments):
                raise EnvelopeError("a stanza of the age header has an empty or non-ASCII argument")
            types.append(arguments[0].decode("ascii"))
            body_open = True
            if len(types) > MAX_STANZAS:
                raise EnvelopeError(f"the age header has more than {MAX_STANZAS} stanzas")
        elif body_open and _BASE64_LINE.fullmatch(raw):
            body_open = len(raw) == 64  # a full line continues the body, a shorter one ends it
        else:
            raise EnvelopeError("the age header holds a line that is neither a stanza nor its body")
    if body_open:
        raise EnvelopeError("the last stanza of the age header has no final short body line")
    if not types:
        raise EnvelopeError("the age header names no recipient")
    return types


def recipient_count(data: bytes) -> int:
    """How many X25519 recipients an envelope was encrypted to (grease stanzas aside); other kinds of
    recipient (passphrase, SSH, plugins) are refused: a repository's recipients are X25519 keys."""
    types = stanza_types(data)
    others = sorted({t for t in types if t != "X25519" and not t.endswith("-grease")})
    if others:
        raise EnvelopeError(f"the envelope is encrypted to recipients of another kind ({', '.join(others)})")
    return types.count("X25519")


def parse_identity(text: str, source: str) -> x25519.Identity:
    """The one X25519 identity in `text` (an age identity file: comments and blank lines allowed);
    `source` names where it came from. The key itself never appears in a message."""
    found = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    if len(found) != 1 or _IDENTITY.fullmatch(found[0]) is None:
        raise UsageError(f"{source}: not one age identity (a line AGE-SECRET-KEY-1...)")
    pyrage = _pyrage()
    try:
        identity: x25519.Identity = pyrage.x25519.Identity.from_str(found[0])
    except pyrage.IdentityError:
        raise UsageError(f"{source}: not a valid age identity") from None
    return identity


def public_key(identity: x25519.Identity) -> str:
    return str(identity.to_public())


def encrypt(payload: bytes, recipients: Sequence[str]) -> bytes:
    """`payload` encrypted to exactly `recipients` (age1... public keys)."""
    pyrage = _pyrage()
    if not recipients:
        raise UsageError("no disclosure recipients to encrypt to")
    try:
        keys = [pyrage.x25519.Recipient.from_str(r) for r in recipients]
        sealed: bytes = pyrage.encrypt(payload, keys)
    except (pyrage.RecipientError, pyrage.EncryptError) as exc:
        raise UsageError(f"cannot encrypt to the disclosure recipients: {exc}") from None
    return sealed


def decrypt(data: bytes, identity: x25519.Identity) -> bytes:
    """The payload of an envelope that `identity` can open; the header is checked first, so that a
    malformed envelope is refused before any decryption."""
    stanza_types(data)
    pyrage = _pyrage()
    try:
        opened: bytes = pyrage.decrypt(data, [identity])
    except pyrage.DecryptError:
        raise EnvelopeError(
            "the envelope cannot be opened with this identity (not one of its recipients, or damaged)"
        ) from None
    return opened
