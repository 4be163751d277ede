# SPDX-License-Identifier: MIT
"""syncspy.guard: the in-process sync guard for Python (docs/python.md, "The guard").

no_sync() and expect_syncs() open a guard of the shim (interpose/guard.c, syncspy_guard_open)
on the calling thread: every sync point (S1-S7, docs/sync-model.md) the thread makes inside the
block is counted by class and named, API, class, count and the user's file:line; at the end
of the block, more than allowed raises SyncError naming each one. Guards nest; other threads
are not affected (GUARD-3). counts() reads the thread's live per-class counters.
"""
import contextlib
import ctypes
import os
import threading

from . import _native
from ._native import NotRecording

CLASSES = {
    "S1": "device synchronize",
    "S2": "stream synchronize",
    "S3": "event synchronize",
    "S4": "blocking copy",
    "S5": "pageable async copy",
    "S6": "implicit sync (allocation, free, registration)",
    "S7": "polling (stream/event query)",
}
NAMES = sorted(CLASSES)  # S1..S7: bit N-1 for SN (SYNCSPY_S1 ...)


def class_mask(classes):
    """The SYNCSPY_S* bits of CLASSES: None (all), "S2", or an iterable of such names."""
    if classes is None:
        return 0
    if isinstance(classes, str):
        classes = [classes]
    mask = 0
    for name in classes:
        if name not in CLASSES:
            raise ValueError("syncspy: unknown sync class %r (expected one of %s)"
                             % (name, ", ".join(NAMES)))
        mask |= 1 << (int(name[1:]) - 1)
    return mask


class SyncPoint:
    """One sync point of a guard: API, class, count and where the user made it."""
    __slots__ = ("api", "sync_class", "count", "file", "line", "function", "address")

    def __init__(self, point):
        self.api = point.api.decode("utf-8", "replace")
        self.sync_class = "S%d" % point.sync_class
        self.count = int(point.count)
        self.file = (point.file or b"").decode("utf-8", "replace")
        self.line = int(point.line)
        self.function = (point.function or b"").decode("utf-8", "replace")
        self.address = int(point.address)

    @property
    def where(self):
        """FILE:LINE in FUNCTION for a Python frame; FUNCTION (MODULE) for native code."""
        if self.line:
            return "%s:%d in %s" % (self.file, self.line, self.function)
        if self.function:  # as the database names native sites (interpose/sites.c)
            return "%s (%s)" % (self.function, os.path.basename(self.file))
        return self.file or "(unknown site)"

    def __str__(self):
        return "%s: %s %s (%s) x%d" % (self.where, self.api, self.sync_class,
                                       CLASSES[self.sync_class], self.count)

    def __repr__(self):
        return "<SyncPoint %s>" % self

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__slots__}


class SyncError(AssertionError):
    """More sync points inside a guarded block than it allows; .points names them."""
    __module__ = "syncspy"  # as users name it

    def __init__(self, message, points=(), count=0, allowed=0):
        super().__init__(message)
        self.points = list(points)
        self.count = count
        self.allowed = allowed


def describe(what, points, count, allowed, inside="inside the block"):
    """SyncError's text: the count, then one line per sync point."""
    noun = "sync point" if count == 1 else "sync points"
    lines = ["%s: %d %s %s (allowed: %d):" % (what, count, noun, inside, allowed)]
    lines += ["  " + str(point) for point in points]
    unnamed = count - sum(point.count for point in points)
    if unnamed > 0:
        lines.append("  and %d more, unnamed (a guard names 256 places at most)" % unnamed)
    return "\n".join(lines)


class Guard(contextlib.ContextDecorator):
    """A guard on the calling thread: `with Guard(...):` or as a decorator. After the block,
    .points and .count say what it counted (also when it raised)."""

    def __init__(self, max=0, classes=None, at_first=False, what="syncspy.expect_syncs"):
        if max is None or int(max) < 0:
            raise ValueError("syncspy: max must be a non-negative integer")
        self.max = int(max)
        self.classes = classes
        self.mask = class_mask(classes)
        self.at_first = bool(at_first)
        self.what = what
        self.points = []
        self.count = 0
        self.by_class = {name: 0 for name in NAMES}
        self._id = 0
        self._first = None

    def _recreate_cm(self):  # a decorated function may run on many threads, or recurse
        return Guard(self.max, self.classes, self.at_first, self.what)

    def _first_error(self):
        """A class of its own for this guard's at-first exception: the shim raises the class
        (syncspy_python_raise, PyThreadState_SetAsyncExc), and Python makes it without
        arguments, right after the call that synced, while the guard is still open."""
        guard = self

        def __init__(error, *args):
            if args:
                return SyncError.__init__(error, *args)
            guard._read(_native.shim())
            first = guard.points[:1]
            SyncError.__init__(error, "%s: a sync point inside the block (at_first=True):\n%s"
                               % (guard.what, "\n".join("  " + str(p) for p in first)),
                               first, guard.count, 0)

        return type("SyncError", (SyncError,), {"__init__": __init__, "__module__": "syncspy"})

    def __enter__(self):
        shim = _native.shim()
        if self._id:
            raise RuntimeError("syncspy: this guard is open already")
        self._thread = threading.get_ident()
        self._first, on_sync, arg = None, _native.ON_SYNC(), None
        if self.at_first:
            if self.max != 0:
                raise ValueError("syncspy: at_first=True is for no_sync (max=0)")
            self._first = self._first_error()  # kept alive here: the shim holds its address
            on_sync = ctypes.cast(shim.syncspy_python_raise, _native.ON_SYNC)
            arg = id(self._first)  # the class object's address (CPython)
        self._id = shim.syncspy_guard_open(self.mask, on_sync, arg)
        if not self._id:
            raise NotRecording("syncspy: the shim records nothing in this process "
                               "(SYNCSPY_DISABLE=1, or its output could not be written): "
                               "%s cannot count" % self.what)
        return self

    def _read(self, shim):
        n = shim.syncspy_guard_points(self._id, None, 0)
        buffer = (_native.SyncPoint * max(n, 1))()
        n = shim.syncspy_guard_points(self._id, buffer, n)
        self.points = [SyncPoint(buffer[i]) for i in range(max(n, 0))]
        self.count = shim.syncspy_guard_count(self._id, 0)
        self.by_class = {name: shim.syncspy_guard_count(self._id, i + 1)
                         for i, name in enumerate(NAMES)}

    def __exit__(self, kind, value, traceback):
        shim = _native.shim()
        if threading.get_ident() != self._thread:
            raise RuntimeError("syncspy: a guard is closed on the thread that opened it")
        self._read(shim)
        if shim.syncspy_guard_close(self._id) < 0:  # still open: close the inner one first
            raise RuntimeError("syncspy: guards closed out of order (a guard must close "
                               "before the guard it was opened in)")
        self._id = 0
        first, self._first = self._first, None
        if first is not None and kind is None and self.count:
            # Scheduled, not delivered yet (no check of the interpreter's since): take it back,
            # and raise at the end instead.
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread), None)
        if not shim.syncspy_recording():
            raise NotRecording("syncspy: the shim stopped recording inside the block: %s "
                               "could not count every sync point" % self.what)
        if kind is not None:
            return False  # the block's own exception (SyncError at_first included) goes on
        if self.count > self.max:
            raise SyncError(describe(self.what, self.points, self.count, self.max),
                            self.points, self.count, self.max)
        return False


def no_sync(classes=None, at_first=False):
    """A block (or decorated function) that must make no sync point of CLASSES (all: S1-S7)
    on this thread: SyncError at its end names each one; at_first=True raises right after the
    first instead (docs/python.md)."""
    return Guard(0, classes, at_first, "syncspy.no_sync")


def expect_syncs(max, classes=None):
    """A block that may make at most MAX sync points of CLASSES on this thread."""
    return Guard(max, classes, False, "syncspy.expect_syncs(max=%d)" % int(max))


def counts():
    """The calling thread's sync points so far, per class: {"S1": n, ..., "S7": n}."""
    shim = _native.shim()
    values = (ctypes.c_ulonglong * len(NAMES))()
    if shim.syncspy_sync_counts(values, len(NAMES)) != len(NAMES):
        raise NotRecording("syncspy: the shim records nothing in this process")
    return {name: int(values[i]) for i, name in enumerate(NAMES)}


def step(name="step"):
    """Marks the start of a step on the calling thread (syncspy_step): the report's steps."""
    _native.shim().syncspy_step(name.encode("utf-8") if name is not None else None)


def gpu_trace(on):
    """Pauses (False) or resumes (True) the GPU timeline; True when it records after the call."""
    return bool(_native.shim().syncspy_gpu_trace(1 if on else 0))


def recording():
    """Is this process recorded (the shim loaded and recording)?"""
    return _native.loaded() and bool(_native.shim().syncspy_recording())
