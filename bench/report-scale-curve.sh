#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/report-scale-curve.sh: the report's time and peak memory against the number of ranks
# (issue 18, item 13; issue 17, item 3): bench/report-scale.sh with CURVE=1 (report as text,
# JSON and HTML, and check, each under GNU time) at 64, 256, 1,024 and 10,000 ranks of CALLS
# calls each (default 2,000: "small" ranks, so that 10,000 of them fit on this machine's disk).
#
#   bench/report-scale-curve.sh RESULT_FILE     e.g. bench/results/2026-12-04-report-scale-curve.txt
#
# env: as bench/report-scale.sh (SYNCSPY, SQLITE3, MIX), CALLS, SIZES (default "64 256 1024
# 10000"). Exit: 0 measured, 2 a run failed (bench/report-scale.sh's 1, over its 5 s target for
# 8 large ranks, is not a failure here: the curve is the result).
set -u
here=$(cd "$(dirname "$0")" && pwd)
result=${1:?usage: report-scale-curve.sh RESULT_FILE}
CALLS=${CALLS:-2000}
for ranks in ${SIZES:-64 256 1024 10000}; do
	RANKS=$ranks CALLS=$CALLS CURVE=1 sh "$here/report-scale.sh" "$result"
	[ $? -le 1 ] || exit 2
done
