from __future__ import annotations

import pytest

from lvegit.base.errors import UsageError
from lvegit.disclosure.envelope import (
    MAGIC,
    EnvelopeError,
    decrypt,
    encrypt,
    parse_identity,
    public_key,
    recipient_count,
)

pyrage = pytest.importorskip("pyrage")


def test_the_header_counts_x25519_recipients_without_any_key() -> None:
    keys = [str(pyrage.x25519.Identity.generate().to_public()) for _ in range(3)]
    assert recipient_count(encrypt(b"payload", keys)) == 3  # rage's grease stanzas are not counted


def test_a_payload_opens_with_a_recipients_identity_only() -> None:
    mine, other = pyrage.x25519.Identity.generate(), pyrage.x25519.Identity.generate()
    sealed = encrypt(b"payload", [public_key(mine)])
    assert decrypt(sealed, mine) == b"payload"
    with pytest.raises(EnvelopeError, match="cannot be opened with this identity"):
        decrypt(sealed, other)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "first line"),
        (b"-----BEGIN AGE ENCRYPTED FILE-----\n", "first line"),
        (MAGIC + b"-> X25519 abc\n", "no end"),
        (MAGIC + b"--- " + b"A" * 43 + b"\npayload", "names no recipient"),
        (MAGIC + b"-> X25519 abc\n" + b"A" * 64 + b"\n--- " + b"A" * 43 + b"\nx", "no final short"),
        (MAGIC + b"-> X25519 abc\nnot base64!\n--- " + b"A" * 43 + b"\nx", "neither a stanza"),
        (MAGIC + b"-> X25519 abc\nAAAA\n--- short\nx", "MAC line"),
        (MAGIC + b"-> X25519 abc\nAAAA\n--- " + b"A" * 43 + b"\n", "no payload"),
        (MAGIC + b"-> scrypt salt 18\nAAAA\n--- " + b"A" * 43 + b"\nx", "another kind"),
        (MAGIC + b"-> X25519 a\nAAAA\n" * 300 + b"--- " + b"A" * 43 + b"\nx", "more than 256"),
        (MAGIC + b"-> X25519 a\n" + (b"A" * 64 + b"\n") * 2000, "no end"),  # huge header
    ],
)
def test_malformed_envelopes_are_refused_before_any_decryption(data: bytes, message: str) -> None:
    with pytest.raises(EnvelopeError, match=message):
        recipient_count(data)


def test_a_nested_envelope_is_no_payload() -> None:
    from lvegit.disclosure.payload import pack, unpack

    identity = pyrage.x25519.Identity.generate()
    inner = encrypt(pack({"test.json": b"{}"}), [public_key(identity)])
    outer = encrypt(inner, [public_key(identity)])
    assert recipient_count(outer) == 1
    with pytest.raises(EnvelopeError, match="no tar archive"):
        unpack(decrypt(outer, identity))


def test_an_identity_must_be_one_age_secret_key_and_is_never_echoed() -> None:
    identity = pyrage.x25519.Identity.generate()
    assert public_key(parse_identity(f"# created\n{identity}\n", "key.txt")) == public_key(identity)
    secret = str(identity)
    with pytest.raises(UsageError) as caught:
        parse_identity(f"{secret}\n{secret}\n", "key.txt")
    assert secret not in str(caught.value) and "key.txt" in str(caught.value)
