# SPDX-License-Identifier: MIT
# tests/e2e/python-lib.sh: what the Python package's tests (t901-t9xx, docs/python.md) share.
# Sourced after lib.sh, never run.
#
#   $pybase               Debian's python3 (/usr/bin/python3: the one with python3-venv,
#                         -setuptools, -wheel, -pytest, -pandas from the README's package list;
#                         SYNCSPY_TEST_PYTHON overrides it)
#   make_wheel            builds the package's wheel into $tmp/wheel/ from a copy of the tree's
#                         package files, taking this build's libsyncspy.so and syncspy
#                         (SYNCSPY_BUILD_DIR, setup.py); sets $wheel
#   make_venv DIR [--system-site-packages]
#                         a venv at DIR with the wheel installed, offline (--no-index)
#   need_module PY MOD    MOD importable by PY, else: a failure in CI (the README's packages
#                         install it), a skip elsewhere
#   stand_in_env          the environment a ctypes program needs to call the stand-in runtime
pybase=${SYNCSPY_TEST_PYTHON:-/usr/bin/python3}
[ -z "${SANITIZER_PRELOAD:-}" ] || skip "the sanitizer build: the package's tests run in the plain build"
[ -x "$pybase" ] || skip "no $pybase (apt-get install python3)"
build=$(cd "$(dirname "$SHIM")/.." && pwd)

need_module() {
	"$1" -c "import $2" 2>/dev/null && return 0
	[ -z "${CI:-}" ] || fail "$1 cannot import $2 (the README's first command installs it)"
	skip "$1 cannot import $2 (apt-get install python3-$2)"
}

need_module "$pybase" venv
need_module "$pybase" ensurepip

# The files setup.py reads, as they are in the tree: the package is built from them only.
copy_package_tree() {
	mkdir -p "$1/include" "$1/docs"
	cp -R "$TOP_SRCDIR/python" "$1/"
	cp -R "$TOP_SRCDIR/include/syncspy" "$1/include/"
	cp "$TOP_SRCDIR/setup.py" "$TOP_SRCDIR/pyproject.toml" "$TOP_SRCDIR/configure.ac" \
		"$TOP_SRCDIR/LICENSE" "$1/"
	cp "$TOP_SRCDIR/docs/python.md" "$1/docs/"
	find "$1/python" -name __pycache__ -prune -exec rm -rf {} +
}

make_wheel() {
	[ -d "$tmp/builder" ] || "$pybase" -m venv --system-site-packages "$tmp/builder" ||
		fail "python3 -m venv failed"
	copy_package_tree "$tmp/wheel-src"
	(cd "$tmp/wheel-src" && SYNCSPY_BUILD_DIR=$build "$tmp/builder/bin/pip" wheel --no-index \
		--no-deps --no-build-isolation -w "$tmp/wheel" .) >"$tmp/wheel.log" 2>&1 ||
		fail "pip wheel failed: $(tail -20 "$tmp/wheel.log")"
	set -- "$tmp"/wheel/syncspy-*.whl
	[ -f "$1" ] || fail "no wheel in $tmp/wheel"
	wheel=$1
}

make_venv() {
	"$pybase" -m venv ${2:-} "$1" || fail "python3 -m venv $1 failed"
	"$1/bin/pip" install --no-index --no-deps "$wheel" >"$tmp/install.log" 2>&1 ||
		fail "pip install $wheel failed: $(tail -20 "$tmp/install.log")"
}

stand_in_env() {
	CUDART=$STANDIN_DIR/libcudart.so.13
	export CUDART
}
