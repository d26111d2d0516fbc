"""lvegit: a git-native manager for LVE repositories."""

from __future__ import annotations

# Written by setuptools-scm when lvegit is built or installed: the version from the nearest git tag.
from lvegit._version import __version__

__all__ = ["__version__"]
