"""The check pipeline: each LVE validated and its recorded instances replayed, one record per LVE.

`lvegit check` prints these records and the GitHub Action builds its results from them. With a verdict
cache, an LVE whose folder has not changed since a run that stored its record (the same files, the same
lvegit, the same checker model) is neither loaded nor judged again: its record comes from the cache.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lvegit.judge.cache import VerdictCache
from lvegit.judge.results import LVECheck, LVEReport, ReplayResult
from lvegit.lve.repo import Repository, is_withheld

if TYPE_CHECKING:
    from lvegit.judge.replay import Judging


def _cached(cache: VerdictCache, key: str, lve: str) -> LVECheck | None:
    """The LVE's stored record: one that follows from its files, else one that also depends on this
    machine (a checker skipped here for a package or model it lacks) while the machine is unchanged."""
    entry = cache.get_lve(key) or cache.get_lve(cache.machine_key(key, cache.machine_stamp(lve)))
    if entry is None:
        return None
    try:
        return LVECheck.from_json(entry.get("check"))
    except ValueError:
        return None  # a damaged entry is judged again and written anew


def without_repeats(report: LVEReport, results: list[ReplayResult]) -> list[ReplayResult]:
    """The replay results less the errors that only repeat a validation finding, so that one cause is
    counted and shown once: an error on an instance line that validation found wrong, and every error of
    an LVE whose test.json, prompt or checker validation found unusable."""
    from lvegit.lve.spec import blocks

    instances = f"{report.path}/instances/"
    unusable = any(not p.file.startswith(instances) and blocks(p) for p in report.errors)
    wrong_lines = {(p.file, p.line) for p in report.errors if p.file.startswith(instances)}
    return [
        r
        for r in results
        if r.status != "error"
        or not (unusable or (r.file, r.line) in wrong_lines or (r.file, None) in wrong_lines)
    ]


def check_lve(
    repo: Repository, lve_dir: Path, cache: VerdictCache | None = None, strict: bool = False
) -> LVECheck:
    """Validate one LVE and replay its instances (from the cache when its folder is unchanged)."""
    key = None
    if cache is not None:
        key = cache.lve_key(repo, lve_dir, strict)
        cached = _cached(cache, key, repo.relative(lve_dir))
        if cached is not None:
            return cached
    from lvegit.judge.replay import judge_alone

    return judge_alone(_judging(repo, lve_dir, cache, strict, key))


def _judging(
    repo: Repository, lve_dir: Path, cache: VerdictCache | None, strict: bool, key: str | None
) -> Judging[LVECheck]:
    """Validate and replay an LVE that the cache holds no record of; store the record under `key`."""
    from lvegit.checkers.registry import CheckerFactory
    from lvegit.judge import replay, validate  # the checkers load only when an LVE is judged
    from lvegit.lve.spec import load_lve

    loaded = load_lve(repo, lve_dir)  # read once, its checker built once, for both
    lve = loaded[0]
    with CheckerFactory(lve) if lve is not None else contextlib.nullcontext() as factory:
        report = validate.validate_lve(repo, lve_dir, strict, loaded, factory)
        results, depends = yield from replay.judging_lve(repo, lve_dir, cache, loaded, factory)
    check = LVECheck(report, without_repeats(report, results))
    if cache is not None and key is not None and depends != "never":
        stamp = cache.machine_stamp(repo.relative(lve_dir)) if depends == "machine" else None
        where = cache.machine_key(key, stamp) if stamp is not None else key
        cache.put_lve(where, {"check": check.as_json()})
    return check


def check_stream(
    repo: Repository,
    lve_dirs: list[Path],
    cache: VerdictCache | None = None,
    strict: bool = False,
    opened: dict[Path, LVECheck] | None = None,
) -> Iterator[tuple[Path, LVECheck]]:
    """Each LVE's record as soon as it is known, in the order given (see lvegit.judge.replay.judge_stream);
    `opened`: the records of withheld LVEs that a disclosure identity opened (opened_checks)."""
    keys = {d: cache.lve_key(repo, d, strict) for d in lve_dirs} if cache is not None else {}
    settled = {
        d: c for d, key in keys.items() if cache is not None and (c := _cached(cache, key, repo.relative(d)))
    }
    if len(settled) == len(lve_dirs):  # nothing to judge: no checker, not even its code, is loaded
        yield from settled.items()
        return
    from lvegit.judge.launching import start_launcher_for

    start_launcher_for(repo, (d for d in lve_dirs if d not in settled))  # before the checkers' code loads
    from lvegit.judge import replay, validate

    published: list[dict[Path, str]] = []  # published_before's answer, once asked

    def here(lve_dir: Path) -> Judging[LVECheck]:
        if lve_dir in settled:
            return settled[lve_dir]
        if is_withheld(lve_dir):  # validated without a key, never replayed here
            from lvegit.judge.withheld import published_before, withheld_check

            if lve_dir in (opened or {}):
                return (opened or {})[lve_dir]
            if not published:  # git is asked once for every withheld LVE of the command
                published.append(published_before(repo, [d for d in lve_dirs if is_withheld(d)]))
            return withheld_check(repo, lve_dir, published[0])
        return (yield from _judging(repo, lve_dir, cache, strict, keys.get(lve_dir)))

    def read(document: Any) -> dict[str, LVECheck]:
        return {entry["path"]: LVECheck.from_json(entry) for entry in document["lves"]}

    def failed(lve_dir: Path, reason: str) -> LVECheck:
        return LVECheck(
            validate.validate_lve(repo, lve_dir, strict), [replay.replay_error(repo, lve_dir, reason)]
        )

    # Checked whole in that process, validation included: its records are used as they come.
    elsewhere = replay.Elsewhere(["check", "--strict"] if strict else ["check"], read, failed)
    yield from replay.judge_stream(repo, lve_dirs, cache, here, elsewhere, settled.__contains__)


def check_all(
    repo: Repository,
    lve_dirs: list[Path],
    cache: VerdictCache | None = None,
    strict: bool = False,
    opened: dict[Path, LVECheck] | None = None,
) -> list[LVECheck]:
    """Every LVE's record (see check_stream), in the order of `lve_dirs`."""
    per_lve = dict(check_stream(repo, lve_dirs, cache, strict, opened))
    return [per_lve[lve_dir] for lve_dir in lve_dirs]


def opened_checks(
    repo: Repository, lve_dirs: list[Path], identity: Any, strict: bool
) -> dict[Path, LVECheck]:
    """The withheld LVEs among `lve_dirs` checked as the trusted job checks them: each payload decrypted
    into a private scratch folder (removed after), validated and replayed there like any LVE, in the same
    sandbox, without the verdict cache (its files are public); the records keep statuses, files, fields
    and lines, never a message (see lvegit.judge.withheld.redacted)."""
    import shutil
    import tempfile

    from lvegit.base.errors import LVEError
    from lvegit.disclosure.abstract import read_abstract
    from lvegit.disclosure.withheld import scratch_copy
    from lvegit.judge.withheld import published_before, redacted, unopened, withheld_report
    from lvegit.lve.problems import Problems

    withheld = [d for d in lve_dirs if is_withheld(d)]
    if not withheld:
        return {}
    published = published_before(repo, withheld)
    scratch = Path(tempfile.mkdtemp(prefix="lvegit-withheld-"))  # mode 0700: this user's only
    try:
        placed: dict[Path, Path] = {}
        found: dict[Path, LVECheck] = {}
        for lve_dir in withheld:
            report = withheld_report(repo, lve_dir, published)  # what is checked without a key holds first
            if not report.valid:
                found[lve_dir] = LVECheck(report, [])
                continue
            try:
                abstract = read_abstract(lve_dir, Problems(report.path))  # valid: the report says so
                placed[scratch_copy(repo, lve_dir, identity, scratch, abstract)] = lve_dir
            except LVEError as exc:
                found[lve_dir] = unopened(repo, lve_dir, str(exc))
        clear = Repository(scratch)
        for copy, check in zip(placed, check_all(clear, list(placed), None, strict), strict=True):
            found[placed[copy]] = redacted(check)
        return found
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
