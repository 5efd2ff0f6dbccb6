"""Opening the files a user names: inputs must be regular files, outputs never clobber or follow links.

Every reader calls :func:`require_input_file` first, so a folder, a FIFO, ``/dev/zero`` or a socket is
refused at once with one clear line instead of blocking or reading forever. Every command that writes
a file opens it with :func:`open_output`: an existing file is kept unless the user passed ``--force``,
a symbolic link is never followed (``O_NOFOLLOW``), and a missing folder or a folder given as the file
is a clear error instead of a traceback.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import IO

from ndcg_labeling.errors import InputFileError, OutputFileError


def require_input_file(path: str | Path) -> None:
    """Raise :class:`InputFileError` unless ``path`` is an existing regular file (links to one are fine)."""
    path_s = str(path)
    try:
        mode = os.stat(path_s).st_mode
    except FileNotFoundError:
        raise InputFileError(path_s, "no such file") from None
    except NotADirectoryError:
        raise InputFileError(path_s, "no such file (a part of the path is not a folder)") from None
    except OSError as exc:
        raise unreadable(path_s, exc) from None
    if stat.S_ISDIR(mode):
        raise InputFileError(path_s, "is a folder, not a file")
    if not stat.S_ISREG(mode):
        kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        raise InputFileError(path_s, f"is {kind}; give a regular file")
    if not os.access(path_s, os.R_OK):
        raise InputFileError(path_s, "cannot read it (permission denied)")


def unreadable(path: str | Path, exc: OSError) -> InputFileError:
    """The one line for a file that exists but cannot be read: ``FILE: cannot read it (why)``, the
    same words from every reader (``permission denied`` for EACCES/EPERM)."""
    if exc.errno in (errno.EACCES, errno.EPERM):
        return InputFileError(str(path), "cannot read it (permission denied)")
    return InputFileError(str(path), f"cannot read it ({(exc.strerror or str(exc)).lower()})")


def estimated_lines(path: str | Path, sample: int = 1 << 16) -> int:
    """About how many lines a regular file holds (its size times the share of line ends in its first
    64 KiB): a hint for planning work, never a count; 0 for anything but a readable regular file."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            return 0
        with open(path, "rb") as fh:
            head = fh.read(sample)
    except OSError:
        return 0
    return info.st_size * head.count(b"\n") // len(head) if head else 0


def refuse_nul(path: str | Path, chunk: int = 1 << 20) -> None:
    """Raise :class:`InputFileError` (with the line) if the file holds a NUL byte: C parsers stop a
    value at NUL, which would store a silently shortened id. Reads the file once, in chunks."""
    require_input_file(path)
    lines = 0
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            at = block.find(b"\x00")
            if at >= 0:
                raise InputFileError(str(path), "NUL byte (0x00) in the file; is it binary, or UTF-16?",
                                     line=lines + block[:at].count(b"\n") + 1)
            lines += block.count(b"\n")


def check_output_path(path: str | Path, *, force: bool = False) -> None:
    """Raise :class:`OutputFileError` if ``path`` cannot be written as a new file (or, with ``force``,
    replaced). Commands call it before their work, so a bad ``--out`` fails fast."""
    p = Path(path)
    path_s = str(path)
    if p.is_symlink():
        raise OutputFileError(path_s, "is a symbolic link; refusing to write through it (give the real path)")
    if p.is_dir():
        raise OutputFileError(path_s, "is a folder; give a file name")
    if p.exists() and not p.is_file():
        raise OutputFileError(path_s, "is not a regular file; give a file name")
    if p.exists() and not force:
        raise OutputFileError(path_s, "already exists; pass --force to overwrite it")
    parent = p.parent
    if not parent.is_dir():
        raise OutputFileError(path_s, f"the folder {str(parent)!r} does not exist")


def open_output(path: str | Path, *, force: bool = False) -> IO[str]:
    """Open ``path`` for writing: a new file, or an existing regular file only with ``force``.

    Never follows a symbolic link (also one created after :func:`check_output_path` ran). The file is
    opened as UTF-8 text, line ends written as given.
    """
    path_s = str(path)
    check_output_path(path_s, force=force)
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= os.O_TRUNC if force else os.O_EXCL
    try:
        fd = os.open(path_s, flags, 0o666)
    except FileExistsError:
        raise OutputFileError(path_s, "already exists; pass --force to overwrite it") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutputFileError(path_s, "is a symbolic link; refusing to write through it") from None
        raise OutputFileError(path_s, f"cannot write: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # e.g. --force onto a FIFO or a device
        os.close(fd)
        raise OutputFileError(path_s, "is not a regular file")
    return os.fdopen(fd, "w", encoding="utf-8", newline="")


def write_text_file(path: str | Path, text: str, *, force: bool = False) -> None:
    """Write ``text`` to ``path`` with the rules of :func:`open_output`."""
    with open_output(path, force=force) as fh:
        fh.write(text)
