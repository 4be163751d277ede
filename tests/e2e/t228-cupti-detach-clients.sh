#!/bin/sh
# SPDX-License-Identifier: MIT
# t228: SYNCSPY_CUPTI_PAUSE=detach beside other CUPTI clients (CUPTI-8 with CUPTI-2), on the
# stand-ins' CUPTI. A program that makes a callback subscriber (a tool, torch.profiler) while
# syncspy holds CUPTI's one subscriber for the correlation ids (CUPTI-11): syncspy makes way
# first, so the program's cuptiSubscribe succeeds as without the shim; the correlation comes
# from CUPTI's API records from there, pauses disable the kinds (syncspy cannot subscribe), and
# meta.cupti_detach_fallback and meta.cupti_correlation say why. A program that registers its own activity callbacks while
# syncspy is detached gets CUPTI, exactly as without the shim (all its kernel records), and
# syncspy does not attach again when the program turns the timeline back on; a pause undone
# before any API exit detaches nothing.
. "$E2E_DIR/lib.sh"
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH # the stand-in CUPTI first, as t211
export LD_LIBRARY_PATH SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_PAUSE=detach
# With the callbacks' ties (CUPTI-11), whose subscriber makes way for the program's.
export SYNCSPY_CUPTI_KINDS=kernel,memcpy,memset,sync,event,correlate

# Another subscriber first: windows of 5 ms every 15, paused by disabling kinds.
"$PROGS/cupti_client" libcupti.so.13 subscribe 100 >"$tmp/plain" 2>&1 || fail "subscribe: failed without the shim"
SYNCSPY_CUPTI_SAMPLE=5/15 STANDIN_CUPTI_REPORT=$tmp/subscribe.standin \
	under_shim "$PROGS/cupti_client" libcupti.so.13 subscribe 100 >"$tmp/shim.all" 2>&1 || fail "subscribe: failed under the shim"
grep -v '^syncspy:' "$tmp/shim.all" >"$tmp/shim"
diff -u "$tmp/plain" "$tmp/shim" >&2 || fail "subscribe: the program's output changed"
one_db
golden "SELECT group_concat(key || '=' || value, ' ') FROM (SELECT key, value FROM meta WHERE key IN ('cupti', 'cupti_pause', 'cupti_detaches', 'cupti_attaches') ORDER BY key)" <<'END'
cupti=on cupti_attaches=0 cupti_detaches=0 cupti_pause=detach
END
grep -qx 'cuptiSubscribe: 0' "$tmp/shim" || fail "subscribe: the program's subscriber refused under the shim"
golden "SELECT key || '=' || value FROM meta WHERE key IN ('cupti_detach_fallback', 'cupti_correlation') ORDER BY key" <<'END'
cupti_correlation=the program called cuptiSubscribe: API records
cupti_detach_fallback=the program called cuptiSubscribe: paused by disabling kinds
END
# kernels after the subscription still tie to their launches, by the API records now
[ "$(q "SELECT count(*) FROM gpu_activity g JOIN gpu_api a USING (correlation_id) WHERE g.kind = 'kernel'")" -gt 0 ] ||
	fail "subscribe: no kernel tied to its launch"
[ "$(sed -n 's/^api_records //p' "$tmp/subscribe.standin")" -gt 0 ] || fail "subscribe: no API records after the program subscribed"
[ "$(sed -n 's/^finalizes //p' "$tmp/subscribe.standin")" = 0 ] || fail "subscribe: CUPTI was finalized"
kernels=$(q "SELECT count(*) FROM gpu_activity WHERE kind = 'kernel'")
[ "$kernels" -gt 0 ] && [ "$kernels" -lt 100 ] || fail "subscribe: $kernels kernels of 100 (not sampled)"
[ "$(q "SELECT count(*) FROM gpu_paused")" -ge 1 ] || fail "subscribe: no gpu_paused row"
golden "SELECT count(*) FROM gpu_activity g JOIN gpu_paused p ON g.start_ns >= p.start_ns AND g.start_ns < p.end_ns" <<'END'
0
END

# A client registering while syncspy traces (CUPTI-2): syncspy flushes, disables its own kinds
# and stops; the client gets the kernel records of the kind it enables and no record of the
# kinds syncspy had enabled (syncs, API records), as without the shim.
rm -rf "$out" && mkdir -p "$out"
"$PROGS/cupti_client" libcupti.so.13 register-live 100 >"$tmp/plain" 2>&1 || fail "register-live: failed without the shim"
grep -qx 'records of other kinds received: 0' "$tmp/plain" || fail "register-live without the shim: $(cat "$tmp/plain")"
under_shim "$PROGS/cupti_client" libcupti.so.13 register-live 100 >"$tmp/shim.all" 2>&1 || fail "register-live: failed under the shim"
grep -v '^syncspy:' "$tmp/shim.all" >"$tmp/shim"
diff -u "$tmp/plain" "$tmp/shim" >&2 || fail "register-live: the client did not get what it gets without the shim"

# A client registering while syncspy is detached (the whole run traced otherwise).
rm -rf "$out" && mkdir -p "$out"
"$PROGS/cupti_client" libcupti.so.13 register-detached 100 >"$tmp/plain" 2>&1 || fail "register-detached: failed without the shim"
grep -qx 'kernel records received: 50' "$tmp/plain" || fail "register-detached without the shim: $(cat "$tmp/plain")"
STANDIN_CUPTI_REPORT=$tmp/register.standin \
	under_shim "$PROGS/cupti_client" libcupti.so.13 register-detached 100 >"$tmp/shim.all" 2>&1 || fail "register-detached: failed under the shim"
grep -v '^syncspy:' "$tmp/shim.all" >"$tmp/shim"
diff -u "$tmp/plain" "$tmp/shim" >&2 || fail "register-detached: the client did not get what it gets without the shim"
one_db
case $(q "SELECT value FROM meta WHERE key = 'cupti'") in
"yielded: another CUPTI client (cupti_client) took CUPTI at "*) ;;
*) fail "register-detached: meta.cupti '$(q "SELECT value FROM meta WHERE key = 'cupti'")'" ;;
esac
# one detach (the first pause was undone before any API exit), never attached again: the one
# attach the stand-in saw is the client's; the 50 kernels before the pause all stored
golden "SELECT group_concat(key || '=' || value, ' ') FROM (SELECT key, value FROM meta WHERE key IN ('cupti_detaches', 'cupti_attaches') ORDER BY key)" <<'END'
cupti_attaches=0 cupti_detaches=1
END
golden "SELECT count(*) FROM gpu_activity WHERE kind = 'kernel'" <<'END'
50
END
[ "$(sed -n 's/^finalizes //p' "$tmp/register.standin") $(sed -n 's/^attaches //p' "$tmp/register.standin")" = "1 1" ] ||
	fail "register-detached: the stand-in saw $(tr '\n' ' ' <"$tmp/register.standin")"
