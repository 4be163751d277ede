#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/e2e/t100-info-golden.sh: `syncspy info` on a hand-built database (tests/fixtures/make-db.sh)
# prints exactly the text below; --json carries the same numbers; a directory expands to its
# *.sqlite and *.sqlite.partial files in version order (r2 before r10), other files ignored.
#
# env: SYNCSPY (default ../report/syncspy, from the tests build directory), SQLITE3 (default
# sqlite3). Exit 0 pass, 1 fail, 77 skip.

SYNCSPY=${SYNCSPY:-../report/syncspy}
SQLITE3=${SQLITE3:-sqlite3}
export SYNCSPY SQLITE3
make_db="$(dirname "$0")/../fixtures/make-db.sh"

command -v "$SQLITE3" >/dev/null 2>&1 || { echo "SKIP: no $SQLITE3 command"; exit 77; }
[ -x "$SYNCSPY" ] || { echo "FAIL: $SYNCSPY is not built"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t100.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

sh "$make_db" "$tmp/rank0.sqlite" || fail "make-db.sh"

# The fixture's times are fixed; only the path in the header line varies.
"$SYNCSPY" info "$tmp/rank0.sqlite" >"$tmp/out.raw" 2>"$tmp/err" || fail "info exited $?: $(cat "$tmp/err")"
[ -s "$tmp/err" ] && fail "info wrote to stderr: $(cat "$tmp/err")"
sed "s|$tmp/|TMP/|" "$tmp/out.raw" >"$tmp/out"

cat >"$tmp/expected" <<'EOF'
== TMP/rank0.sqlite
state: finished (exit_reason exit)
meta:
  buffer_mb           = 64
  clock               = mono
  cmdline             = python train.py --steps 2
  cudart_path         = /opt/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.13
  cudart_version      = 13000
  driver_version      = 13000
  dropped_events      = 3
  dropped_full_buffer = 3
  dropped_no_buffer   = 0
  dropped_write_error = 0
  end_mono_ns         = 1000100000000
  exit_reason         = exit
  file_final          = 1
  hooks_fired         = runtime,driver,nccl
  host                = fixture-host
  local_rank          = 0
  nccl_path           = /opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
  nccl_version        = 22809
  pid                 = 4242
  ppid                = 4200
  rank                = 0
  rank_source         = env
  schema_version      = 2
  sqlite_version      = 3.45.1
  start_mono_ns       = 1000000000000
  start_realtime_ns   = 1764672000000000000
  syncspy_version     = 0.1.0
  threads             = 2
  world_size          = 2

calls per API:
  api                        class  calls  total_ns
  cudaDeviceSynchronize      S1         1   5000000
  cuStreamSynchronize        S2         1    100000
  cudaStreamSynchronize      S2         1      1500
  cudaEventSynchronize       S3         1    150000
  cudaMemcpy                 S4         2   4000000
  cudaMemcpyAsync            S5         2   3350000
  cudaMalloc                 S6         1    250000
  cudaStreamQuery            S7        37    180000
  __cudaLaunchKernel         E1         2      8000
  cuLaunchKernel             E1         1      3500
  cudaMemcpyAsync            E1         1      3000
  cudaEventRecord            E2         1       300
  cudaStreamWaitEvent        E3         1       150
  ncclCommInitRank           N1         1  50000000
  ncclAllReduce              N2         1      9000
  ncclBroadcast              N2         1      8000
  ncclGroupEnd               N2         1     10000
  ncclGroupStart             N2         1       500
  cudaEventCreate            X1         1      2000
  cudaStreamCreateWithFlags  X1         1      5000

calls per class:
  class  sync  calls  total_ns
  S1     yes       1   5000000
  S2     yes       2    101500
  S3     yes       1    150000
  S4     yes       2   4000000
  S5     yes       2   3350000
  S6     yes       1    250000
  S7     yes      37    180000
  E1     no        4     14500
  E2     no        1       300
  E3     no        1       150
  N1     no        1  50000000
  N2     no        4     27500
  X1     no        2      7000
  sync points: 46 calls, 13031500 ns blocked

dropped events:
  dropped_events      = 3
  dropped_full_buffer = 3
  dropped_no_buffer   = 0
  dropped_write_error = 0
EOF
diff -u "$tmp/expected" "$tmp/out" || fail "info output differs from the golden text"

# --json: one array, the same numbers, built by SQLite's JSON functions.
"$SYNCSPY" info --json "$tmp/rank0.sqlite" >"$tmp/out.json" || fail "info --json exited $?"
json_get() {
	"$SQLITE3" :memory: "SELECT json_extract(readfile('$tmp/out.json'), '$1')"
}
[ "$(json_get '$[0].sync_points.calls')" = 46 ] || fail "json sync_points.calls"
[ "$(json_get '$[0].sync_points.blocked_ns')" = 13031500 ] || fail "json sync_points.blocked_ns"
[ "$(json_get '$[0].meta.rank_source')" = env ] || fail "json meta.rank_source"
[ "$(json_get '$[0].apis[7].api')" = cudaStreamQuery ] || fail "json apis[7].api"
[ "$(json_get '$[0].apis[7].calls')" = 37 ] || fail "json apis[7].calls (S7 counts)"
[ "$(json_get '$[0].classes[12].class')" = X1 ] || fail "json classes[12]"
[ "$(json_get '$[0].dropped.dropped_no_buffer')" = 0 ] || fail "json dropped"
[ "$("$SQLITE3" :memory: "SELECT json_array_length(readfile('$tmp/out.json'))")" = 1 ] ||
	fail "json is not an array of one object"

# A directory: databases only, in version order, finished and partial alike.
mkdir "$tmp/run" || exit 1
for r in r10.sqlite.partial r2.sqlite r1.sqlite; do
	cp "$tmp/rank0.sqlite" "$tmp/run/$r" || exit 1
done
echo notes >"$tmp/run/README"
cp "$tmp/rank0.sqlite" "$tmp/run/r1.sqlite-journal" || exit 1
"$SYNCSPY" info "$tmp/run" >"$tmp/dir.out" 2>"$tmp/err" || fail "info DIR exited $?: $(cat "$tmp/err")"
grep '^== ' "$tmp/dir.out" | sed "s|$tmp/|TMP/|" >"$tmp/dir.heads"
printf '== TMP/run/r1.sqlite\n== TMP/run/r2.sqlite\n== TMP/run/r10.sqlite.partial\n' >"$tmp/dir.expected"
diff -u "$tmp/dir.expected" "$tmp/dir.heads" || fail "directory expansion"

echo "PASS"
exit 0
