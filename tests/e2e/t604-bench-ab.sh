#!/bin/sh
# SPDX-License-Identifier: MIT
# t604: the tools behind issue 17 item 1's measurements of the reference workloads.
# (1) examples/torch/workload.py's in-process A/B (EXAMPLES_AB, bench/reference_ab.sh): under
# the shim, the step loop runs once to warm up and then once per block, on, off, off, on, ...;
# an on block is recorded (syncspy_start) and an off block is not (syncspy_stop: its calls
# counted as skipped, no row); each block prints its figure and its span, and the run the median
# over pairs and the total (mean on step against mean off step); AB_WARMUP more warm-up loops.
# Run here with a stand-in for torch (the module only needs torch.cuda.synchronize) and a loop
# whose step is one cudaDeviceSynchronize of the stand-in runtime. Without the shim it exits 2.
# (2) bench/overhead_table.py: rounds from two files merged, each configuration paired with the
# plain run of its round, a run that failed left out, the steady and warm figures from the
# steps' times, CUPTI's meta summed per workload; bench/db_meta.py, the meta words of a run.
# (3) reference_ab.sh's `long` configuration: EXAMPLES_AB_MODE=long runs the loop AB_WARMUP +
# N times, recording all along, and prints each step after the warm-up as "long_step START
# END"; bench/long_cost.py tells the steps inside a gpu_paused interval (untraced) from the
# others and compares the mean step with the mean untraced one.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"

mkdir -p "$tmp/fake/torch"
cat >"$tmp/fake/torch/__init__.py" <<'EOF'
class cuda:
    @staticmethod
    def synchronize():
        pass
EOF
cat >"$tmp/loop.py" <<'EOF'
import ctypes, os, sys
sys.path.insert(0, os.environ["EXAMPLES"])
rt = ctypes.CDLL(os.environ["CUDART"], mode=os.RTLD_GLOBAL)
import workload
steps = 0
for _ in workload.timed(range(8)):
    rt.cudaDeviceSynchronize()  # the step's one call
    steps += 1
print("steps=%d" % steps)
EOF
CUDART="$STANDIN_DIR/libcudart.so.13" EXAMPLES="$TOP_SRCDIR/examples/torch" EXAMPLES_AB=4 \
	PYTHONPATH="$tmp/fake" under_shim "$PYTHON3" "$tmp/loop.py" >"$tmp/stdout" 2>"$tmp/stderr" ||
	fail "the A/B run failed: $(cat "$tmp/stderr")"
# a warm-up loop and 4 blocks of the loop's 8 steps
grep -qx 'steps=40' "$tmp/stdout" || fail "steps: $(cat "$tmp/stdout")"
[ "$(sed -n 's/^ab_block \([a-z]*\) [0-9]*$/\1/p' "$tmp/stderr" | tr '\n' ' ')" = "on off off on " ] ||
	fail "blocks: $(cat "$tmp/stderr")"
grep -Eq '^ab shim -?[0-9]+\.[0-9]{2}$' "$tmp/stderr" || fail "no A/B figure: $(cat "$tmp/stderr")"
one_db
# recorded: the warm-up loop and the two on blocks; the two off blocks' 16 calls skipped
golden "SELECT count(*) FROM calls c JOIN apis a ON a.id = c.api_id WHERE a.name = 'cudaDeviceSynchronize'" <<'END'
24
END
golden "SELECT value FROM meta WHERE key = 'capture_skipped_calls'" <<'END'
16
END
grep -Eq '^ab_total shim -?[0-9]+\.[0-9]{2}$' "$tmp/stderr" || fail "no total figure: $(cat "$tmp/stderr")"
# each block's span on CLOCK_MONOTONIC (the recording's time axis): on off off on, in time order
sed -n 's/^ab_span \([a-z]*\) \([0-9]*\) \([0-9]*\)$/\1 \2 \3/p' "$tmp/stderr" | awk '
	{ kinds = kinds $1 " "; if ($3 < $2 || $2 < last) bad = 1; last = $3 }
	END { if (bad || kinds != "on off off on ") { print "spans: " kinds (bad ? "out of order" : ""); exit 1 } }' ||
	fail "spans: $(cat "$tmp/stderr")"
# bench/db_meta.py, the benchmarks' meta words: the recording's calls and the counters it has
"$PYTHON3" "$TOP_SRCDIR/bench/db_meta.py" "$db" >"$tmp/meta" || fail "db_meta.py exited $?"
grep -q '^calls=24 .*capture_skipped_calls=16' "$tmp/meta" || fail "db_meta.py: $(cat "$tmp/meta")"
[ -z "$("$PYTHON3" "$TOP_SRCDIR/bench/db_meta.py" "$tmp/loop.py")" ] || fail "db_meta.py on a non-database"
# AB_WARMUP=3: three warm-up loops, recorded, before the same blocks (8 steps more each)
rm -rf "$out"
CUDART="$STANDIN_DIR/libcudart.so.13" EXAMPLES="$TOP_SRCDIR/examples/torch" EXAMPLES_AB=4 AB_WARMUP=3 \
	PYTHONPATH="$tmp/fake" under_shim "$PYTHON3" "$tmp/loop.py" >"$tmp/stdout" 2>"$tmp/stderr" ||
	fail "the A/B run (AB_WARMUP=3) failed: $(cat "$tmp/stderr")"
grep -qx 'steps=56' "$tmp/stdout" || fail "AB_WARMUP=3 steps: $(cat "$tmp/stdout")"
[ "$(grep -c '^ab_block' "$tmp/stderr")" = 4 ] || fail "AB_WARMUP=3 blocks: $(cat "$tmp/stderr")"
one_db
golden "SELECT count(*) FROM calls c JOIN apis a ON a.id = c.api_id WHERE a.name = 'cudaDeviceSynchronize'" <<'END'
40
END
# without the shim: nothing to compare, exit 2 (in a sanitizer build the stand-in needs the
# sanitizer's runtime preloaded, as under_shim preloads it)
CUDART="$STANDIN_DIR/libcudart.so.13" EXAMPLES="$TOP_SRCDIR/examples/torch" EXAMPLES_AB=4 \
	PYTHONPATH="$tmp/fake" env ${SANITIZER_PRELOAD:+LD_PRELOAD="$SANITIZER_PRELOAD"} \
	"$PYTHON3" "$tmp/loop.py" >/dev/null 2>"$tmp/stderr"
[ $? = 2 ] || fail "without the shim: not exit 2"
grep -q 'nothing is recorded' "$tmp/stderr" || fail "without the shim: $(cat "$tmp/stderr")"

# (2) two device calls' raw lines: rounds 1 and 2, then 3 (default failed in round 3)
steps() { # FIRST_MS STEADY_MS: 3 first steps, then 5 steady ones, in ns
	echo "$(($1 * 1000000)),$(($1 * 1000000)),$(($1 * 1000000)),$(($2 * 1000000)),$(($2 * 1000000)),$(($2 * 1000000)),$(($2 * 1000000)),$(($2 * 1000000))"
}
cat >"$tmp/a.txt" <<EOF
# a header line
raw w plain round=1 status=0 process_ns=1000 loop_ns=100 step_ns=$(steps 10 2)
raw w default round=1 status=0 process_ns=1100 loop_ns=110 step_ns=$(steps 12 3)
meta w default round=1 cupti_windows=2 cupti_sample=auto
raw w plain round=2 status=0 process_ns=2000 loop_ns=200 step_ns=$(steps 10 4)
raw w default round=2 status=0 process_ns=2400 loop_ns=210 step_ns=$(steps 11 5)
meta w default round=2 cupti_windows=3 cupti_sample=auto
EOF
cat >"$tmp/b.txt" <<EOF
raw w plain round=3 status=0 process_ns=1000 loop_ns=100 step_ns=-
raw w default round=3 status=1 process_ns=9000 loop_ns=900 step_ns=-
EOF
"$PYTHON3" "$TOP_SRCDIR/bench/overhead_table.py" --warm 3 "$tmp/a.txt" "$tmp/b.txt" >"$tmp/table" ||
	fail "overhead_table.py exited $?"
# process: rounds +10%, +20% (round 3 failed: left out); loop +10%, +5%; steady: 2 -> 3 ms,
# 4 -> 5 ms (+50%, +25%); warm: 30 -> 36 ms, 30 -> 33 ms (+20%, +10%); plain's median over 3
# rounds where round 3 printed the figure
awk '$1 == "w" { print $2, $3, $6 }' "$tmp/table" >"$tmp/got"
cat >"$tmp/want" <<'EOF'
process 3 +15.0%
loop 3 +7.5%
steady 2 +37.5%
warm 2 +15.0%
EOF
diff -u "$tmp/want" "$tmp/got" >&2 || fail "table: $(cat "$tmp/table")"
grep -qx 'meta w default cupti_sample=auto cupti_windows=2/3' "$tmp/table" ||
	fail "meta: $(cat "$tmp/table")"

# (3) the long mode: one warm-up loop and 3 loops of 8 steps, all recorded, 24 steps printed
rm -rf "$out"
CUDART="$STANDIN_DIR/libcudart.so.13" EXAMPLES="$TOP_SRCDIR/examples/torch" EXAMPLES_AB=3 \
	EXAMPLES_AB_MODE=long PYTHONPATH="$tmp/fake" under_shim "$PYTHON3" "$tmp/loop.py" \
	>"$tmp/stdout" 2>"$tmp/stderr" || fail "the long run failed: $(cat "$tmp/stderr")"
grep -qx 'steps=32' "$tmp/stdout" || fail "long steps: $(cat "$tmp/stdout")"
[ "$(grep -Ec '^long_step [0-9]+ [0-9]+$' "$tmp/stderr")" = 24 ] || fail "long: $(cat "$tmp/stderr")"
! grep -q '^ab' "$tmp/stderr" || fail "long: an A/B line: $(cat "$tmp/stderr")"
one_db
golden "SELECT count(*) FROM calls c JOIN apis a ON a.id = c.api_id WHERE a.name = 'cudaDeviceSynchronize'" <<'END'
32
END
# bench/long_cost.py: of four steps of 100, 100, 350 and 100 ns, the third crosses the end of
# a pause (traced): 3 untraced, the mean 162.5 against 100
db=$tmp/long.sqlite
q "CREATE TABLE gpu_paused(start_ns INTEGER, end_ns INTEGER);
	INSERT INTO gpu_paused VALUES (100, 1000), (1200, 5000)" || fail "long.sqlite"
printf 'long_step 100 200\nlong_step 200 300\nlong_step 950 1300\nsyncspy: a line\nlong_step 1300 1400\n' \
	>"$tmp/long.err"
"$PYTHON3" "$TOP_SRCDIR/bench/long_cost.py" "$db" "$tmp/long.err" >"$tmp/long.out" ||
	fail "long_cost.py exited $?"
echo "steps=4 untraced=3 traced_share=53.85 cost=62.50" | diff -u - "$tmp/long.out" >&2 ||
	fail "long_cost.py: $(cat "$tmp/long.out")"
# no untraced step (no pause): no figure
q "DELETE FROM gpu_paused" || fail "long.sqlite"
[ -z "$("$PYTHON3" "$TOP_SRCDIR/bench/long_cost.py" "$db" "$tmp/long.err")" ] ||
	fail "long_cost.py without a pause"
# a steps file that cannot be read: one message, exit 2
"$PYTHON3" "$TOP_SRCDIR/bench/long_cost.py" "$db" "$tmp/no-such.err" >/dev/null 2>"$tmp/long.msg"
[ $? = 2 ] || fail "long_cost.py on a missing steps file: not exit 2"
grep -q '^long_cost.py: cannot read the steps of ' "$tmp/long.msg" || fail "long_cost.py: $(cat "$tmp/long.msg")"
echo PASS
