#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/progs/own_sqlite.py: a program with its own SQLite database, under the shim.

The shim loads SQLite privately (interpose/store.h); a program's own use of SQLite, here
Python's sqlite3 module, must work as without it, before and after the shim has started.
The CUDA call goes to the CPU stand-in through ctypes, so the shim really starts: the library
is loaded RTLD_GLOBAL and the function looked up in the global scope, where the preloaded
wrapper comes first (a lookup in the library's own handle would bypass any interposer)."""
import ctypes
import os
import sqlite3
import sys

path = sys.argv[1]
con = sqlite3.connect(path)
con.execute("CREATE TABLE t(x INTEGER)")
con.executemany("INSERT INTO t VALUES(?)", [(i,) for i in range(1000)])
con.commit()
ctypes.CDLL(os.environ.get("CUDART", "libcudart.so.13"), mode=os.RTLD_GLOBAL)
rc = ctypes.CDLL(None).cudaDeviceSynchronize()
con.executemany("INSERT INTO t VALUES(?)", [(i,) for i in range(1000)])
con.commit()
total = con.execute("SELECT count(*), sum(x) FROM t").fetchone()
print("sqlite", sqlite3.sqlite_version, "rows", total[0], "sum", total[1], "cuda rc", rc)
