# SPDX-License-Identifier: MIT
"""syncspy._native: where the package's libsyncspy.so and `syncspy` command are, and the shim's
exported C API (include/syncspy/syncspy.h) through ctypes, found in the running process.

The shim is only usable when the process was started with it preloaded (python -m syncspy,
syncspy run, or LD_PRELOAD): loading it later would see none of the CUDA calls made before and
miss the libraries already bound. So this module never loads it: it looks its functions up in
the process (ctypes.CDLL(None)), and says how to start the program when they are not there.
"""
import ctypes
import os

HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE = os.path.join(HERE, "_bundled")

HOW_TO_START = (
    "start the program under syncspy: `python -m syncspy SCRIPT.py ARGS` (or `python -m syncspy "
    "-m MODULE ARGS`, `python -m syncspy torchrun ...`, `python -m syncspy run -- CMD ARGS`); "
    "for pytest: `python -m syncspy -m pytest ARGS`")


class NotRecording(RuntimeError):
    """The shim is not recording in this process: nothing can be counted."""
    __module__ = "syncspy"  # as users name it


def command():
    """The package's `syncspy` command."""
    path = os.path.join(NATIVE, "bin", "syncspy")
    if not os.path.isfile(path):
        raise NotRecording("syncspy: the package has no syncspy command (%s): install it with "
                           "`pip install --no-build-isolation .` from a syncspy tree" % path)
    return path


def library():
    """The package's libsyncspy.so (what `syncspy run` preloads: docs/cli.md, run)."""
    return os.path.join(NATIVE, "lib", "libsyncspy.so")


class SyncPoint(ctypes.Structure):
    """struct syncspy_sync_point (include/syncspy/syncspy.h)."""
    _fields_ = [("api", ctypes.c_char_p), ("sync_class", ctypes.c_int),
                ("count", ctypes.c_ulonglong), ("file", ctypes.c_char_p),
                ("line", ctypes.c_int), ("function", ctypes.c_char_p),
                ("address", ctypes.c_ulonglong)]


ON_SYNC = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(SyncPoint))

_shim = None


def shim():
    """The shim's exported functions in this process, or NotRecording saying how to start."""
    global _shim
    if _shim is not None:
        return _shim
    process = ctypes.CDLL(None)
    try:
        process.syncspy_guard_open
    except AttributeError:
        raise NotRecording("syncspy: libsyncspy.so is not loaded in this process: " + HOW_TO_START)
    process.syncspy_guard_open.argtypes = [ctypes.c_uint, ON_SYNC, ctypes.c_void_p]
    process.syncspy_guard_open.restype = ctypes.c_int
    process.syncspy_guard_points.argtypes = [ctypes.c_int, ctypes.POINTER(SyncPoint), ctypes.c_int]
    process.syncspy_guard_points.restype = ctypes.c_int
    process.syncspy_guard_count.argtypes = [ctypes.c_int, ctypes.c_int]
    process.syncspy_guard_count.restype = ctypes.c_longlong
    process.syncspy_guard_close.argtypes = [ctypes.c_int]
    process.syncspy_guard_close.restype = ctypes.c_longlong
    process.syncspy_sync_counts.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_int]
    process.syncspy_sync_counts.restype = ctypes.c_int
    process.syncspy_python_raise.argtypes = [ctypes.c_void_p, ctypes.POINTER(SyncPoint)]
    process.syncspy_python_raise.restype = None
    process.syncspy_recording.argtypes = []
    process.syncspy_recording.restype = ctypes.c_int
    process.syncspy_step.argtypes = [ctypes.c_char_p]
    process.syncspy_step.restype = None
    process.syncspy_gpu_trace.argtypes = [ctypes.c_int]
    process.syncspy_gpu_trace.restype = ctypes.c_int
    for name in ("syncspy_start", "syncspy_stop"):  # capture ranges (docs/recording.md)
        getattr(process, name).argtypes = []
        getattr(process, name).restype = ctypes.c_int
    _shim = process
    return process


def loaded():
    """Is the shim loaded in this process?"""
    try:
        shim()
        return True
    except NotRecording:
        return False
