"""The refusal names the cause the worker found and the one step that fixes it on this machine."""

from __future__ import annotations

from lvegit.sandbox.refusal import unconfined_refusal

LANDLOCK = "landlock: ABI 7: files readable beneath the import paths only"
NO_NAMESPACES = "namespaces: none (refused on this machine): Landlock holds the filesystem"


def test_without_libseccomp_the_step_is_to_install_it() -> None:
    """Landlock held here: the message once sent people to a published image (none is published) or to a
    machine with Landlock, never to the library that was missing."""
    said = unconfined_refusal(
        [NO_NAMESPACES, LANDLOCK, "seccomp: unavailable (libseccomp could not be loaded)"]
    )
    assert (
        "To run it: install libseccomp (e.g. apt-get install libseccomp2) (or set LVEGIT_UNCONFINED" in said
    )
    assert "image" not in said and "Landlock (see" not in said


def test_without_namespaces_or_landlock_the_step_is_another_machine() -> None:
    said = unconfined_refusal([NO_NAMESPACES, "landlock: unavailable (ENOSYS)", "seccomp: allow-list: ..."])
    assert "To run it: use a Linux machine that allows user namespaces or Landlock (or set" in said
    assert "libseccomp" not in said
