#!/bin/sh
# SPDX-License-Identifier: MIT
# t236: CUPTI is detached (cuptiFinalize, CUPTI-8) only while no other thread is inside a CUDA
# call (CUPTI-10, interpose/gate.h): on the H100 a finalize made while another thread waited in
# cudaStreamSynchronize crashed that thread at the call's exit, inside libcupti (c109 of
# examples/corpus, 7 runs of 8). gpu_loop lanes: four threads, each syncing its own stream every
# step, sampled (20/60) so that CUPTI would be detached at every pause. The stand-in CUPTI counts
# a finalize made while another thread is inside a reported driver call (finalize_races): none
# (6 of 7 finalizes before the gate). Since the lanes also sync while CUPTI is attached, their
# pauses disable the kinds instead of detaching (GATE-4: c109's shared build still crashed on
# the H100 with the gate alone), counted in meta.cupti_detach_skips; the program's output is
# unchanged and the database finished. With SYNCSPY_CUPTI_PAUSE=disable nothing is finalized.
. "$E2E_DIR/lib.sh"
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH # the stand-in CUPTI first, as t211
export LD_LIBRARY_PATH SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_SAMPLE=20/60
steps=300

"$PROGS/gpu_loop" $steps lanes >"$tmp/plain.out" 2>&1 || fail "gpu_loop lanes without the shim: $(cat "$tmp/plain.out")"
STANDIN_CUPTI_REPORT=$tmp/standin.txt under_shim "$PROGS/gpu_loop" $steps lanes >"$tmp/shim.out" 2>"$tmp/shim.err" ||
	fail "gpu_loop lanes under the shim failed: $(cat "$tmp/shim.err")"
cmp -s "$tmp/plain.out" "$tmp/shim.out" || fail "output differs: $(cat "$tmp/shim.out")"
one_db
standin() { sed -n "s/^$1 //p" "$tmp/standin.txt"; }
[ "$(standin finalize_races)" = 0 ] ||
	fail "cuptiFinalize while another thread was inside a call: $(cat "$tmp/standin.txt")"
# GATE-4: the lanes sync while CUPTI is attached, so their pauses disable the kinds only
skips=$(q "SELECT value FROM meta WHERE key = 'cupti_detach_skips'")
[ "${skips:-0}" -ge 1 ] || fail "no detach skipped with four threads syncing: '${skips}'"
golden "SELECT value FROM meta WHERE key = 'cupti_detaches'" <<END
$(standin finalizes)
END
golden "SELECT count(*) FROM meta WHERE key = 'cupti_detach_fallback'" <<'END'
0
END
[ "$(q "SELECT value >= 2 FROM meta WHERE key = 'cupti_windows'")" = 1 ] || fail "fewer than 2 windows"
# every thread's kernels were traced in the windows
[ "$(q "SELECT count(DISTINCT stream_id) FROM gpu_activity WHERE kind = 'kernel'")" = 4 ] ||
	fail "kernels of $(q "SELECT count(DISTINCT stream_id) FROM gpu_activity WHERE kind = 'kernel'") lanes recorded"
rm -rf "$out"

# A second thread that only allocates and frees (S6, no wait for the GPU: PyTorch's autograd
# thread) does not keep CUPTI attached: the main thread's loop detaches at its pauses
STANDIN_CUPTI_REPORT=$tmp/alloc.txt under_shim "$PROGS/gpu_loop" $steps alloc-thread >"$tmp/alloc.out" 2>&1 ||
	fail "gpu_loop alloc-thread failed: $(cat "$tmp/alloc.out")"
one_db
golden "SELECT count(*) FROM meta WHERE key = 'cupti_detach_skips'" <<'END'
0
END
[ "$(q "SELECT value FROM meta WHERE key = 'cupti_detaches'")" -ge 2 ] ||
	fail "alloc-thread: $(q "SELECT value FROM meta WHERE key = 'cupti_detaches'") detaches"
[ "$(sed -n 's/^finalize_races //p' "$tmp/alloc.txt")" = 0 ] || fail "alloc-thread: $(cat "$tmp/alloc.txt")"
rm -rf "$out"

STANDIN_CUPTI_REPORT=$tmp/disable.txt SYNCSPY_CUPTI_PAUSE=disable under_shim "$PROGS/gpu_loop" $steps lanes \
	>"$tmp/disable.out" 2>&1 || fail "gpu_loop lanes (disable) failed"
[ "$(sed -n 's/^finalizes //p' "$tmp/disable.txt")" = 0 ] || fail "disable: finalized: $(cat "$tmp/disable.txt")"
finish
