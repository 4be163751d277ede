#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/gpu/carry.sh: fills .carry/ (ignored by git) with what the GPU machine needs of this
# machine's build, for the device tool's carry list. The GPU machine has no libtool, no SQLite
# headers, no libunwind and no libdw, so the build is made here and carried:
#   .carry/lib/  libsyncspy.so and libunwind.so.8 (LD_LIBRARY_PATH of the runs)
#   .carry/dw/   libdw.so.1 and its libraries, for the report's file:line (report/lines.c);
#                on the library path of `syncspy` alone, through the wrapper below, so that
#                the profiled programs keep the machine's own libz and liblzma
#   .carry/bin/  syncspy (a wrapper) and syncspy.real
#   .carry/wheel/  the Python package's wheel (tests/gpu/python.sh)
#   .carry/pylib/  Debian's pytest, pure Python, for python.sh where the GPU machine has none
#   .carry/COMMIT  the commit carried (git describe --dirty)
# Run from the top of a built tree (autoreconf -fi && ./configure && make).
set -eu
[ -f interpose/libsyncspy.so ] && [ -f report/syncspy ] || { echo "carry.sh: build first (make)" >&2; exit 2; }
find_lib() { # NAME: its path in the loader's cache
	/sbin/ldconfig -p | sed -n "s|^[[:space:]]*$1 (libc6,x86-64) => ||p" | head -n1
}
rm -rf .carry
mkdir -p .carry/lib .carry/dw .carry/bin
cp interpose/libsyncspy.so .carry/lib/
cp report/syncspy .carry/bin/syncspy.real
for lib in libunwind.so.8; do
	path=$(find_lib "$lib")
	[ -n "$path" ] || { echo "carry.sh: no $lib here (apt-get install libunwind-dev)" >&2; exit 2; }
	cp -L "$path" .carry/lib/
done
for lib in libdw.so.1 libelf.so.1 libz.so.1 liblzma.so.5 libbz2.so.1.0; do
	path=$(find_lib "$lib")
	[ -n "$path" ] && cp -L "$path" .carry/dw/ || echo "carry.sh: no $lib: no file:line on the GPU machine" >&2
done
cat >.carry/bin/syncspy <<'WRAPPER'
#!/bin/sh
# report/lines.c loads libdw.so.1 at run time: the GPU machine has none (tests/gpu/carry.sh)
here=$(cd "$(dirname "$0")/.." && pwd)
LD_LIBRARY_PATH="$here/dw${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/bin/syncspy.real" "$@"
WRAPPER
chmod +x .carry/bin/syncspy
# the Python package's wheel (tests/gpu/python.sh), built offline from this build with
# Debian's python3-venv, -setuptools and -wheel (docs/python.md); without them, none
if /usr/bin/python3 -c 'import venv, setuptools, wheel' 2>/dev/null; then
	builder=$(mktemp -d "${TMPDIR:-/tmp}/syncspy-carry-wheel.XXXXXX")
	if /usr/bin/python3 -m venv --system-site-packages "$builder" &&
		SYNCSPY_BUILD_DIR=$PWD "$builder/bin/pip" wheel --no-index --no-deps --no-build-isolation \
			-w .carry/wheel . >"$builder/log" 2>&1; then
		rm -rf build python/*.egg-info
	else
		echo "carry.sh: the wheel did not build: no Python package on the GPU machine ($(tail -3 "$builder/log"))" >&2
	fi
	rm -rf "$builder"
else
	echo "carry.sh: no python3-venv/-setuptools/-wheel: no Python package on the GPU machine" >&2
fi
# pytest for tests/gpu/python.sh where the GPU machine has none: Debian's python3-pytest is
# pure Python (pytest, its _pytest, pluggy, iniconfig, packaging)
if [ -d /usr/lib/python3/dist-packages/_pytest ]; then
	mkdir -p .carry/pylib
	for m in pytest _pytest pluggy iniconfig packaging py.py; do
		[ -e "/usr/lib/python3/dist-packages/$m" ] && cp -r "/usr/lib/python3/dist-packages/$m" .carry/pylib/
	done
	find .carry/pylib -name __pycache__ -prune -exec rm -rf {} +
fi
git describe --always --dirty >.carry/COMMIT
echo "carry.sh: .carry/ holds $(cat .carry/COMMIT) ($(du -sh .carry | cut -f1))"
