"""The one exception hierarchy of lvegit and the exit codes it maps to."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_UNEXPECTED = 3
EXIT_SERVICE = (
    4  # a service lvegit depends on failed for good (a model API, GitHub, a Batch API): not a finding
)
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


class MissingExtra(UsageError):
    """A part of lvegit needs packages of an extra that is not installed (the message names it)."""


class RepositoryNotFound(UsageError):
    """No LVE repository root was found where one was expected."""


class GitHubError(LvegitError):
    """A GitHub API call failed (the message names the call and GitHub's answer)."""

    exit_code = EXIT_SERVICE


class GitHubAccessError(GitHubError):
    """GitHub refused access (401, 403) or cannot find what was named (404): the token, the repository or
    the pull request number given to lvegit is wrong."""

    exit_code = EXIT_USAGE


class LVEError(LvegitError):
    """Something about one LVE (its files or its checker) is wrong; the message names where."""

    exit_code = EXIT_FINDINGS


class InvalidValue(LVEError, ValueError):
    """A value an LVE gives (a checker argument, a pattern, a template, a response) cannot be used; the
    message says why. Also a ValueError, as Python code that calls lvegit's helpers expects."""


class UnsafeExpressionError(LVEError):
    """A lambda string uses a construct outside the allow-list."""


class CheckerError(LVEError):
    """A checker could not be built or failed while judging a response."""


class RegexTimeout(CheckerError):
    """A pattern took longer than the time limit on one input."""


class CheckerUnavailable(CheckerError):
    """A checker cannot run here: its model or a package it imports is not available (replay skips it).
    `module`: the Python package that could not be imported, when that is the reason."""

    def __init__(self, message: str, module: str | None = None) -> None:
        super().__init__(message)
        self.module = module
