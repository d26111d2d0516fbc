"""Installed distributions' versions, read from the names of their metadata folders.

importlib.metadata answers the same question, but importing it costs about 40 ms and each lookup reads
every sys.path entry again; a warm `lvegit check` needs a few versions and nothing else. pip and every
installer following the wheel specification name the folder `<name>-<version>.dist-info` (older
setuptools installs `<name>-<version>[-pyX.Y].egg-info`), and the first sys.path entry that holds a
distribution is the one Python imports, as with importlib.metadata.
"""

from __future__ import annotations

import functools
import os
import re
import sys

METADATA_SUFFIXES = (".dist-info", ".egg-info")


def normalized(name: str) -> str:
    """A distribution name as the packaging specifications compare them (PEP 503)."""
    return re.sub(r"[-_.]+", "_", name).lower()


@functools.cache
def _installed(path: tuple[str, ...]) -> dict[str, str]:
    versions: dict[str, str] = {}
    for entry in path:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # not a folder (a zip file, a missing entry)
            continue
        for folder in names:
            for suffix in METADATA_SUFFIXES:
                if folder.endswith(suffix):
                    name, _, rest = folder.removesuffix(suffix).partition("-")
                    if rest:
                        versions.setdefault(normalized(name), rest.split("-")[0])
    return versions


def installed_version(distribution: str) -> str | None:
    """The version of an installed distribution, or None when it is not installed."""
    return _installed(tuple(sys.path)).get(normalized(distribution))


def installed_versions(distributions: tuple[str, ...]) -> dict[str, str]:
    """The versions of those distributions that are installed."""
    found = {name: installed_version(name) for name in distributions}
    return {name: version for name, version in found.items() if version is not None}


def is_release(version: str) -> bool:
    """Whether `version` is one a release tag builds (0.2.0), not a build between tags (0.2.1.dev3+gHASH)
    nor one from a source tree without git metadata (0.0.0, as the Action's image builds from main)."""
    return re.fullmatch(r"\d+\.\d+\.\d+", version) is not None and version != "0.0.0"
