"""The on-disk tuning cache: where it is, reading it at run time (validated), saving winners.

The cache is one JSON file in the user's cache folder (``platformdirs``), or in
``$CLRADIX_CACHE_DIR``; ``CLRADIX_NO_TUNING=1`` makes clradix ignore it. Entries are keyed by the
device identity (platform, device, driver version) and are only used by the clradix version that
wrote them. A file that cannot be read, or was written by another version, is ignored with a
warning (and replaced by the next ``python -m clradix autotune``); so is each entry of the wrong
shape or type, and a tuned policy that cannot run on its device
(:func:`clradix.planning.sort_plan.plan_sort`). An entry is a policy's ``fields()``: its
algorithm and that algorithm's knobs, never a debugging switch (SortDebug); an entry of the flat
form every algorithm's fields used to share (every knob, the switches off) reads as the same
policy (:func:`~.sort.policy_from_fields`).
The autotune harness that finds the winners is :mod:`clradix.autotune`.
"""

import contextlib
import json
import os
import tempfile
import warnings

from .._version import __version__
from ..core.keys import KEY_DTYPE_NAMES
from .sort import policy_from_fields

FORMAT = 1


def cache_path():
    folder = os.environ.get("CLRADIX_CACHE_DIR")
    if not folder:
        import platformdirs
        folder = platformdirs.user_cache_dir("clradix")
    return os.path.join(folder, "tuning.json")


def _read():
    path = cache_path()
    if not os.path.exists(path):
        return {}
    try:
        with open(path) as f:
            data = json.load(f)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            fmt = data.get("format") if isinstance(data, dict) else data
            raise ValueError(f"unknown format {fmt!r}")
    except (OSError, ValueError) as exc:
        warnings.warn(f"ignoring the tuning cache {path}: {exc}", RuntimeWarning, stacklevel=3)
        return {}
    if data.get("clradix") != __version__:
        warnings.warn(f"ignoring the tuning cache {path}: written by clradix "
                      f"{data.get('clradix')}, this is {__version__}", RuntimeWarning, stacklevel=3)
        return {}
    devices = data.get("devices", {})
    if not isinstance(devices, dict):
        warnings.warn(f"ignoring the tuning cache {path}: \"devices\" is a "
                      f"{type(devices).__name__}, expected an object", RuntimeWarning, stacklevel=3)
        return {}
    return devices


def tuned_table(profile):
    """{(dtype name, log2 n): SortPolicy} tuned for this device, or {} (none, or disabled).

    Entries of the wrong shape or type are left out, each with a RuntimeWarning naming it and why.
    """
    if os.environ.get("CLRADIX_NO_TUNING"):
        return {}
    entries = _read().get(profile.identity, {})
    if not isinstance(entries, dict):
        warnings.warn(f"ignoring the tuning entries of {profile.identity}: expected an object, "
                      f"got {type(entries).__name__}", RuntimeWarning, stacklevel=2)
        return {}
    table = {}
    for key, fields in entries.items():
        try:
            table[_entry_key(key)] = policy_from_fields(fields)
        except (TypeError, ValueError) as exc:
            warnings.warn(f"ignoring tuning entry {key!r} of {profile.identity}: {exc}",
                          RuntimeWarning, stacklevel=2)
    return table


def _entry_key(key):
    """(dtype name, log2 n) of a cache entry's key ``"dtype:log2n"``; ValueError naming the
    problem if it is not one."""
    dtype, sep, lg = key.partition(":")
    size_ok = lg.isascii() and lg.isdigit() and int(lg) <= 64
    if not sep or dtype not in KEY_DTYPE_NAMES or not size_ok:
        raise ValueError(f"expected a key \"dtype:log2n\" with dtype one of "
                         f"{', '.join(KEY_DTYPE_NAMES)} and log2n from 0 to 64")
    return dtype, int(lg)


def save(profile, winners):
    """Merge ``{(dtype, log2 n): SortPolicy}`` for this device into the cache file.

    Concurrent savers (autotune runs of several devices or processes) each keep every entry:
    the read, merge and write happen under an exclusive lock on a file beside the cache (POSIX
    ``flock``; where there is none, the last writer wins over a concurrent one), and each writer
    writes its own temporary file, which replaces the cache in one step (readers see the old
    file or the new one, never a part). Why a JSON file and not ``pytools.persistent_dict``
    (which pyopencl brings): the file is the user's to read and edit, one object per device
    identity, every field validated when it is read (policy_from_fields); a persistent dict
    keeps pickled values in SQLite, which neither a user nor another clradix version reads."""
    path = cache_path()
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    with _locked(path + ".lock"):
        devices = _read() if os.path.exists(path) else {}
        entry = devices.get(profile.identity)
        if not isinstance(entry, dict):  # none yet, or a broken one (tuned_table warned)
            entry = devices[profile.identity] = {}
        for (dtype, lg), pol in winners.items():
            entry[f"{dtype}:{lg}"] = pol.fields()
        fd, tmp = tempfile.mkstemp(dir=folder, prefix="tuning.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({"format": FORMAT, "clradix": __version__, "devices": devices}, f,
                          indent=1)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    return path


@contextlib.contextmanager
def _locked(lock_path):
    """An exclusive lock on ``lock_path`` for the ``with`` block (POSIX flock; none elsewhere)."""
    try:
        import fcntl
    except ImportError:   # pragma: no cover - Windows
        yield
        return
    with open(lock_path, "a") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
