#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/progs/py_guard.py: the sync guard from Python on the CPU stand-ins (t902), run under
the shim. Prints what each case raised or counted, the sync points' lines as LINE(marker) so
that the test's expected output does not move with the file.

The stand-in runtime is called through ctypes: CDLL releases the GIL during the call (as
torch's operations do), PyDLL keeps it; the guard names the line either way."""
import ctypes
import os
import re
import sys
import threading

ctypes.CDLL(os.environ["CUDART"], mode=os.RTLD_GLOBAL)
cuda = ctypes.CDLL(None)
cuda_gil = ctypes.PyDLL(None)
import syncspy  # noqa: E402

HERE = os.path.abspath(__file__)
MARKS = {}
with open(HERE) as source:
    for number, text in enumerate(source, 1):
        found = re.search(r"# MARK:(\w+)", text)
        if found:
            MARKS[number] = found.group(1)


def show(text):
    """The text with this file's lines named by their markers."""
    return re.sub(re.escape(HERE) + r":(\d+)",
                  lambda m: "LINE(%s)" % MARKS.get(int(m.group(1)), m.group(1)), str(text))


def case(name, function):
    try:
        result = function()
        print("%s: ok%s" % (name, "" if result is None else " " + show(result)))
    except syncspy.SyncError as error:
        print("%s: SyncError\n%s" % (name, show(error)))


def two_syncs():
    with syncspy.no_sync():
        for _ in range(2):
            cuda.cudaDeviceSynchronize()  # MARK:loop
        pointer = ctypes.c_void_p()
        cuda_gil.cudaMalloc(ctypes.byref(pointer), 64)  # MARK:malloc


def nested():
    with syncspy.expect_syncs(max=3) as outer:
        with syncspy.no_sync(classes="S2") as inner:
            cuda.cudaDeviceSynchronize()  # MARK:nested_s1
        cuda.cudaStreamSynchronize(None)  # MARK:nested_s2
    return "outer %d %s, inner %d" % (outer.count, outer.by_class["S2"], inner.count)


def inner_raises():
    with syncspy.expect_syncs(max=5) as outer:
        try:
            with syncspy.no_sync(classes=["S2", "S3"]):
                cuda.cudaStreamSynchronize(None)  # MARK:inner_s2
        except syncspy.SyncError as error:
            print("  inner raised: %s" % show(error.points[0]))
        cuda.cudaDeviceSynchronize()  # MARK:after_inner
    return "outer counted %d: %s" % (outer.count, ", ".join(show(p) for p in outer.points))


def budget(n):
    def run():
        with syncspy.expect_syncs(max=2):
            for _ in range(n):
                cuda.cudaStreamQuery(None)  # MARK:poll
    return run


def at_first():
    after = []
    try:
        with syncspy.no_sync(at_first=True):
            cuda.cudaDeviceSynchronize()  # MARK:first
            after.append("ran on")  # not reached: raised right after the sync
            cuda.cudaDeviceSynchronize()
    except syncspy.SyncError as error:
        frame = error.__traceback__
        while frame.tb_next:
            frame = frame.tb_next
        return "raised at line %s, %d after; %s" % (
            MARKS.get(frame.tb_lineno, frame.tb_lineno), len(after), show(error))
    return "not raised"


def other_threads():
    results = []

    def worker():
        cuda.cudaDeviceSynchronize()  # MARK:worker_free
        try:
            with syncspy.no_sync():
                cuda.cudaDeviceSynchronize()  # MARK:worker_guarded
        except syncspy.SyncError as error:
            results.append(show(error.points[0]))

    with syncspy.no_sync():  # the worker's syncs are not this thread's
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
    return "main guard passed; worker: %s" % results[0]


@syncspy.no_sync()
def decorated():
    cuda.cudaEventSynchronize(None)  # MARK:decorated


def counters():
    before = syncspy.counts()
    cuda.cudaDeviceSynchronize()
    cuda.cudaStreamSynchronize(None)
    cuda.cudaStreamSynchronize(None)
    after = syncspy.counts()
    return " ".join("%s+%d" % (k, after[k] - before[k]) for k in sorted(after))


def steps():
    for _ in range(3):
        syncspy.step("epoch")
        cuda.cudaDeviceSynchronize()


def out_of_order():
    outer = syncspy.no_sync()
    inner = syncspy.no_sync()
    outer.__enter__()
    inner.__enter__()
    try:
        outer.__exit__(None, None, None)
    except RuntimeError as error:
        print("  %s" % error)
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)


case("two syncs", two_syncs)
case("nested", nested)
case("inner raises", inner_raises)
case("budget of 2, 2 queries", budget(2))
case("budget of 2, 3 queries", budget(3))
case("at first", at_first)
case("other threads", other_threads)
case("decorated", decorated)
case("counts", counters)
case("steps", steps)
case("out of order", out_of_order)
try:
    syncspy.no_sync(classes="S9")
except ValueError as error:
    print("bad class: %s" % error)
print("recording:", syncspy.recording())
sys.exit(0)
