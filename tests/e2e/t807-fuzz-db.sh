#!/bin/sh
# SPDX-License-Identifier: MIT
# t807: the database loader fuzzed (tests/fuzz/targets.c, target db): damaged databases, raw and
# through SQL on a valid one, through ss_analyze (`report`) and ss_steady_window (`check`),
# from the committed corpus (tests/fuzz/corpus/db), for SYNCSPY_FUZZ_SECONDS (20 s) with
# libFuzzer, else replayed once. Fails on a crash, a sanitizer report or an exit 3 on bad input.
. "$E2E_DIR/lib.sh"
. "$E2E_DIR/fuzz-lib.sh"
fuzz db
