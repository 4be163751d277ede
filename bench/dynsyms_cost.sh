#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/dynsyms_cost.sh: the writer's naming of a native frame (SITES-2, interpose/dynsyms.c),
# in-process: dladdr against the sorted dynamic symbol table, on a large library, alternating
# for ROUNDS rounds (bench/dynsyms_cost.c). The library is LIBRARY, default libtorch_cpu of a
# torch found by python3 (the libraries PyTorch programs spend their frames in), else
# libstdc++.
#
#   bench/dynsyms_cost.sh [RESULT_FILE]
#
# Exit 0, 1 when a name differed from dladdr's, 2 when it cannot run.
set -u
cd "$(dirname "$0")/.." || exit 2
out=${1:-/dev/stdout}
lib=${LIBRARY:-}
if [ -z "$lib" ]; then
	lib=$(ls /lib/x86_64-linux-gnu/libtorch_cpu.so.* 2>/dev/null | head -n1)
	[ -n "$lib" ] || lib=$(python3 -c 'import torch, os
print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))' 2>/dev/null)
	[ -n "$lib" ] && [ -e "$lib" ] || lib=libstdc++.so.6
fi
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
cc -O2 -D_GNU_SOURCE -o "$tmp/dynsyms_cost" bench/dynsyms_cost.c -ldl || exit 2
{
	echo "# bench/dynsyms_cost.sh $(date -u +%Y-%m-%dT%H:%M:%SZ)" \
		"commit $(git describe --always --dirty 2>/dev/null)"
	echo "# $(nproc) cores: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n1)"
	"$tmp/dynsyms_cost" "$lib" "${N:-200}" "${ROUNDS:-6}"
} >"$out"
