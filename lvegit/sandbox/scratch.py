"""The scratch folders of sandboxed workers: one per launcher under the temporary folder, locked while its
lvegit process lives, removed whatever a checker left in it, and swept by the next lvegit that starts a
launcher where a killed one (SIGKILL, a runner that stopped) could not remove its own.

Removal never recurses (a checker nested folders 2,500 deep: Python 3.11's rmtree raised RecursionError,
which it does not pass to ignore_errors) and is not stopped by the modes a checker gave its folders (made
with mode 0o300, which its owner cannot list): each folder is made its owner's 0700 before it is read.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from lvegit.base.errors import CheckerError

PREFIX = "lvegit-sandbox-"
LOCK_SUFFIX = ".lock"
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
UNLOCKED_SECONDS = 24 * 3600  # a folder without a lock, untouched this long, is a leftover
_HELD: dict[str, int] = {}  # this process's scratch folders: their locks' descriptors (flock held)


def _open_folder(name: str, parent: int, removing: bool) -> int:
    """A descriptor of the folder `name` in `parent`, made readable and passable by its owner where it was
    not (root passes every mode), and writable too when `removing` (a live worker's folder keeps its
    other bits: its launcher's lets other uids pass). Its mode is changed through a descriptor of the
    folder itself, never through a name that a link could have taken the place of."""
    try:
        descriptor = os.open(name, _FOLDER, dir_fd=parent)
    except PermissionError:
        found = os.open(name, os.O_PATH | _FOLDER, dir_fd=parent)
        try:
            mode = 0o700 if removing else stat.S_IMODE(os.fstat(found).st_mode) | 0o500
            os.chmod(f"/proc/self/fd/{found}", mode)  # fchmod refuses an O_PATH descriptor
            descriptor = os.open(f"/proc/self/fd/{found}", _FOLDER & ~os.O_NOFOLLOW)
        finally:
            os.close(found)
    if removing:
        os.fchmod(descriptor, 0o700)
    return descriptor


def _clear(folder: int, problems: list[str]) -> list[str]:
    """Remove every entry of `folder` but its folders; their names."""
    folders = []
    with os.scandir(folder) as entries:
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.name)
                else:
                    os.unlink(entry.name, dir_fd=folder)
            except OSError as exc:
                problems.append(exc.strerror or str(exc))
    return folders


def remove_tree(top: str) -> str | None:
    """Remove the folder `top` and everything beneath it (see _depth_first); never through a link, never
    onto another filesystem. None when it is gone, else why not: it never raises."""
    problems: list[str] = []

    def remove(parent: int, name: str) -> None:
        try:
            os.rmdir(name, dir_fd=parent)
        except OSError as exc:
            problems.append(exc.strerror or str(exc))

    try:
        _depth_first(top, lambda folder: _clear(folder, problems), remove, problems, removing=True)
    except OSError as exc:
        problems.append(exc.strerror or str(exc))
    return f"{top}: {problems[0]}" if problems and os.path.lexists(top) else None


def _depth_first(
    top: str,
    enter: Callable[[int], list[str]],
    leave: Callable[[int, str], None],
    problems: list[str],
    removing: bool,
) -> None:
    """Go through `top` depth-first without recursion (a checker nests folders thousands deep, past
    PATH_MAX too) and with one folder open at a time (going back up through "..", checked to be the folder
    it came from): `enter` each folder's descriptor (the names of its folders to go into), `leave(parent,
    name)` each once everything beneath it is done. Never through a link, never onto another filesystem."""
    above = os.open(os.path.dirname(os.path.abspath(top)), _FOLDER)
    current = above
    try:
        current = _open_folder(os.path.basename(top), above, removing)
        device = os.fstat(current).st_dev
        # Each open level: its name in the level above, its folders still to go into, its identity.
        levels = [(os.path.basename(top), enter(current), _identity(current))]
        while levels:
            name, folders, _ = levels[-1]
            if folders:
                child = folders.pop()
                try:
                    opened = _open_folder(child, current, removing)
                except OSError as exc:
                    problems.append(exc.strerror or str(exc))
                    continue
                if os.fstat(opened).st_dev != device:  # a mount point: nothing beneath it is ours
                    os.close(opened)
                    problems.append(f"'{child}' is a mount point")
                    continue
                os.close(current)
                current = opened
                levels.append((child, enter(current), _identity(current)))
                continue
            levels.pop()
            up = os.open("..", _FOLDER, dir_fd=current) if levels else os.dup(above)
            if levels and _identity(up) != levels[-1][2]:
                os.close(up)
                raise OSError(f"'{name}' was moved while it was gone through")
            os.close(current)
            current = up
            leave(current, name)
    finally:
        if current != above:
            os.close(current)
        os.close(above)


class _Past(Exception):
    """More files than counting needs."""


class Usage(NamedTuple):
    bytes: int  # on disk (blocks, not sizes: a sparse file takes little)
    files: int  # entries, counted no further than asked
    whole: bool  # everything listed was gone through: nothing was renamed or removed while measured


def usage(top: str, most_files: int) -> Usage:
    """What is beneath `top`, counted until more than `most_files` entries are found. What cannot be gone
    through counts as nothing, and makes the measure not whole."""
    found = [0, 0]
    problems: list[str] = []

    def enter(folder: int) -> list[str]:
        folders = []
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError as exc:
                    problems.append(exc.strerror or str(exc))
                else:
                    found[0] += info.st_blocks * 512
                    if stat.S_ISDIR(info.st_mode):
                        folders.append(entry.name)
                found[1] += 1
                if found[1] > most_files:
                    raise _Past
        return folders

    try:
        _depth_first(top, enter, lambda parent, name: None, problems, removing=False)
    except _Past:
        return Usage(found[0], found[1], True)
    except OSError as exc:
        problems.append(exc.strerror or str(exc))
    return Usage(found[0], found[1], not problems)


@dataclass(frozen=True)
class Bounds:
    """How much the workers' scratch folders may hold: each (`bytes`, `files`), and all of one launcher's
    together (four times as much)."""

    bytes: int = 512 * 1024**2
    files: int = 20_000

    @property
    def total_bytes(self) -> int:
        return 4 * self.bytes

    @property
    def total_files(self) -> int:
        return 5 * self.files


class Watch:
    """Measures the scratch folders of a launcher's live workers every POLL_SECONDS (less often where
    measuring takes long), and calls `past(why)` of a worker past its bound, or of every one when its
    launcher's whole `root` holds more than all of them may (what a worker wrote outside its own folder,
    where nothing but namespaces hold it, is counted there). Neither Landlock nor namespaces bound a
    folder's bytes or files (RLIMIT_FSIZE bounds each file): a checker writes what the disk takes in a poll
    past its bound. Not seen: files it unlinked and holds open (RLIMIT_NOFILE and RLIMIT_FSIZE bound
    those, 256 of 16 MiB)."""

    POLL_SECONDS = 0.25
    # A checker renamed a folder through 100 names without pause beside 10,000 empty files: each measure
    # listed a name, found it gone when it opened it, and counted nothing beneath (50 MiB unseen in 40
    # measures of 40). An honest checker's folder is not changing under so many measures in a row.
    NOT_WHOLE = 4

    def __init__(self, root: str, bounds: Callable[[], Bounds] = Bounds) -> None:
        self.root = root
        self.bounds = bounds  # asked each time: they may change from one command to the next
        self._lock = threading.Lock()
        self._watched: dict[str, Callable[[str], None]] = {}
        self._ended: set[str] = set()  # told, and not removed yet
        self._not_whole: dict[str, int] = {}  # the measures in a row that could not go through it all
        self._thread: threading.Thread | None = None

    def add(self, folder: str, past: Callable[[str], None]) -> None:
        with self._lock:
            self._watched[folder] = past
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="lvegit-scratch-watch", daemon=True)
                self._thread.start()

    def remove(self, folder: str) -> None:
        """Stop watching a worker's folder, which its worker is about to remove."""
        with self._lock:
            self._watched.pop(folder, None)
            self._ended.discard(folder)
            self._not_whole.pop(folder, None)

    def check(self) -> None:
        """Measure every watched folder once (what the thread does each poll)."""
        from lvegit.sandbox.privileges import size_text  # ctypes: not on every start, which sweeps

        with self._lock:
            watched = list(self._watched)
        bounds = self.bounds()
        for folder in watched:
            size, files, whole = usage(folder, bounds.files)
            if size > bounds.bytes or files > bounds.files:
                self._past(
                    [folder], f"passed its bound of {size_text(bounds.bytes)} or {bounds.files:,} files"
                )
                continue
            self._not_whole[folder] = 0 if whole else self._not_whole.get(folder, 0) + 1
            if self._not_whole[folder] >= self.NOT_WHOLE:
                self._past(
                    [folder], f"changed under {self.NOT_WHOLE} measures in a row: it cannot be bounded"
                )
        with self._lock:
            if self._ended:  # what an ended worker holds is being removed: not counted against the others
                return
        size, files, _whole = usage(self.root, bounds.total_files)
        if size > bounds.total_bytes or files > bounds.total_files:
            total = f"{size_text(bounds.total_bytes)} or {bounds.total_files:,} files"
            self._past(watched, f"passed the bound of all workers together, {total}")

    def _past(self, folders: list[str], what: str) -> None:
        with self._lock:
            told = [(folder, self._watched.pop(folder)) for folder in folders if folder in self._watched]
            self._ended.update(folder for folder, _past in told)
        for _folder, past in told:
            past(f"the checker's scratch folder {what}")

    def _run(self) -> None:
        took = 0.0
        while True:
            # Measuring a folder of many files takes time in lvegit's process: a quarter of it at most.
            time.sleep(max(self.POLL_SECONDS, 3 * took))
            started = time.monotonic()
            self.check()
            took = time.monotonic() - started


def _identity(descriptor: int) -> tuple[int, int]:
    info = os.fstat(descriptor)
    return info.st_dev, info.st_ino


def make_root() -> str:
    """A new scratch folder for one launcher, locked for as long as this process lives or until
    remove_root. Its lock file (beside it: a worker may write in the folder) is made and locked first,
    so that a folder without one is a leftover. A CheckerError where the disk is full."""
    sweep()
    try:
        return _make_root()
    except OSError as exc:
        raise _unmade(tempfile.gettempdir(), exc) from None


def worker_folder(root: str, prefix: str) -> str:
    """A new scratch folder of one worker in its launcher's `root`; a CheckerError where the disk is full
    (another LVE's checker may have filled it)."""
    try:
        return tempfile.mkdtemp(prefix=prefix, dir=root)
    except OSError as exc:
        raise _unmade(root, exc) from None


def _unmade(where: str, exc: OSError) -> CheckerError:
    return CheckerError(f"the sandbox's scratch folder cannot be made in {where}: {exc.strerror or exc}")


def _make_root() -> str:
    while True:
        descriptor, lock = tempfile.mkstemp(prefix=PREFIX, suffix=LOCK_SUFFIX)
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        if _same_file(lock, descriptor):  # not removed by a sweep that took it for a dead one's first
            break
        os.close(descriptor)
    folder = lock.removesuffix(LOCK_SUFFIX)
    os.mkdir(folder, 0o711)  # a worker that becomes a uid of its own must pass it to reach its own folder
    _HELD[folder] = descriptor
    return folder


def remove_root(folder: str) -> str | None:
    """Remove a scratch folder of this process, then its lock; None, or why it could not be removed (its
    lock is kept, so that the next start removes what is left)."""
    problem = remove_tree(folder)
    descriptor = _HELD.pop(folder, None)
    if problem is None and descriptor is not None:
        with contextlib.suppress(OSError):
            os.unlink(folder + LOCK_SUFFIX)
    if descriptor is not None:
        os.close(descriptor)
    return problem


def _same_file(path: str, descriptor: int) -> bool:
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) == _identity(descriptor)


def _ours(path: str) -> os.stat_result | None:
    """What lstat says of `path` when it is this user's (another user's is never touched), else None."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return info if info.st_uid == os.geteuid() else None


def sweep(where: str | None = None) -> None:
    """Remove the scratch folders (this user's) that no living lvegit holds: their lock is free, or they
    have none."""
    where = where or tempfile.gettempdir()
    try:
        names = os.listdir(where)
    except OSError:
        return
    for name in names:
        if not name.startswith(PREFIX):
            continue
        path = os.path.join(where, name)
        info = _ours(path)
        if info is None:
            continue
        if name.endswith(LOCK_SUFFIX) and stat.S_ISREG(info.st_mode):
            _sweep_locked(path)
        # Its lock is made first and removed last: a folder without one is an earlier lvegit's, which made
        # none; one still running may use it, so only one untouched for a day is taken.
        elif (
            stat.S_ISDIR(info.st_mode)
            and time.time() - info.st_mtime > UNLOCKED_SECONDS
            and not os.path.lexists(path + LOCK_SUFFIX)
        ):
            remove_tree(path)


def _sweep_locked(lock: str) -> None:
    try:
        descriptor = os.open(lock, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held: its lvegit lives
        os.close(descriptor)
        return
    try:
        if _same_file(lock, descriptor) and remove_tree(lock.removesuffix(LOCK_SUFFIX)) is None:
            os.unlink(lock)
    except OSError:
        pass
    finally:
        os.close(descriptor)
