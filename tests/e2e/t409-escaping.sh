#!/bin/sh
# SPDX-License-Identifier: MIT
# t409: text is escaped for an output format in one module, report/text_safe.c (issue 15):
# no other C file of the command writes an escape of XML, HTML, GitHub's workflow commands or
# Markdown, TSV, JSON or the terminal, and every command that needs one calls text_safe.h's.
# Then one call-site text holding each format's syntax (< > & " ' | * _ % : , a tab, a
# backslash, a newline) through each of them, golden: the terminal's lines of `check`, its
# GitHub annotation, its step-summary Markdown and JUnit XML, and `dump`'s TSV and CSV.
. "$E2E_DIR/lib.sh"
cd "$TOP_SRCDIR/report" || fail "cd report"

# The escapes themselves, outside text_safe.c (a C string literal that writes one).
grep -nE '"&(amp|lt|gt|quot|apos);"|"%(25|0A|0D|3A|2C)"|"\\\\(x%02x|u%04x|u003c|t|n|r|\\\\)"|\\xef\\xbf\\xbd' \
	$(ls *.c rules/*.c | grep -vx text_safe.c) >"$tmp/escapes"
[ -s "$tmp/escapes" ] && fail "escaping outside report/text_safe.c: $(cat "$tmp/escapes")"
for f in ss_put_xml ss_put_github ss_put_markdown ss_put_tsv ss_put_csv ss_put_json_string \
	ss_put_json_text ss_put_printable; do
	grep -q "^[a-z].* $f(" text_safe.h || fail "text_safe.h declares no $f"
	grep -lq "$f(" $(ls *.c | grep -vx text_safe.c) || fail "no command uses $f"
done
grep -q '^static void put_\(xml\|github\|markdown\|tsv\|csv\)(' *.c && fail "a command still has its own put_FORMAT"

cd "$tmp" || fail "cd"
sh "$make_db" a.sqlite >/dev/null || fail "make-db.sh"
"$SQLITE3" -batch a.sqlite "UPDATE sites SET text = 'x.py:50 a<b>&\"''|*_%:,' || char(9) || 'c\\d'
	|| char(10) || 'e' WHERE id = 3" || fail "sqlite3"
cat >b.json <<'END'
{"version": 1, "limits": [{"name": "n<&>|*", "site": "x.py:50*", "max_count": 0}]}
END
GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY=sum.md "$SYNCSPY" check --budget b.json --junit j.xml a.sqlite >out 2>err
[ $? -eq 1 ] || fail "check: want exit 1 (a breach): $(cat out err)"
cat >want <<'END'
budget b.json: 1 recording, 46 sync points (0 in warm-up, 0 on allowed sites)
WARN a.sqlite: 3 events dropped while recording; its counts are lower bounds
FAIL limits[0] "n<&>|*" class=sync site=x.py:50*: count 1 > 0
  1 call, 5 ms: x.py:50 a<b>&"'|*_%:,\x09c\d\x0ae [cudaDeviceSynchronize]
::error file=x.py,line=50,title=syncspy check::limits[0] "n<&>|*" class=sync site=x.py:50*: count 1 > 0; x.py:50 a<b>&"'|*_%25:,\x09c\d%0Ae: 1 call, 5 ms
syncspy check: 1 limit, 1 check: 0 passed, 1 breached, 0 not checked
END
diff -u want out >&2 || fail "check's text and GitHub annotation differ"
cat >want <<'END'
### syncspy check: b.json failed

| result | limit | measured |
| --- | --- | --- |
| FAIL | limits\[0\] "n\<&amp;\>\|\*" class=sync site=x.py:50\* | count 1 \> 0 |

1 limit, 1 check: 0 passed, 1 breached, 0 not checked

END
diff -u want sum.md >&2 || fail "the step summary's Markdown differs"
cat >want <<'END'
<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="syncspy check" tests="1" failures="1" skipped="0">
  <testsuite name="syncspy check b.json" tests="1" failures="1" errors="0" skipped="0" time="0">
    <testcase classname="syncspy.check" name="limits[0] &quot;n&lt;&amp;&gt;|*&quot; class=sync site=x.py:50*" time="0">
      <failure type="over budget" message="count 1 &gt; 0">limits[0] &quot;n&lt;&amp;&gt;|*&quot; class=sync site=x.py:50*: count 1 &gt; 0
  1 call, 5 ms: x.py:50 a&lt;b&gt;&amp;&quot;&apos;|*_%:,\x09c\d\x0ae [cudaDeviceSynchronize]
</failure>
    </testcase>
  </testsuite>
</testsuites>
END
diff -u want j.xml >&2 || fail "the JUnit XML differs"
"$SYNCSPY" dump --table sites a.sqlite | grep '^3	' >out || fail "dump tsv"
printf '3\t94000000000003\tpython\t\t\tx.py:50 a<b>&"'"'"'|*_%%:,\\tc\\\\d\\ne\n' >want
diff -u want out >&2 || fail "dump's TSV differs"
"$SYNCSPY" dump --table sites --format csv a.sqlite | sed -n '/^3,/,/^e"$/p' >out || fail "dump csv"
printf '3,94000000000003,python,,,"x.py:50 a<b>&""'"'"'|*_%%:,\tc\\d\ne"\n' >want
diff -u want out >&2 || fail "dump's CSV differs"
echo "one escaping module, each format golden"
