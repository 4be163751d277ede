#!/bin/sh
# SPDX-License-Identifier: MIT
# t501: the HTML report in a real headless Chromium (Debian's chromium package): it renders
# (the page's own marker body[data-rendered=ok], no body[data-error]) without a console message,
# shows the findings of the known fixture (a repeating cudaMalloc site above `info`, with its
# advice; the rest `info`, without; one finding for both ranks, at the slower rank's severity,
# with its ranks: ANALYSIS-5), the rank comparison and the call
# sites, and a hostile call-site text appears as text: it neither adds an element nor runs.
. "$E2E_DIR/lib.sh"
. "$E2E_DIR/html-lib.sh"
need_chromium

make_html_inputs
html_report "$tmp/r.html" "$tmp/in"
chromium_run --dump-dom "file://$tmp/r.html" >"$tmp/dom.html" || fail "chromium failed: $(tail -5 "$tmp/chromium.log")"
no_console_messages

dom=$tmp/dom.html
grep -q '<body[^>]* data-rendered="ok"' "$dom" || fail "the page did not finish rendering: $(grep -o '<body[^>]*>' "$dom")"
grep -q 'data-error=' "$dom" && fail "the page had an uncaught error: $(grep -o '<body[^>]*>' "$dom")"
grep -q 'data-pwned' "$dom" && fail "the hostile call site ran as script"
grep -q '<img' "$dom" && fail "the hostile call site became an element"
grep -q '<div class="advice">Allocate the host buffer pinned' "$dom" && fail "an info finding shows advice"

# What the page must show, each string as the DOM holds it (text escaped by the serializer).
for want in \
	'<div class="finding sev-medium" data-rule="alloc-in-loop">' \
	'ranks 0-1 (2, worst rank 1)' \
	'<div class="finding sev-info" data-rule="pageable-async-copy">' \
	'<div class="advice">Allocate once before the loop and reuse the buffer' \
	'train.py:37 x.to(device, non_blocking=True)' \
	'train.py:50 torch.cuda.synchronize()' \
	'tensor.pin_memory()' \
	'&lt;/script&gt;&lt;img src=x onerror="document.body.dataset.pwned=1"&gt;&lt;!--' \
	'<td class="num outlier"' \
	'<td class="site mono">libtorch_cuda.so+0x1234</td>' \
	'<dd>python train.py --steps 2</dd>' \
	'<canvas aria-label="timeline of rank 1"'; do
	grep -qF -- "$want" "$dom" || fail "the page does not show: $want"
done
exit 0
