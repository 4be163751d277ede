#!/bin/sh
# SPDX-License-Identifier: MIT
# t040: four ranks (processes) over the NCCL stand-in: one database per rank, named with the
# communicator's rank; every operation recorded with its communicator; the world communicator
# and the even/odd split share their id hash across ranks; rank and world size in meta.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" nccl 4 >"$tmp/stdout" 2>"$tmp/stderr" || fail "scenario failed: $(cat "$tmp/stderr")"
[ "$(grep -c 'sum ok' "$tmp/stdout")" -eq 4 ] || fail "allreduce gave wrong sums: $(cat "$tmp/stdout")"
for r in 0 1 2 3; do
	set -- "$out"/syncspy-*-r$r.sqlite
	[ -f "$1" ] || fail "no database for rank $r: $(ls "$out")"
	db=$1
	golden "SELECT value FROM meta WHERE key IN ('rank', 'world_size', 'rank_source') ORDER BY key" <<END
$r
nccl
4
END
	golden "SELECT api, class, count(*), count(comm) FROM api_calls WHERE layer = 'nccl' GROUP BY api ORDER BY api" <<'END'
ncclAllReduce|N2|2|2
ncclCommDestroy|N1|2|2
ncclCommInitRank|N1|1|1
ncclCommSplit|N1|1|1
ncclGroupEnd|N2|1|0
ncclGroupStart|N2|1|0
ncclRecv|N2|1|1
ncclSend|N2|1|1
END
	golden "SELECT bytes, aux FROM api_calls WHERE api IN ('ncclSend', 'ncclRecv') ORDER BY api" <<END
64|$(((r + 3) % 4))
64|$(((r + 1) % 4))
END
	golden "SELECT rank, nranks, parent IS NULL, destroyed_ns IS NOT NULL FROM comms ORDER BY created_ns" <<END
$r|4|1|1
$((r / 2))|2|0|1
END
	q "SELECT id_hash FROM comms ORDER BY created_ns LIMIT 1" >>"$tmp/world_ids"
	q "SELECT id_hash FROM comms ORDER BY created_ns LIMIT 1 OFFSET 1" >>"$tmp/split_ids_$((r % 2))"
done
[ "$(sort -u "$tmp/world_ids" | wc -l)" -eq 1 ] || fail "ranks disagree on the world communicator's id"
[ "$(sort -u "$tmp/split_ids_0" | wc -l)" -eq 1 ] || fail "even ranks disagree on their split's id"
[ "$(sort -u "$tmp/split_ids_1" | wc -l)" -eq 1 ] || fail "odd ranks disagree on their split's id"
cmp -s "$tmp/split_ids_0" "$tmp/split_ids_1" && fail "even and odd splits got the same id"
[ "$(grep -c '^syncspy: rank [0-3]: ' "$tmp/stderr")" -eq 4 ] || fail "summary lines: $(cat "$tmp/stderr")"
exit 0
