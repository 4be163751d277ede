# SPDX-License-Identifier: MIT
"""syncspy.pytest_plugin: sync points as test assertions (docs/python.md, "pytest"). Registered
through the package's pytest11 entry point, so installing the package is enough.

    @pytest.mark.no_sync                    the test's call makes no sync point (S1-S7)
    @pytest.mark.no_sync(classes=["S1"])    ... of these classes
    @pytest.mark.sync_budget(max=2, classes=None)
    pytest --syncspy-budget FILE            every test held to FILE's limits (syncspy check's
                                            budget format, the keys that apply to one test)

Each applies to the test function's own call, on its thread (fixtures' setup and teardown are
not counted), through one guard of the shim (syncspy.guard). A test over its limit fails with
the sync points named, API, class, count and file:line. Guards need the shim: run pytest under
it (`python -m syncspy -m pytest ...`); without it a guarded test fails, saying so, and is never
skipped.
"""
import fnmatch
import json
import os

import pytest

from . import _native, guard

# What a per-test limit can say of syncspy check's budget (docs/budget.md): a count, selected by
# class, API and site. Times, ranks and warm-up are the recording's, not one test's.
TOP_KEYS = {"version", "allow", "limits"}
LIMIT_KEYS = {"name", "class", "api", "site", "max_count"}


class Limit:
    def __init__(self, name, maximum, classes=None, api=None, site=None):
        self.name = name
        self.max = maximum
        self.classes = set(classes) if classes else None
        self.api = api
        self.site = site

    def selects(self, point):
        return ((self.classes is None or point.sync_class in self.classes)
                and (self.api is None or point.api == self.api)
                and (self.site is None or fnmatch.fnmatchcase(point.where, self.site)))

    def count(self, points, by_class, allow):
        """The test's count under this limit: the guard's own per class when only classes
        select (unnamed points included), else the named points that match."""
        if self.api is None and self.site is None and not allow:
            return sum(n for name, n in by_class.items()
                       if self.classes is None or name in self.classes)
        return sum(point.count for point in points if self.selects(point))


def load_budget(path):
    """FILE's limits for one test, and its allow list; pytest.UsageError naming the place."""
    def bad(where, message):
        raise pytest.UsageError("syncspy: %s: %s: %s" % (path, where, message))
    try:
        with open(path, encoding="utf-8") as f:
            budget = json.load(f)
    except OSError as error:
        raise pytest.UsageError("syncspy: %s: %s" % (path, error.strerror))
    except ValueError as error:
        raise pytest.UsageError("syncspy: %s: not valid JSON (%s)" % (path, error))
    if not isinstance(budget, dict):
        bad("$", "expected an object")
    for key in budget:
        if key not in TOP_KEYS:
            bad("$." + key, "not checkable per test (expected one of: %s)"
                % ", ".join(sorted(TOP_KEYS)))
    if budget.get("version") != 1:
        bad("$.version", "expected 1")
    allow = budget.get("allow", [])
    if not isinstance(allow, list) or not all(isinstance(p, str) for p in allow):
        bad("$.allow", "expected an array of strings")
    limits = budget.get("limits")
    if not isinstance(limits, list) or not limits:
        bad("$.limits", "expected a non-empty array")
    result = []
    for i, limit in enumerate(limits):
        where = "$.limits[%d]" % i
        if not isinstance(limit, dict):
            bad(where, "expected an object")
        for key in limit:
            if key not in LIMIT_KEYS:
                bad("%s.%s" % (where, key), "not checkable per test (expected one of: %s)"
                    % ", ".join(sorted(LIMIT_KEYS)))
        maximum = limit.get("max_count")
        if not isinstance(maximum, int) or isinstance(maximum, bool) or maximum < 0:
            bad(where + ".max_count", "expected a non-negative integer")
        sync_class = limit.get("class", "sync")
        if sync_class != "sync" and sync_class not in guard.CLASSES:
            bad(where + ".class", 'expected "sync" or one of S1 ... S7')
        for key in ("name", "api", "site"):
            if key in limit and not isinstance(limit[key], str):
                bad("%s.%s" % (where, key), "expected a string")
        result.append(Limit(limit.get("name", "%s %s" % (os.path.basename(path), where)),
                            maximum, None if sync_class == "sync" else [sync_class],
                            limit.get("api"), limit.get("site")))
    return result, allow


def pytest_addoption(parser):
    group = parser.getgroup("syncspy", "syncspy sync points")
    group.addoption("--syncspy-budget", metavar="FILE", default=None,
                    help="hold every test's call to FILE's sync-point limits (syncspy check's "
                         "budget format: version, allow, limits of name/class/api/site/max_count)")


def pytest_configure(config):
    config.addinivalue_line("markers", "no_sync(classes=None): the test's call makes no sync "
                            "point (S1-S7, or of CLASSES) on its thread (syncspy)")
    config.addinivalue_line("markers", "sync_budget(max, classes=None): the test's call makes "
                            "at most MAX sync points (of CLASSES) on its thread (syncspy)")
    path = config.getoption("syncspy_budget")
    config._syncspy_budget = load_budget(path) if path else ([], [])


def pytest_report_header(config):
    if guard.recording():
        return "syncspy: recording; sync guards count"
    return "syncspy: not recording: tests marked no_sync/sync_budget fail. To record, " + \
        _native.HOW_TO_START


def _limits(item):
    limits, _ = item.config._syncspy_budget
    limits = list(limits)
    marker = item.get_closest_marker("no_sync")
    if marker is not None:
        classes = marker.kwargs.get("classes", marker.args[0] if marker.args else None)
        guard.class_mask(classes)  # a bad class name is the test's error
        limits.append(Limit("no_sync", 0, [classes] if isinstance(classes, str) else classes))
    marker = item.get_closest_marker("sync_budget")
    if marker is not None:
        maximum = marker.kwargs.get("max", marker.args[0] if marker.args else None)
        if not isinstance(maximum, int) or maximum < 0:
            raise pytest.UsageError("syncspy: %s: sync_budget needs max=N (N >= 0)" % item.nodeid)
        classes = marker.kwargs.get("classes")
        guard.class_mask(classes)
        limits.append(Limit("sync_budget(max=%d)" % maximum, maximum,
                            [classes] if isinstance(classes, str) else classes))
    return limits


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    limits = _limits(pyfuncitem)
    if not limits:
        yield
        return
    test_guard = guard.Guard(max=2**62, what="syncspy")  # counts; the limits judge below
    test_guard.__enter__()  # NotRecording: the test fails, saying how to start pytest
    outcome = yield
    test_guard.__exit__(None, None, None)
    if outcome.excinfo is not None:
        return  # the test failed on its own
    _, allow = pyfuncitem.config._syncspy_budget
    points = [p for p in test_guard.points
              if not any(fnmatch.fnmatchcase(p.where, pattern) for pattern in allow)]
    failures = []
    for limit in limits:
        count = limit.count(points, test_guard.by_class, allow)
        if count > limit.max:
            selected = [p for p in points if limit.selects(p)]
            failures.append(guard.describe("syncspy: " + limit.name, selected, count, limit.max,
                                           "in the test's call"))
    if failures:  # the sync points are the failure's message, without this hook's traceback
        message = "\n".join(failures)
        if not hasattr(outcome, "force_exception"):  # pluggy 1.0: a wrapper fails by raising
            pytest.fail(message, pytrace=False)
        # pluggy >= 1.1 warns of an exception raised in an old-style wrapper's teardown
        # (PluggyTeardownRaisedWarning, seen on the H200): the call's outcome becomes it
        try:
            pytest.fail(message, pytrace=False)
        except pytest.fail.Exception as error:
            outcome.force_exception(error)
