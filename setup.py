# SPDX-License-Identifier: MIT
"""setup.py: the build step of the Python package (pyproject.toml holds its metadata).

The package carries the libsyncspy.so and the `syncspy` command of this very tree, built by its
Autotools build, never a copy of their code (docs/python.md, "How the package is built"):

- SYNCSPY_BUILD_DIR=DIR: take the build already made in DIR (interpose/libsyncspy.so,
  report/syncspy), as it is;
- else the tree itself: `make` in it when it is configured (which brings an existing build up
  to date), else `autoreconf -fi` (when there is no configure script), `./configure` and `make`.

The wheel is tagged py3-none-<platform>: it holds no Python extension, only the preload
library and an executable, which work with any Python 3 of that platform.
"""
import os
import re
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # building without wheel (python3-wheel): only the sdist/egg paths
    bdist_wheel = None

TOP = os.path.dirname(os.path.abspath(__file__))


def version():
    with open(os.path.join(TOP, "configure.ac"), encoding="utf-8") as f:
        match = re.search(r"AC_INIT\(\[syncspy\],\s*\[([^\]]+)\]", f.read())
    if not match:
        sys.exit("setup.py: no AC_INIT version in configure.ac")
    return match.group(1)


def run(command, cwd):
    print("setup.py: " + " ".join(command), flush=True)
    subprocess.run(command, cwd=cwd, check=True)


def autotools_build():
    """The build directory holding interpose/libsyncspy.so and report/syncspy, made up to date."""
    build = os.environ.get("SYNCSPY_BUILD_DIR")
    if build:
        build = os.path.abspath(build)
    else:
        build = TOP
        if not os.path.exists(os.path.join(TOP, "Makefile")):
            if not os.path.exists(os.path.join(TOP, "configure")):
                run(["autoreconf", "-fi"], TOP)
            run(["./configure"], TOP)
        env_jobs = os.environ.get("MAKEFLAGS", "")
        run(["make"] + ([] if "-j" in env_jobs else ["-j2"]), TOP)
    for part in ("interpose/libsyncspy.so", "report/syncspy"):
        if not os.path.isfile(os.path.join(build, part)):
            sys.exit("setup.py: %s has no %s: build it first (autoreconf -fi && ./configure && make)"
                     % (build, part))
    return build


class BuildWithAutotools(build_py):
    """build_py, plus the Autotools build's products inside the package (syncspy/_bundled)."""

    def run(self):
        super().run()
        build = autotools_build()
        native = os.path.join(self.build_lib, "syncspy", "_bundled")
        for source, target in (("interpose/libsyncspy.so", "lib/libsyncspy.so"),
                               ("report/syncspy", "bin/syncspy"),
                               ("include/syncspy/syncspy.h", "include/syncspy/syncspy.h")):
            path = os.path.join(native, target)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            origin = os.path.join(TOP if source.startswith("include/") else build, source)
            shutil.copy2(origin, path)
        os.chmod(os.path.join(native, "bin", "syncspy"), 0o755)


commands = {"build_py": BuildWithAutotools}

if bdist_wheel is not None:
    class PlatformWheel(bdist_wheel):
        """Not pure (it holds ELF files), but for any Python 3: py3-none-PLATFORM."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            return ("py3", "none") + tuple(super().get_tag()[2:])

    commands["bdist_wheel"] = PlatformWheel

setup(version=version(), cmdclass=commands)
