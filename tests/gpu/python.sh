#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/python.sh: the Python package on the GPU machine, with real torch (issue 16), in one
# device call. Installs the wheel built here (.carry/wheel/, tests/gpu/carry.sh) offline into a
# venv that sees the machine's torch (--system-site-packages), then:
#   guard     tests/gpu/python_torch.py under `python -m syncspy`: .item() inside no_sync raises
#             naming the line, at_first, a pageable non_blocking copy (S5), empty_cache's
#             cudaFree (S6), enqueues pass, another thread unaffected, budgets, counts()
#   recorded  the same run's database: the script's syncs recorded with their lines
#   pytest    the plugin: tests/gpu/python_pytest_torch.py, one test failing with its line
#             (the machine's pytest, else the one carried in .carry/pylib; else SKIP, said)
#   load      syncspy.load of the recording: calls, GPU activity (CUPTI), findings
#   bench     bench/guard_cost.sh with the real runtime (the guard's cost: GUARD-1)
# and writes one PASS/FAIL/SKIP line per part to RESULTS_DIR/python-summary.txt (the log beside
# it, python.log, with the bench's result file).
#
#   tests/gpu/python.sh [RESULTS_DIR]      default $OUT, else tests/gpu/results/python-<date>
#
# Expects the carried build (.carry/lib: libsyncspy.so, libunwind.so.8; .carry/wheel: the
# wheel). Without a venv module (python3-venv), the wheel is unpacked onto PYTHONPATH instead
# (the plugin then loaded with -p syncspy.pytest_plugin): the summary says which.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
results=${1:-${OUT:-$root/tests/gpu/results/python-$(date +%Y%m%d-%H%M%S)}}
mkdir -p "$results"
summary=$results/python-summary.txt
log=$results/python.log
: >"$summary"
: >"$log"
work=$(mktemp -d "${TMPDIR:-/tmp}/syncspy-gpu-python.XXXXXX")
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH="$root/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
python=${PYTHON:-python3}
say() { echo "$*" | tee -a "$summary"; }
run() { echo "+ $*" >>"$log"; "$@" >>"$log" 2>&1; }

wheel=$(ls "$root"/.carry/wheel/syncspy-*.whl 2>/dev/null | head -n1)
[ -n "$wheel" ] || { say "FAIL setup: no wheel in .carry/wheel (tests/gpu/carry.sh builds it)"; exit 1; }
say "# $(date -u +%FT%TZ) $(hostname -s): $(basename "$wheel"), carried $(cat "$root/.carry/COMMIT" 2>/dev/null)"
say "# $("$python" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1)"
plugin=()
if run "$python" -m venv --system-site-packages "$work/venv" &&
	run "$work/venv/bin/python" -m pip install --no-index --no-deps "$wheel"; then
	py=$work/venv/bin/python
	say "# installed: pip install --no-index into a venv with --system-site-packages"
	# torch where the venv does not see it (a user site, a PYTHONPATH of the machine's own):
	# its directory goes on the venv's path, as a user's environment would have it
	if ! "$py" -c 'import torch' 2>/dev/null; then
		torch_site=$("$python" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))' 2>/dev/null)
		[ -n "$torch_site" ] && export PYTHONPATH="$torch_site${PYTHONPATH:+:$PYTHONPATH}" &&
			say "# torch from $torch_site (PYTHONPATH: the venv does not see it)"
	fi
else
	mkdir -p "$work/site"
	run "$python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$wheel" "$work/site"
	chmod +x "$work/site/syncspy/_bundled/bin/syncspy"
	export PYTHONPATH="$work/site${PYTHONPATH:+:$PYTHONPATH}"
	py=$python
	plugin=(-p syncspy.pytest_plugin)
	say "# installed: no venv here: the wheel unpacked onto PYTHONPATH"
fi

# guard
cd "$work"
if run timeout 240 "$py" -m syncspy run -o "$work/rec" -- "$py" "$root/tests/gpu/python_torch.py"; then
	say "PASS guard"
else
	say "FAIL guard"
fi
grep -E '^(PASS|FAIL) ' "$log" | sed 's/^/  /' >>"$summary"

# recorded: the script's own lines in the database, as `syncspy report` names sites
script=$root/tests/gpu/python_torch.py
item_line=$(grep -n 'MARK:item$' "$script" | cut -d: -f1)
db=$(ls "$work"/rec/*.sqlite 2>/dev/null | head -n1)
if [ -n "$db" ] && "$py" - "$db" "$script:$item_line" >>"$log" 2>&1 <<'PY'; then
import sqlite3, sys
n = sqlite3.connect(sys.argv[1]).execute(
    "SELECT count(*) FROM api_calls WHERE class LIKE 'S%' AND site LIKE ?", (sys.argv[2] + " in %",)).fetchone()[0]
print("sync points recorded at", sys.argv[2], n)
sys.exit(0 if n >= 1 else 1)
PY
	say "PASS recorded"
else
	say "FAIL recorded (database: ${db:-none})"
fi

# pytest: the machine's, else Debian's pure-Python pytest carried from the build machine
# (tests/gpu/carry.sh: .carry/pylib), the GPU machine having no package index
if ! "$py" -c 'import pytest' 2>/dev/null && [ -d "$root/.carry/pylib/pytest" ]; then
	export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$root/.carry/pylib"
	say "# pytest $("$py" -c 'import pytest; print(pytest.__version__)' 2>&1) carried (.carry/pylib)"
fi
if "$py" -c 'import pytest' 2>/dev/null; then
	cp "$root/tests/gpu/python_pytest_torch.py" "$work/test_torch_syncs.py"
	timeout 240 "$py" -m syncspy run -o "$work/rec-pytest" -- "$py" -m pytest "${plugin[@]}" -p no:cacheprovider -rA \
		"$work/test_torch_syncs.py" >"$work/pytest.out" 2>&1
	cat "$work/pytest.out" >>"$log"
	line=$(grep -n 'MARK:pytest_item$' "$work/test_torch_syncs.py" | cut -d: -f1)
	# and no warning of the plugin's wrapper (pluggy >= 1.1: PluggyTeardownRaisedWarning)
	if grep -q '^FAILED .*test_item_fails' "$work/pytest.out" && grep -q '^PASSED .*test_clean' "$work/pytest.out" &&
		! grep -q 'PluggyTeardownRaisedWarning' "$work/pytest.out" &&
		grep -q "test_torch_syncs.py:$line in test_item_fails: " "$work/pytest.out"; then
		say "PASS pytest"
	else
		say "FAIL pytest"
	fi
else
	say "SKIP pytest: no pytest in $py's environment"
fi

# load
if [ -n "$db" ] && SYNCSPY_QUIET=1 "$py" - "$work/rec" >>"$log" 2>&1 <<'PY'; then
import sys, syncspy
r = syncspy.load(sys.argv[1])
print(r, type(r.calls))
sys.exit(0 if len(r.calls) and len(r.gpu) and len(r.steps) == 1 else 1)
PY
	say "PASS load"
else
	say "FAIL load"
fi

# bench: the guard's cost with the real runtime (bench/results/*-guard-cost.txt)
cudart=${CUDART_DIR:-/usr/local/cuda/lib64}
if [ -e "$cudart/libcudart.so" ] && SHIM=$root/.carry/lib/libsyncspy.so CUDART_DIR=$cudart \
	BASE_SHIM=${BASE_SHIM:-} run timeout 120 bash "$root/bench/guard_cost.sh" "$results/guard-cost.txt"; then
	say "PASS bench: $(tail -n 4 "$results/guard-cost.txt" | tr '\n' ';')"
else
	say "FAIL bench (CUDART_DIR=$cudart)"
fi
grep -q '^FAIL' "$summary" && exit 1
exit 0
