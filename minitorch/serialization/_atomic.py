"""Atomic file replacement that cleans up after itself.

The new contents go to a temp file `.<name>.XXXXXXXX.tmp` beside the target, then flush, fsync
and os.replace: a crash leaves either the old file or the new one, never a partial one. The
writer holds an flock on its temp file until the rename, so a later save to the same path can
tell a temp file abandoned by a killed writer (nobody holds its lock: the kernel drops a dead
process's locks) from one being written right now, and removes only the abandoned ones.
The file gets the mode a plain open() would give it: the target's own mode when it exists
(open(..., "wb") keeps it), else 0o666 less the umask (mkstemp's 0o600 would survive the rename).
"""
import os
import re
import secrets
import stat

try:
    import fcntl
except ImportError:          # no flock (Windows): abandoned temp files are left alone
    fcntl = None

_TEMP_NAME = "[A-Za-z0-9_]{8}"   # ours (hex) and mkstemp's, from older versions of save


def write_atomic(path, write):
    """Call `write(file)` on a fresh temp file, then make it `path` in one step."""
    path = os.fsdecode(path)
    parent = os.path.dirname(path)
    if parent and not os.path.isdir(parent):
        raise RuntimeError(f"Parent directory {parent} does not exist.")   # torch's words
    target = os.path.realpath(path)        # through a symlink, as open() would write
    directory, name = os.path.split(target)
    remove_abandoned_temps(directory, name)
    fd, tmp = _create_locked_temp(directory, name, _mode_for(target))
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
            os.replace(tmp, target)        # still locked: no cleaner can take it meanwhile
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    _fsync_directory(directory)


def temp_files(directory, name):
    """The temp files a save to `directory/name` may have left (for tests and benchmarks)."""
    pattern = re.compile(re.escape(f".{name}.") + _TEMP_NAME + r"\.tmp")
    try:
        return sorted(os.path.join(directory, entry) for entry in os.listdir(directory)
                      if pattern.fullmatch(entry))
    except OSError:
        return []


def remove_abandoned_temps(directory, name):
    if fcntl is None:
        return
    for tmp in temp_files(directory, name):
        _remove_if_abandoned(tmp)


def _remove_if_abandoned(tmp):
    try:
        fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)               # a live writer holds it
        return
    try:
        if _same_file(tmp, fd):    # the name still points at the file whose lock we hold
            os.unlink(tmp)
    except OSError:
        pass
    finally:
        os.close(fd)


def _create_locked_temp(directory, name, mode):
    """(fd, path) of a new temp file, locked. A cleaner may remove the file between its creation
    and our lock (it then looked abandoned): such a file is dropped and another one made."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)       # the umask applies, as for open()
        except FileExistsError:
            continue
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            if fcntl is None:
                return fd, tmp
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _same_file(tmp, fd):
                return fd, tmp
        except BlockingIOError:
            pass                   # a cleaner holds it and is about to remove it
        except BaseException:
            os.close(fd)
            if os.path.exists(tmp):
                os.remove(tmp)
            raise
        os.close(fd)


def _same_file(path, fd):
    try:
        a, b = os.stat(path), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _mode_for(target):
    """The existing file's permission bits (an overwrite keeps them), or None for new files."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        return None


def _fsync_directory(directory):
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # not possible on every platform; the file itself is already synced
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
