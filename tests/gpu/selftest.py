# SPDX-License-Identifier: MIT
"""tests/gpu/selftest.py: what the checkers' CPU self-tests (test_check_cupti.py,
test_check_coverage.py, test_check_clock.py) share: run a checker on a database a test makes,
compare its exit status and output with what the case expects, count the cases that differ.

    cases = SelfTest(SCRIPT, make)          # make(path, **kw) writes the database
    cases.expect(label, want_rc, want_text, args=[...], **kw)
    sys.exit(cases.exit_status())
"""
import os
import subprocess
import sys
import tempfile


class SelfTest:
    def __init__(self, script, make):
        self.script, self.make, self.failures = script, make, 0

    def expect(self, label, want_rc, want_text, args=(), **kw):
        """One case: SCRIPT DB ARGS must exit WANT_RC and print every string of WANT_TEXT."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.sqlite")
            self.make(path, **kw)
            run = subprocess.run([sys.executable, self.script, path] + list(args),
                                 capture_output=True, text=True)
        ok = run.returncode == want_rc and all(t in run.stdout for t in want_text)
        print(("ok    " if ok else "WRONG ") + label)
        if not ok:
            print(run.stdout + run.stderr)
            self.failures += 1

    def exit_status(self):
        return 1 if self.failures else 0
