"""What one invocation of lvegit runs with, read once (the command line and the LVEGIT_* environment, by
the command group in cli.py) and passed down: the retry policy of model and GitHub requests, the
verdict cache, what checkers run with, and what git is told. Tests configure lvegit through it (a retry
policy that records its waits instead of sleeping) rather than by patching modules. A child lvegit process
gets it as a flag (`--settings-json`), never through variables."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from lvegit.base.errors import UsageError

CACHE_MODES = ("on", "read", "off")


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5  # requests per model call, the first included
    base_delay: float = 0.5
    max_delay: float = 60.0
    refused_attempts: int = 2  # an address that refuses outright gets no more than this
    sleep: Callable[[float], None] | None = None  # instead of waiting (tests record the waits); None: wait

    def gives_up(self, request: int, refused: bool) -> bool:
        """Whether the request-th request (1-based) that failed transiently is the last one."""
        return request >= (min(self.attempts, self.refused_attempts) if refused else self.attempts)

    def delay(self, retry: int, retry_after: float | None) -> float:
        import random  # here, like asyncio below: only commands that make requests need them

        if retry_after is not None:  # the server knows best; a little jitter spreads the herd
            return min(self.max_delay, retry_after) * random.uniform(1.0, 1.1)
        return random.uniform(0, min(self.max_delay, self.base_delay * 2**retry))  # full jitter

    async def wait(self, retry: int, retry_after: float | None) -> None:
        """Wait before the retry-th retry of a model request (asynchronous: other requests go on)."""
        await self.wait_for(self.delay(retry, retry_after))

    async def wait_for(self, seconds: float) -> None:
        """Wait `seconds` without blocking the event loop (a retry, or the next look at a batch)."""
        if self.sleep is not None:
            self.sleep(seconds)
            return
        import asyncio  # here: check, validate and list import no asyncio (about 40 ms of a cold start)

        await asyncio.sleep(seconds)

    def pause(self, seconds: float) -> None:
        """Wait `seconds`, blocking: for GitHub's rate limits, whose waits PyGithub computes."""
        if self.sleep is not None:
            self.sleep(seconds)
            return
        import time

        time.sleep(seconds)


@dataclass(frozen=True)
class CacheSettings:
    """The verdict cache. LVEGIT_CACHE: on, read (read without writing: a pull request's check) or off;
    LVEGIT_CACHE_DIR: where it lives (default: .lvegit-cache at the repository root)."""

    mode: str = "on"
    directory: str | None = None


@dataclass(frozen=True)
class CheckerSettings:
    """What checkers run with. LVEGIT_CHECKER_LOAD_TIMEOUT and LVEGIT_CHECKER_TIMEOUT: the seconds a
    contributed checker may take to load and to judge one response (120, 30); LVEGIT_CHECKER_LVE_BUDGET
    and LVEGIT_CHECKER_BUDGET: the seconds contributed checker code, and lvegit's checkers at work on an
    LVE's lambdas and patterns, may take in all, per LVE and per command (300, 1800), after which the rest
    is reported as not judged; LVEGIT_ALLOW_DOWNLOADS=1: model
    checkers may download from the hub; LVEGIT_SPACY_MODEL: PII_Checker's spaCy pipeline;
    LVEGIT_TRUSTED_MODEL_DIRS: folders (separated by the path separator) whose models a classifier
    checker may load, besides the hub cache; LVEGIT_UNCONFINED_CHECKERS=1: run contributed checker code
    even where the sandbox can neither enter namespaces nor change uid while this process holds secrets;
    LVEGIT_CHECKER_SCRATCH_MIB: the MiB a contributed checker's scratch folder may hold (512; four times
    that for all workers together)."""

    load_timeout: float = 120.0
    call_timeout: float = 30.0
    lve_budget: float = 300.0
    command_budget: float = 1800.0
    allow_downloads: bool = False
    spacy_model: str | None = None
    trusted_model_dirs: str | None = None
    allow_unconfined: bool = False
    scratch_mib: int = 512


@dataclass(frozen=True)
class HistorySettings:
    """The run history. LVEGIT_HISTORY_DIR: its folder, relative to the repository root (default:
    history)."""

    directory: str | None = None


def _seconds(variable: str, value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise UsageError(f"{variable} must be a number of seconds above 0, not {value!r}")
    return seconds


def _cache_mode(variable: str, value: str) -> str:
    if value not in CACHE_MODES:
        raise UsageError(f"{variable} must be one of {', '.join(CACHE_MODES)}, not {value!r}")
    return value


def _mebibytes(variable: str, value: str) -> int:
    if not value.isdigit() or int(value) == 0:
        raise UsageError(f"{variable} must be a whole number of MiB above 0, not {value!r}")
    return int(value)


def _flag(variable: str, value: str) -> bool:
    return value == "1"


def _text(variable: str, value: str) -> str | None:
    return value or None


# Every LVEGIT_* variable: the part of the settings it sets, its field, and how its text is read.
ENVIRONMENT: dict[str, tuple[str, str, Callable[[str, str], Any]]] = {
    "LVEGIT_CACHE": ("cache", "mode", _cache_mode),
    "LVEGIT_CACHE_DIR": ("cache", "directory", _text),
    "LVEGIT_CHECKER_LOAD_TIMEOUT": ("checkers", "load_timeout", _seconds),
    "LVEGIT_CHECKER_TIMEOUT": ("checkers", "call_timeout", _seconds),
    "LVEGIT_CHECKER_LVE_BUDGET": ("checkers", "lve_budget", _seconds),
    "LVEGIT_CHECKER_BUDGET": ("checkers", "command_budget", _seconds),
    "LVEGIT_ALLOW_DOWNLOADS": ("checkers", "allow_downloads", _flag),
    "LVEGIT_SPACY_MODEL": ("checkers", "spacy_model", _text),
    "LVEGIT_TRUSTED_MODEL_DIRS": ("checkers", "trusted_model_dirs", _text),
    "LVEGIT_UNCONFINED_CHECKERS": ("checkers", "allow_unconfined", _flag),
    "LVEGIT_CHECKER_SCRATCH_MIB": ("checkers", "scratch_mib", _mebibytes),
    "LVEGIT_HISTORY_DIR": ("history", "directory", _text),
}


@dataclass(frozen=True)
class Settings:
    argv: tuple[str, ...] = ()  # the command line after `lvegit`, for the command that resumes a run
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    cache: CacheSettings = field(default_factory=CacheSettings)
    checkers: CheckerSettings = field(default_factory=CheckerSettings)
    history: HistorySettings = field(default_factory=HistorySettings)
    # Variables added to every git command's environment (the Action's safe.directory entry)
    git_environment: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_environment(cls, environ: Mapping[str, str], **given: Any) -> Settings:
        """The settings the LVEGIT_* variables of `environ` say, with `given` fields as they are."""
        parts: dict[str, dict[str, Any]] = {"cache": {}, "checkers": {}, "history": {}}
        for variable, (part, name, read) in ENVIRONMENT.items():
            value = environ.get(variable)
            if value:  # set and not empty: an empty variable is an unset one
                parts[part][name] = read(variable, value)
        return cls(
            cache=CacheSettings(**parts["cache"]),
            checkers=CheckerSettings(**parts["checkers"]),
            history=HistorySettings(**parts["history"]),
            **given,
        )

    def as_flag(self) -> str:
        """What a child lvegit process is to run with, for its --settings-json flag."""
        return json.dumps(
            {
                "cache": asdict(self.cache),
                "checkers": asdict(self.checkers),
                "history": asdict(self.history),
                "git_environment": [list(pair) for pair in self.git_environment],
            }
        )

    @classmethod
    def from_flag(cls, text: str, **given: Any) -> Settings:
        """The settings a parent lvegit process wrote with as_flag."""
        try:
            data = json.loads(text)
            return cls(
                cache=CacheSettings(**data["cache"]),
                checkers=CheckerSettings(**data["checkers"]),
                history=HistorySettings(**data["history"]),
                git_environment=tuple((str(key), str(value)) for key, value in data["git_environment"]),
                **given,
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"--settings-json is not what a parent lvegit writes: {exc}") from None


# This process's settings, set once per command by the command group (cli.py) from its command line and
# environment. Layers that a call chain cannot reach read them here: checkers are built by name from an
# LVE's test.json deep inside judging, and every git command gets the Action's extra environment.
_current: Settings | None = None


def configure(settings: Settings) -> Settings:
    global _current
    _current = settings
    return settings


def current() -> Settings:
    global _current
    if _current is None:  # a caller that never configured: the defaults, one object for the process
        _current = Settings()
    return _current
