#!/bin/sh
# SPDX-License-Identifier: MIT
# t808: the budget parser fuzzed (tests/fuzz/targets.c, target budget: ss_budget_load) from the
# committed corpus (tests/fuzz/corpus/budget), for SYNCSPY_FUZZ_SECONDS (20 s) with libFuzzer,
# else replayed once. Fails on a crash, a sanitizer report or an exit 3 on bad input.
. "$E2E_DIR/lib.sh"
. "$E2E_DIR/fuzz-lib.sh"
fuzz budget
