"""The one exception hierarchy of lvegit and the exit codes it maps to."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_UNEXPECTED = 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE: the reader of the output went away


class LvegitError(Exception):
    """Base of every error lvegit raises on purpose; the CLI prints its message without a traceback."""

    exit_code = EXIT_UNEXPECTED


class UsageError(LvegitError):
    """The command line asks for something that cannot be done (bad path, missing option, ...)."""

    exit_code = EXIT_USAGE


class Interrupted(LvegitError):
    """Ctrl-C during work that can be continued; the message says how."""

    exit_code = EXIT_INTERRUPTED


class RepositoryNotFound(UsageError):
    """No LVE repository root was found where one was expected."""


class LVEError(LvegitError):
    """Something about one LVE (its files or its checker) is wrong; the message names where."""

    exit_code = EXIT_FINDINGS


class UnsafeExpressionError(LVEError):
    """A lambda string uses a construct outside the allow-list."""


class CheckerError(LVEError):
    """A checker could not be built or failed while judging a response."""


class CheckerUnavailable(CheckerError):
    """A checker cannot run here: its model or a package it imports is not available (replay skips it).
    `module`: the Python package that could not be imported, when that is the reason."""

    def __init__(self, message: str, module: str | None = None) -> None:
        super().__init__(message)
        self.module = module
