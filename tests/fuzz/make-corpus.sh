#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/fuzz/make-corpus.sh: writes the seed corpus of the fuzz targets (tests/fuzz/targets.c)
# into tests/fuzz/corpus, where it is committed: db/ has SQL that damages a valid database
# (one kind of damage each, the cases of issue 18 items 6-8) and a small whole database file;
# budget/ has budget files, valid ones and one of each kind of mistake. Run it again after
# changing it; the fuzzers start from these and t807/t808 replay them where clang is missing.
# env: SYNCSPY, SQLITE3 (as tests/fixtures/make-db.sh).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
db=$here/corpus/db
budget=$here/corpus/budget
rm -rf "$db" "$budget"
mkdir -p "$db" "$budget"

n=0
sql() { # sql NAME SQL: one seed
	n=$((n + 1))
	printf '%s\n' "$2" >"$db/$(printf %02d $n)-$1.sql"
}
sql valid ''
sql drop-apis 'DROP TABLE apis;'
sql drop-calls 'DROP VIEW api_calls; DROP TABLE calls;'
sql drop-meta 'DROP TABLE meta;'
sql view-wrong-columns 'DROP VIEW api_calls; CREATE VIEW api_calls AS SELECT 1 AS x;'
sql blob-bytes "UPDATE calls SET bytes = x'00ff00ff';"
sql text-times "UPDATE calls SET start_ns = 'soon', end_ns = 'later';"
sql int64-max 'UPDATE calls SET end_ns = 9223372036854775807;'
sql int64-min 'UPDATE calls SET start_ns = -9223372036854775808;'
sql end-before-start 'UPDATE calls SET end_ns = start_ns - 71000000000;'
sql empty-calls 'DELETE FROM calls;'
sql no-version "DELETE FROM meta WHERE key = 'schema_version';"
sql future-version "UPDATE meta SET value = '99' WHERE key = 'schema_version';"
sql bad-class "UPDATE calls SET class = 'S9' WHERE id % 2 = 0;"
sql dangling-api 'UPDATE calls SET api_id = 100000;'
sql dangling-site 'UPDATE calls SET site_id = -1;'
sql huge-count 'UPDATE calls SET count = 9223372036854775807;'
sql control-chars "UPDATE meta SET value = char(27) || ']0;title' || char(7) WHERE key = 'host';"
sql bad-utf8 "UPDATE sites SET text = CAST(x'c328ff' AS TEXT);"
sql null-everywhere 'UPDATE calls SET stream = NULL, bytes = NULL, site_id = NULL, aux = NULL;'
sql real-ids 'UPDATE calls SET tid = 1.5, stream = 1e308;'
sql comms-ranks 'UPDATE comms SET rank = -5, nranks = 0;'
sql ranges-open 'UPDATE ranges SET end_ns = NULL, depth = -1;'
sql duplicate-ids 'INSERT INTO calls SELECT * FROM calls WHERE 0; UPDATE apis SET id = 1;'
sql writable-schema "PRAGMA writable_schema = 1; UPDATE sqlite_schema SET sql = 'CREATE TABLE calls(x)' WHERE name = 'calls';"
sql many-rows 'WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 2000) INSERT INTO calls(tid, api_id, class, start_ns, end_ns, ret) SELECT 1, (SELECT min(id) FROM apis), '"'S1'"', i * 1000, i * 1000 + 10, 0 FROM k;'

# one whole database, small: 512-byte pages (the raw-file mode of the db target)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sh "$here/../fixtures/make-db.sh" "$tmp/full.sqlite"
"${SQLITE3:-sqlite3}" -batch "$tmp/full.sqlite" "PRAGMA page_size = 512; VACUUM; VACUUM INTO '$tmp/small.sqlite';"
cp "$tmp/small.sqlite" "$db/90-whole-database.sqlite"

n=0
json() { # json NAME JSON: one seed
	n=$((n + 1))
	printf '%s\n' "$2" >"$budget/$(printf %02d $n)-$1.json"
}
json minimal '{"version": 1, "limits": [{"max_count": 10}]}'
json every-key '{"version": 1, "warmup": {"seconds": 1.5}, "allow": ["*loader.py*"], "limits": [{"name": "syncs", "class": "sync", "api": "cudaStreamSynchronize", "site": "*train.py:*", "range": "step", "rank": 0, "per_rank": true, "max_count": 5, "max_blocked_ms": 2.5, "max_count_per_range": 1, "max_blocked_ms_per_range": 0.5}]}'
json steady '{"version": 1, "warmup": {"steady": true}, "limits": [{"max_count_per_step": 0.5, "max_blocked_ms_per_step": 1}]}'
json warmup-calls '{"version": 1, "warmup": {"calls": 100}, "limits": [{"class": "S2", "max_count": 0}]}'
json per-step-without-steady '{"version": 1, "limits": [{"max_count_per_step": 1}]}'
json not-json '{"version": 1, "limits": [}'
json json5 "{version: 1, // comment
 limits: [{max_count: 1,},],}"
json not-object '[1, 2, 3]'
json no-version '{"limits": [{"max_count": 1}]}'
json version-2 '{"version": 2, "limits": [{"max_count": 1}]}'
json no-limits '{"version": 1}'
json empty-limits '{"version": 1, "limits": []}'
json unknown-key '{"version": 1, "limits": [{"max_count": 1, "max_cost": 3}]}'
json negative '{"version": 1, "limits": [{"max_count": -1}]}'
json huge '{"version": 1, "limits": [{"max_blocked_ms": 1e308, "max_count": 99999999999999999999}]}'
json wrong-types '{"version": "1", "limits": [{"max_count": "ten", "per_rank": 1, "rank": 0.5}]}'
json nul-in-pattern '{"version": 1, "limits": [{"site": "x\u0000*", "max_count": 1}]}'
json bad-class '{"version": 1, "limits": [{"class": "S9", "max_count": 1}]}'
json duplicate-keys '{"version": 1, "version": 1, "limits": [{"max_count": 1, "max_count": 2}]}'
json nested-deep '{"version": 1, "limits": [{"max_count": 1, "name": [[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]}]}'
json allow-not-strings '{"version": 1, "allow": [1, null, {}], "limits": [{"max_count": 1}]}'
json warmup-both '{"version": 1, "warmup": {"seconds": 1, "calls": 2, "steady": false}, "limits": [{"max_count": 1}]}'
json utf8 '{"version": 1, "limits": [{"name": "caf\u00e9 \ud83d\ude00", "site": "*\u00e9*", "max_count": 1}]}'
json long-pattern "{\"version\": 1, \"limits\": [{\"site\": \"*$(printf '%05000d' 0)*\", \"max_count\": 1}]}"
printf '\357\273\277{"version": 1, "limits": [{"max_count": 1}]}' >"$budget/90-bom.json"
printf '{"version": 1, "limits": [{"site": "\377\376", "max_count": 1}]}' >"$budget/91-bad-utf8.json"
: >"$budget/92-empty.json"
echo "make-corpus: $(ls "$db" | wc -l) db seeds, $(ls "$budget" | wc -l) budget seeds"
