#!/bin/sh
# t212: the report judges the steady state (docs/rules.md "Steady state", report/steps.c).
# tests/progs/steady.c has a setup, 20 steps and a teardown; its lines are found by their @tags.
#   - without marks the step is detected from the recording: 20 steps, 19 steady (the first is
#     warm-up); with syncspy_step("train") the steps are the marks (19: the last mark's step
#     lasts until the recording ends, so it ends the steps, 18 steady);
#   - the stream sync made every step is the first finding, `steady`, in every steady step, with
#     its cost per step, and above `info`; the scratch allocation of every step is steady too,
#     and ranked below it (cheaper per step); nothing else of the loop is above `info` but the
#     scratch buffer's free and the copy on the compute stream;
#   - what happens once is `info`: the final blocking read, the setup allocations and copy; the
#     first step's workspace allocation (one call) is not reported at all;
#   - the rank's per-step figures (syncs per step) are in the JSON and the text;
#   - a blocking stream used at setup only makes no legacy-stream finding of the loop;
#   - with a GPU timeline (stand-in CUPTI), the loop's sync costs its measured GPU idle time,
#     and a pipeline's wait behind which the GPU stayed busy is `info`;
#   - a program without a loop gets the note that no step was found;
#   - without steps (STEPS-3), a setup loop's allocations before the first GPU work and a teardown
#     loop's frees after the last are `once`, while an allocation interleaved with the work is
#     above `info`;
#   - a setup burst after the first GPU work is neither the loop (STEPS-4) nor repeated work
#     (STEPS-5), and the irregular passes' allocation beside it is the first finding;
#   - passes after a long host-only phase repeat through the work (STEPS-5's slices by work);
#   - an evaluation every few steps whose per-sample syncs come in bursts recurs (STEPS-9);
#   - a read every 5 steps does not make the steps blocks of 5 (detected steps).
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
src=$TOP_SRCDIR/tests/progs/steady.c
line() { grep -n "@$1 " "$src" | cut -d: -f1; }

check() { # MODE: the JSON report of a run of steady MODE, checked
	mode=$1
	want=detected
	[ "$mode" = marked ] && want=marked
	rm -rf "$out"
	under_shim "$PROGS/steady" $mode >"$tmp/stdout" 2>"$tmp/stderr" || fail "steady $mode exited $?"
	grep -q '^steady: 20 steps' "$tmp/stdout" || fail "steady $mode output: $(cat "$tmp/stdout")"
	one_db
	"$SYNCSPY" report --format json "$db" >"$tmp/report.json" || fail "report $mode exited $?"
	"$SYNCSPY" report "$db" >"$tmp/report.txt" || fail "text report $mode exited $?"
	MODE=$mode LOOP_SYNC=$(line loop-sync) LOOP_ALLOC=$(line loop-alloc) \
	FINAL_READ=$(line final-read) LOOP_FREE=$(line loop-free) LOOP_COPY=$(line loop-copy) SETUP_ALLOC=$(line setup-alloc) \
	SETUP_COPY=$(line setup-copy) WARMUP=$(line warmup-alloc) \
	"$PYTHON3" - "$tmp/report.json" <<'PY' || fail "steady $mode: report checks failed"
import json, os, sys
r = json.load(open(sys.argv[1]))
e = os.environ
def at(tag):
    return "steady.c:%s " % e[tag]
steps = r["ranks"][0]["steps"]
want = "marked" if e["MODE"] == "marked" else "detected"
assert steps["source"] == want, steps
# marked: syncspy_step's last step lasts until the recording ends, so its start ends the steps
nsteady = 18 if want == "marked" else 19
assert steps["count"] == nsteady + 1 and steps["steady"] == nsteady, steps
if want == "marked":
    assert steps["name"] == "train", steps
assert steps["step_ns"] >= 3000000, steps             # a 3 ms kernel every step
assert abs(steps["sync_points_per_step"] - 3.0) < 0.01, steps  # sync, cudaMalloc, cudaFree
f = r["findings"]
first = f[0]
assert first["rule"] == "host-sync" and at("LOOP_SYNC") in first["site"], first
assert first["phase"] == "steady" and first["steps"] == nsteady, first
assert first["count"] == nsteady, first
assert first["severity"] == "high" and first["cost_per_step_ns"] >= 2000000, first
assert first["share"] > 0.5, first  # the sync waits out the 3 ms kernel
alloc = [x for x in f if x["rule"] == "alloc-in-loop" and at("LOOP_ALLOC") in x["site"]]
assert len(alloc) == 1 and alloc[0]["phase"] == "steady", alloc
assert alloc[0]["share"] < first["share"] and f.index(alloc[0]) > 0, f
assert [x["severity"] for x in f if x["severity"] == "info"] == \
    [x["severity"] for x in f[len(f) - sum(x["severity"] == "info" for x in f):]], \
    "info findings must come last"
def only_info(tag, rule):
    got = [x for x in f if at(tag) in x["site"] and x["rule"] == rule]
    assert got and all(x["severity"] == "info" and x["phase"] == "once" for x in got), (tag, got)
only_info("FINAL_READ", "sync-copy")
only_info("SETUP_ALLOC", "alloc-in-loop")
only_info("SETUP_COPY", "sync-copy")
assert not [x for x in f if at("WARMUP") in x["site"]], "the warm-up allocation is reported"
above = [x for x in f if x["severity"] != "info"]
assert {os.path.basename(x["site"].split(" ")[0]) for x in above} <= \
    {"steady.c:" + e["LOOP_SYNC"], "steady.c:" + e["LOOP_ALLOC"], "steady.c:" + e["LOOP_FREE"],
     "steady.c:" + e["LOOP_COPY"]}, above  # the loop's sync, alloc, free and copy
assert r["report_version"] == "2.1"
PY
	grep -q '^findings (costliest per step first):' "$tmp/report.txt" || fail "text heading"
	grep -q '^once, not in the steady state (info' "$tmp/report.txt" || fail "text info heading"
	grep -Eq "^ +- +[0-9]+ +(20 +19|19 +18) .* $want" "$tmp/report.txt" || fail "text steps table: $(cat "$tmp/report.txt")"
}
check detect
check marked

# Steps of varying length after a setup burst of one call (40 stream creations, exactly one
# apart): the loop's 20 steps are found (loose period), not the burst, and the loop's sync is
# the first finding.
rm -rf "$out"
under_shim "$PROGS/steady" varying >/dev/null 2>&1 || fail "steady varying"
one_db
"$SYNCSPY" report --format json "$db" >"$tmp/varying.json" || fail "report varying"
"$PYTHON3" - "$tmp/varying.json" "$(line varying-sync)" <<'PY' || fail "varying steps"
import json, sys
r = json.load(open(sys.argv[1]))
steps = r["ranks"][0]["steps"]
assert steps["source"] == "detected" and 18 <= steps["count"] <= 20, steps
f = r["findings"][0]
assert f["rule"] == "host-sync" and "steady.c:%s " % sys.argv[2] in f["site"], f
assert f["phase"] == "steady", f
PY

# legacy-stream judges the steady state: a blocking stream used at setup only does not make the
# loop's legacy-stream launches a finding (t204: one used in the loop does).
rm -rf "$out"
under_shim "$PROGS/steady" legacy >/dev/null 2>&1 || fail "steady legacy"
one_db
"$SYNCSPY" report --format json "$db" >"$tmp/legacy.json" || fail "report legacy"
[ "$(rq "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/legacy.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'legacy-stream' AND json_extract(value, '\$.severity') <> 'info'")" = 0 ] ||
	fail "legacy-stream for a stream used at setup only"

# With a GPU timeline (the stand-in CUPTI, as t211): the loop's stream sync leaves the GPU idle
# until the next step's work (a finding, its GPU idle time measured); the pipeline's wait for
# the previous step's event returns while this step's kernel runs: the GPU never idles behind
# it, so it costs nothing: `info`, and the detail says why.
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH SYNCSPY_CUPTI=1
export LD_LIBRARY_PATH SYNCSPY_CUPTI
for mode in detect pipeline; do
	rm -rf "$out"
	under_shim "$PROGS/steady" $mode >/dev/null 2>&1 || fail "steady $mode with CUPTI"
	one_db
	[ "$(q "SELECT value FROM meta WHERE key = 'cupti'")" = on ] || fail "no GPU timeline for $mode"
	"$SYNCSPY" report --format json "$db" >"$tmp/$mode-gpu.json" || fail "report $mode with CUPTI"
done
MODE=detect TAG=$(line loop-sync) "$PYTHON3" - "$tmp/detect-gpu.json" "$tmp/pipeline-gpu.json" \
	"$(line pipeline-wait)" <<'PY' || fail "GPU timeline checks failed"
import json, os, sys
loop = json.load(open(sys.argv[1]))
sync = [f for f in loop["findings"] if f["rule"] == "host-sync" and
        "steady.c:%s " % os.environ["TAG"] in f["site"]]
assert len(sync) == 1 and sync[0]["severity"] != "info", sync
assert sync[0]["gpu_idle_ns"] > 0 and sync[0]["cost_ns"] == sync[0]["gpu_idle_ns"], sync
assert loop["ranks"][0]["steps"]["gpu_idle_ns_per_step"] > 0, loop["ranks"][0]["steps"]
pipe = json.load(open(sys.argv[2]))
wait = [f for f in pipe["findings"] if "steady.c:%s " % sys.argv[3] in f["site"]]
assert len(wait) == 1 and wait[0]["rule"] == "host-sync", wait
assert wait[0]["severity"] == "info" and wait[0]["phase"] == "steady", wait
assert "the GPU stayed busy" in wait[0]["detail"], wait
assert pipe["ranks"][0]["steps"]["steady"] >= 15, pipe["ranks"][0]["steps"]
# copy-on-compute-stream, a host-side guess, stands only where copy-without-overlap saw it
for f in loop["findings"]:
    if f["rule"] == "copy-on-compute-stream" and f["severity"] != "info":
        assert any(g["rule"] == "copy-without-overlap" and g["site"] == f["site"] and
                   g["phase"] == "steady" for g in loop["findings"]), f
PY

# No loop: the note says how the calls were judged.
rm -rf "$out"
under_shim "$PROGS/scenarios" s1 >/dev/null 2>&1 || fail "scenarios s1"
one_db
"$SYNCSPY" report "$db" >"$tmp/s1.txt" || fail "report s1"
grep -q 'no repeating step found' "$tmp/s1.txt" || fail "no note without steps: $(cat "$tmp/s1.txt")"

# json_report MODE: the JSON report of a run of steady MODE, in $tmp/MODE.json
json_report() {
	rm -rf "$out"
	under_shim "$PROGS/steady" "$1" >/dev/null 2>&1 || fail "steady $1"
	one_db
	"$SYNCSPY" report --format json "$db" >"$tmp/$1.json" || fail "report $1"
}

# No step, a setup loop and a teardown loop around irregular passes (STEPS-3).
json_report stepless
"$PYTHON3" - "$tmp/stepless.json" "$(line lanes-alloc)" "$(line lanes-free)" "$(line pass-alloc)" \
	<<'PY' || fail "stepless: setup and teardown loops judged as the loop"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ranks"][0]["steps"]["count"] == 0, r["ranks"][0]["steps"]
def at(line):
    return [f for f in r["findings"] if f["rule"] == "alloc-in-loop" and
            "steady.c:%s " % line in f["site"]]
for line in sys.argv[2:4]:  # 4 calls each, before the first work / after the last
    got = at(line)
    assert len(got) == 1 and got[0]["severity"] == "info" and got[0]["phase"] == "once", got
    assert got[0]["count"] == 4, got
loop = at(sys.argv[4])
# the last pass's allocation follows the last launch: teardown, 23 of 24 judged
assert len(loop) == 1 and loop[0]["severity"] != "info" and loop[0]["phase"] == "steady", loop
assert loop[0]["count"] == 23, loop
assert r["findings"][0] == loop[0], r["findings"][0]
PY

# A burst after the first GPU work (eight uploads, each with its sync, exactly periodic) beside
# passes too irregular to detect: not the loop (STEPS-4: 16 of some 300 calls), and without steps
# not repeated work (STEPS-5: all in one slice of the work), where the passes' allocation is.
json_report burst-setup
"$PYTHON3" - "$tmp/burst-setup.json" "$(line burst-copy)" "$(line burst-sync)" "$(line burst-pass-alloc)" \
	<<'PY' || fail "burst-setup: the setup burst taken for the loop"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ranks"][0]["steps"]["count"] == 0, r["ranks"][0]["steps"]
def at(line):
    return [f for f in r["findings"] if "steady.c:%s " % line in f["site"]]
for line in sys.argv[2:4]:
    got = at(line)
    assert got and all(f["severity"] == "info" and f["phase"] == "once" for f in got), got
    assert {f["rule"] for f in got} <= {"pageable-async-copy", "host-sync"}, got
loop = [f for f in at(sys.argv[4]) if f["rule"] == "alloc-in-loop"]
assert len(loop) == 1 and loop[0]["severity"] != "info" and loop[0]["phase"] == "steady", loop
assert r["findings"][0] == loop[0], r["findings"][0]
PY

# Host work after the first upload (400 ms: data loaded or code compiled), then the passes: they
# hold nearly all of the work's GPU work in a few percent of its time, and STEPS-5's slices hold
# equal shares of the work calls, so their allocation repeats all through the work (with slices
# of equal time, the passes fit in the last and the allocation was `once`).
json_report host-setup
"$PYTHON3" - "$tmp/host-setup.json" "$(line host-setup-pass-alloc)" <<'PY' || fail "host-setup"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ranks"][0]["steps"]["count"] == 0, r["ranks"][0]["steps"]
loop = [f for f in r["findings"] if f["rule"] == "alloc-in-loop" and
        "steady.c:%s " % sys.argv[2] in f["site"]]
assert len(loop) == 1 and loop[0]["severity"] != "info" and loop[0]["phase"] == "steady", loop
# the last pass's allocation follows the last launch: teardown, 23 of 24 judged
assert loop[0]["count"] == 23 and r["findings"][0] == loop[0], r["findings"]
PY

# An evaluation every 10 steps that reads each of its 40 samples (STEPS-9): its syncs come in
# 4 of the 40 steps, under the 20% that make a site recur, but in bursts of 40 spread through
# the loop: a finding, its cost spread over the steady steps; the loss read once every 10
# steps (one call a burst) and the wait after one evaluation stay `info`.
json_report periodic-eval
"$PYTHON3" - "$tmp/periodic-eval.json" "$(line eval-sync)" "$(line eval-log)" "$(line eval-once)" \
	<<'PY' || fail "periodic-eval"
import json, sys
r = json.load(open(sys.argv[1]))
steps = r["ranks"][0]["steps"]
assert steps["source"] == "detected" and steps["count"] >= 35, steps
def at(line):
    return [f for f in r["findings"] if f["rule"] == "host-sync" and
            "steady.c:%s " % line in f["site"]]
ev = at(sys.argv[2])
assert len(ev) == 1 and ev[0]["phase"] == "steady" and ev[0]["severity"] != "info", ev
assert ev[0]["steps"] in (3, 4) and ev[0]["count"] == 40 * ev[0]["steps"], ev
assert r["findings"][0] == ev[0], r["findings"][0]
for line in sys.argv[3:]:
    got = at(line)
    assert got and all(f["severity"] == "info" for f in got), (line, got)
PY

# A loss read every 5 steps (docs/rules.md, detected steps): its calls recur at exactly 5 steps, the steps' own at a
# period the reads vary: the steps are the 60, not blocks of 5.
json_report log-every
"$PYTHON3" - "$tmp/log-every.json" "$(line log-read)" <<'PY' || fail "log-every"
import json, sys
r = json.load(open(sys.argv[1]))
steps = r["ranks"][0]["steps"]
assert steps["source"] == "detected" and steps["count"] >= 55, steps
assert "steady.c:%s " % sys.argv[2] not in steps["name"], steps
PY
exit 0
