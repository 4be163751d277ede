#!/bin/sh
# SPDX-License-Identifier: MIT
# selftest.sh: runs the stand-ins' selftest against the libraries of the build directory
# (STANDIN_DIR, set by the Makefile's AM_TESTS_ENVIRONMENT; default: this script's directory).
dir=${STANDIN_DIR:-$(dirname "$0")}
LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
exec "$dir/selftest"
