"""Files and directories on disk, for the storage layer (storage.py): the error every expected
storage condition raises, and the durable primitives the log and the snapshots are written with
(STORAGE.md, "The fsync policy"): directories created durably, whole writes, a file written and
fsynced, a file replaced atomically, a directory's entries fsynced."""

from __future__ import annotations

import os
from pathlib import Path


class StorageError(Exception):
    """An expected storage condition, with the path it concerns: ``"<path>: <problem>"``."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = Path(path)
        self.problem = problem


def prepare_directory(directory: Path, what: str) -> Path:
    """``directory``, created if missing (durably: the parent of every directory created is
    fsynced); a clear error if it cannot be or is not writable."""
    created = [d for d in (directory, *directory.parents) if not d.exists()]
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for made in reversed(created):
            fsync_directory(made.parent)
    except FileExistsError:
        raise StorageError(directory, f"the {what} directory is a file, not a directory") from None
    except NotADirectoryError:
        raise StorageError(directory, f"a part of the {what} directory's path is a file, not a directory") from None
    except OSError as error:
        raise StorageError(directory, f"cannot create the {what} directory: {error.strerror}") from error
    if not os.access(directory, os.W_OK | os.X_OK):
        raise StorageError(directory, f"the {what} directory is not writable")
    return directory


def fsync_directory(directory: Path) -> None:
    """Make the directory's entries (created, renamed, deleted files) durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_new_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (created or emptied) and fsync it; the caller fsyncs the directory."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new content: write a
    temporary file, fsync it, rename it over ``path``, fsync the directory."""
    temp = path.with_name(path.name + ".tmp")
    try:
        write_new_file(temp, data)
        os.replace(temp, path)
        fsync_directory(path.parent)
    except OSError as error:
        remove_quietly(temp)
        raise StorageError(path, f"cannot write: {error.strerror}") from error


def remove_quietly(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
