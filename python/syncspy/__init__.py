# SPDX-License-Identifier: MIT
"""syncspy for Python (docs/python.md): record a program's host-device syncs with the user's
lines, and hold code to none or a budget of them.

    python -m syncspy train.py ARGS        record the script (the shim preloaded)
    python -m syncspy report syncspy-out   the `syncspy` command, as built from the same tree

    import syncspy
    with syncspy.no_sync():                # SyncError at the end names each sync point
        model(x)
    with syncspy.expect_syncs(max=1):      # a budget
        loss.item()
    syncspy.counts()                       # this thread's sync points per class, live
    syncspy.step()                         # marks a step for the report
    syncspy.load("syncspy-out")            # calls, GPU activity, findings, steps: DataFrames

The guard is the shim's (interpose/guard.c): per thread, nestable, counting every sync point
the thread makes (S1-S7, docs/sync-model.md), inside libraries too.
"""
import os
import sys
import warnings

from ._native import HOW_TO_START, NotRecording, loaded
from .guard import (CLASSES, SyncError, SyncPoint, counts, expect_syncs, gpu_trace, no_sync,
                    recording, step)
from .load import Recording, load

__all__ = ["CLASSES", "NotRecording", "NotRecordingWarning", "Recording", "SyncError", "SyncPoint", "counts",
           "expect_syncs", "gpu_trace", "load", "no_sync", "recording", "start", "stop", "step"]


def _version():
    try:
        from importlib.metadata import version
        return version("syncspy")
    except Exception:  # not installed (the source tree on sys.path)
        return "unknown"


__version__ = _version()

def start():
    """Starts the recording (capture ranges, docs/recording.md: syncspy_start in the shim), in
    every SYNCSPY_CAPTURE_RANGE mode; True when calls are recorded after it (False: outside
    SYNCSPY_DELAY/SYNCSPY_DURATION's window, or SYNCSPY_DISABLE=1). NotRecording without the
    shim."""
    return bool(_native.shim().syncspy_start())


def stop():
    """Stops the recording until start() (syncspy_stop): calls are then only counted, per
    class, and the GPU timeline is off. Returns whether calls are still recorded (False)."""
    return bool(_native.shim().syncspy_stop())


class NotRecordingWarning(RuntimeWarning):
    """import syncspy in a program not started under syncspy (filter it, or SYNCSPY_QUIET=1)."""


# A program that imports syncspy without the shim records nothing: say once how to start it.
# Not for `python -m syncspy` itself (sys.argv[0] is "-m" while runpy imports the package) or
# the `syncspy` script the package installs, not inside pytest, where the plugin says it in the
# session header (and fails the guarded tests), not in an interactive session or a notebook
# (where load() is what one imports it for), nor when SYNCSPY_QUIET is set.
if (not loaded() and sys.argv[:1] != ["-m"] and os.path.basename(sys.argv[0]) != "syncspy"
        and "pytest" not in sys.modules and "ipykernel" not in sys.modules
        and not hasattr(sys, "ps1") and not sys.flags.interactive
        and os.environ.get("SYNCSPY_QUIET", "0") in ("", "0")):
    warnings.warn("syncspy: this process was not started under syncspy (libsyncspy.so is not "
                  "loaded): nothing is recorded and no_sync()/expect_syncs() raise NotRecording. "
                  "To record, " + HOW_TO_START, NotRecordingWarning, stacklevel=2)
