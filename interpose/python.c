/*
 * interpose/python.c: the Python frames of a sync point (S1-S6), read at the sync itself, on
 * whatever thread made it, whether it holds the GIL or not.
 *
 * Python is found at run time (dlsym in the global scope: the python executable exports it),
 * never linked. The hook runs no Python code, takes no GIL and calls nothing of the interpreter
 * that allocates or locks. On CPython 3.11, 3.12 and 3.13 (64-bit) it reads the calling
 * thread's frames directly, as out-of-process samplers do: the thread is blocked inside the
 * wrapper, so its own frame chain cannot change meanwhile, whoever holds the GIL. Its thread
 * state comes from PyGILState_GetThisThreadState() (a thread-local read, no GIL needed: the main
 * thread's, a threading.Thread's, a C thread's that called PyGILState_Ensure); from it the
 * current _PyInterpreterFrame, then `previous` outwards, skipping the interpreter's own shim
 * frames (owned by the C stack) and frames not yet started (before their code's first traceable
 * instruction), as the interpreter does. The layouts are those of each version's headers
 * (find_layout); 3.13's offsets are taken from the _Py_DebugOffsets it publishes in _PyRuntime,
 * checked against the known ones. A frame's line comes from its code's line table, decoded
 * here (the format of CPython's Objects/locations.md), its file and function from co_filename
 * and co_name, compact unicode objects whose characters are read in place. So a sync inside an
 * operator (`h[h > 1.0]`, `if t.abs().max() > 0.999:`) names its own line, and a sync on any
 * thread with a Python thread state gets its frames.
 *
 * Other versions, or a build whose objects do not look as expected, use the C API instead:
 * with the GIL held (PyGILState_Check) the frame objects (PyEval_GetFrame, PyFrame_GetBack/
 * GetCode/GetLineNumber); with it released, on the main thread only, Py_AddPendingCall, which
 * the interpreter runs with the GIL at its next eval-breaker check: the same line after a call,
 * a later one after a subscript, a comparison or a bool conversion (docs/attribution.md).
 *
 * The frames travel to the writer as a record of their own (api SS_REC_PYSTACK) right behind
 * the call's record, carrying a malloc'd text, "file:line in function" per frame, innermost
 * first, the first time this thread sees the stack, and only the stack's key afterwards (as
 * native.c does): a sync point repeats its stack every step, and naming frames (the line
 * number from the code's line table, the text, its allocation) costs more than walking them.
 * The key is a hash of each frame's code object and instruction offset, and is used only when
 * every code object of the stack is one the code cache below names: so that an address that
 * comes back as another code object is not taken for the one before. Through the C API the
 * cache keeps its code objects alive (a reference taken under the GIL); read directly, it
 * cannot take references, and an entry is trusted only while the code object at that address
 * still has the entry's file name, function name and line table objects and first line (the
 * line table being immutable, the same objects give the same names and lines). Sync points
 * cost microseconds already; the work is theirs only (SHIM-1).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "driver.h"
#include "env.h"
#include "python.h"
#include "resolve.h"
#include "ring.h"
#include "shim.h"
#include "sites.h"

typedef void PyObject;

static struct {
	int (*is_initialized)(void);
	int (*gil_check)(void);
	PyObject *(*get_frame)(void);		 /* borrowed */
	PyObject *(*frame_get_back)(PyObject *); /* new reference */
	PyObject *(*frame_get_code)(PyObject *); /* new reference */
	int (*frame_get_line)(PyObject *);
	int (*frame_get_lasti)(PyObject *);		 /* Python 3.11 and later; NULL before */
	PyObject *(*get_attr)(PyObject *, const char *); /* new reference */
	const char *(*as_utf8)(PyObject *);
	void (*decref)(PyObject *);
	void (*incref)(PyObject *);
	PyObject *(*err_occurred)(void);
	void (*err_fetch)(PyObject **, PyObject **, PyObject **);
	void (*err_restore)(PyObject *, PyObject *, PyObject *);
	int (*add_pending_call)(int (*)(void *), void *);
	int usable;
} py;

static pthread_once_t py_once = PTHREAD_ONCE_INIT;

static void find_layout(void);

static void find_python(void)
{
#define FIND(field, name) *(void **)&py.field = ss_dlsym(RTLD_DEFAULT, name)
	FIND(is_initialized, "Py_IsInitialized");
	FIND(gil_check, "PyGILState_Check");
	FIND(get_frame, "PyEval_GetFrame");
	FIND(frame_get_back, "PyFrame_GetBack");
	FIND(frame_get_code, "PyFrame_GetCode");
	FIND(frame_get_line, "PyFrame_GetLineNumber");
	FIND(frame_get_lasti, "PyFrame_GetLasti");
	FIND(get_attr, "PyObject_GetAttrString");
	FIND(as_utf8, "PyUnicode_AsUTF8");
	FIND(decref, "Py_DecRef");
	FIND(incref, "Py_IncRef");
	FIND(err_occurred, "PyErr_Occurred");
	FIND(err_fetch, "PyErr_Fetch");
	FIND(err_restore, "PyErr_Restore");
	FIND(add_pending_call, "Py_AddPendingCall");
#undef FIND
	py.usable = py.is_initialized && py.gil_check && py.get_frame && py.frame_get_back &&
		    py.frame_get_code && py.frame_get_line && py.get_attr && py.as_utf8 &&
		    py.decref && py.incref && py.err_occurred && py.err_fetch && py.err_restore;
	if (py.usable)
		find_layout();
}

/* ------------------------------------------------------------------ the direct read */

/* What the direct read needs of the interpreter's structures, in bytes from their start: the
 * layouts of CPython 3.11, 3.12 and 3.13 on 64-bit Linux, facts from each version's
 * Include/internal/pycore_frame.h, Include/cpython/code.h, Include/cpython/pystate.h,
 * Include/cpython/unicodeobject.h and Include/cpython/bytesobject.h. Any other version is not
 * read directly. */
static struct layout {
	int usable;
	size_t tstate_cframe; /* PyThreadState.cframe (3.11, 3.12); SIZE_MAX: no _PyCFrame (3.13) */
	size_t tstate_frame;  /* _PyCFrame.current_frame, or PyThreadState.current_frame (3.13) */
	size_t frame_code, frame_previous, frame_instr, frame_owner; /* _PyInterpreterFrame */
	int owner_generator, owner_cstack; /* FRAME_OWNED_BY_*; -1 where the version has none */
	size_t code_filename, code_name, code_linetable, code_firstlineno, code_firsttraceable,
	    code_adaptive;		 /* PyCodeObject */
	size_t ascii_size, compact_size; /* sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject) */
	uintptr_t code_type, unicode_type, bytes_type; /* &PyCode_Type, ... */
	void *(*this_thread_state)(void);	       /* PyGILState_GetThisThreadState */
	void *(*main_interpreter)(void);	       /* PyInterpreterState_Main */
	void *(*thread_head)(void *);		       /* PyInterpreterState_ThreadHead */
} lay;

/* The same in 3.11-3.13 on 64-bit (without Py_TRACE_REFS: see find_layout): PyObject.ob_type,
 * PyVarObject.ob_size, PyBytesObject.ob_sval, PyASCIIObject.length and .state. */
#define OB_TYPE	     8
#define OB_SIZE	     16
#define BYTES_DATA   32
#define ASCII_LENGTH 16
#define ASCII_STATE  32
/* PyThreadState.next, after .prev, in 3.11-3.13 (3.13 publishes it: checked in find_layout) */
#define TSTATE_NEXT 8
/* The bytes of an _PyInterpreterFrame read at once from another thread's stack: up to its
 * owner byte (69 in 3.11, 70 in 3.12 and 3.13) */
#define FRAME_BYTES 72

/* 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h) up to its PyObject offsets. */
struct debug_offsets_313 {
	char cookie[8];
	uint64_t version, free_threaded;
	uint64_t runtime_state[3], interpreter_state[13];
	struct {
		uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,
		    datastack_chunk, status;
	} thread_state;
	struct {
		uint64_t size, previous, executable, instr_ptr, localsplus, owner;
	} interpreter_frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
		    localsplusnames, localspluskinds, co_code_adaptive;
	} code_object;
	struct {
		uint64_t size, ob_type;
	} pyobject;
};

static uintptr_t load(uintptr_t base, size_t offset)
{
	uintptr_t value;
	memcpy(&value, (const char *)base + offset, sizeof(value));
	return value;
}

static int load_int(uintptr_t base, size_t offset)
{
	int value;
	memcpy(&value, (const char *)base + offset, sizeof(value));
	return value;
}

/* The layout of the running interpreter, when it is one this file knows (lay.usable). */
static void find_layout(void)
{
#if defined(__x86_64__) || defined(__aarch64__)
	const unsigned long *version = ss_dlsym(RTLD_DEFAULT, "Py_Version"); /* 3.11 and later */
	void *get_state = ss_dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	void *code_type = ss_dlsym(RTLD_DEFAULT, "PyCode_Type");
	void *unicode_type = ss_dlsym(RTLD_DEFAULT, "PyUnicode_Type");
	void *bytes_type = ss_dlsym(RTLD_DEFAULT, "PyBytes_Type");
	if (!version || !get_state || !code_type || !unicode_type || !bytes_type)
		return;
	struct layout known;
	switch ((*version >> 16) & 0xffff) { /* major and minor */
	case 0x030b:
		known = (struct layout){.tstate_cframe = 56,
					.tstate_frame = 8,
					.frame_code = 32,
					.frame_previous = 48,
					.frame_instr = 56, /* prev_instr */
					.frame_owner = 69,
					.owner_generator = 1,
					.owner_cstack = -1,
					.code_filename = 112,
					.code_name = 120,
					.code_linetable = 136,
					.code_firstlineno = 72,
					.code_firsttraceable = 168,
					.code_adaptive = 184,
					.ascii_size = 48,
					.compact_size = 72};
		break;
	case 0x030c:
		known = (struct layout){.tstate_cframe = 56,
					.tstate_frame = 0,
					.frame_code = 0,
					.frame_previous = 8,
					.frame_instr = 56, /* prev_instr */
					.frame_owner = 70,
					.owner_generator = 1,
					.owner_cstack = 3,
					.code_filename = 112,
					.code_name = 120,
					.code_linetable = 136,
					.code_firstlineno = 68,
					.code_firsttraceable = 176,
					.code_adaptive = 192,
					.ascii_size = 40,
					.compact_size = 56};
		break;
	case 0x030d: {
		known = (struct layout){.tstate_cframe = SIZE_MAX,
					.tstate_frame = 72,
					.frame_code = 0, /* f_executable */
					.frame_previous = 8,
					.frame_instr = 56, /* instr_ptr */
					.frame_owner = 70,
					.owner_generator = 1,
					.owner_cstack = 3,
					.code_filename = 112,
					.code_name = 120,
					.code_linetable = 136,
					.code_firstlineno = 68,
					.code_firsttraceable = 184,
					.code_adaptive = 200,
					.ascii_size = 40,
					.compact_size = 56};
		/* What the interpreter publishes must be what is known: a free-threaded build
		 * (other object headers) or another layout is not read. */
		const struct debug_offsets_313 *d = ss_dlsym(RTLD_DEFAULT, "_PyRuntime");
		if (!d || memcmp(d->cookie, "xdebugpy", 8) || (d->version >> 16) != 0x030d ||
		    d->free_threaded || d->pyobject.ob_type != OB_TYPE ||
		    d->thread_state.current_frame != known.tstate_frame ||
		    d->thread_state.next != TSTATE_NEXT ||
		    d->interpreter_frame.executable != known.frame_code ||
		    d->interpreter_frame.previous != known.frame_previous ||
		    d->interpreter_frame.instr_ptr != known.frame_instr ||
		    d->interpreter_frame.owner != known.frame_owner ||
		    d->code_object.filename != known.code_filename ||
		    d->code_object.name != known.code_name ||
		    d->code_object.linetable != known.code_linetable ||
		    d->code_object.firstlineno != known.code_firstlineno ||
		    d->code_object.co_code_adaptive != known.code_adaptive)
			return;
		break;
	}
	default:
		return;
	}
	known.code_type = (uintptr_t)code_type;
	known.unicode_type = (uintptr_t)unicode_type;
	known.bytes_type = (uintptr_t)bytes_type;
	*(void **)&known.this_thread_state = get_state;
	*(void **)&known.main_interpreter = ss_dlsym(RTLD_DEFAULT, "PyInterpreterState_Main");
	*(void **)&known.thread_head = ss_dlsym(RTLD_DEFAULT, "PyInterpreterState_ThreadHead");
	/* A build with Py_TRACE_REFS (two more pointers in every object header) moves ob_type:
	 * the type objects' own type must be found where it is expected. */
	uintptr_t type_type = (uintptr_t)ss_dlsym(RTLD_DEFAULT, "PyType_Type");
	if (!type_type || load(known.code_type, OB_TYPE) != type_type ||
	    load(known.unicode_type, OB_TYPE) != type_type)
		return;
	known.usable = 1;
	lay = known;
#endif
}

/* A unicode object's text as UTF-8 into out ("?" when it is not a compact one). Reads its
 * characters in place (ASCII, or 1, 2 or 4 bytes each), allocating nothing and not touching
 * its cached UTF-8 copy, which another thread may be filling. */
static void unicode_text(uintptr_t text, char *out, size_t len)
{
	snprintf(out, len, "?");
	if (!text || load(text, OB_TYPE) != lay.unicode_type)
		return;
	unsigned state;
	memcpy(&state, (const char *)text + ASCII_STATE, sizeof(state));
	unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (!compact || (kind != 1 && kind != 2 && kind != 4))
		return;
	size_t length = load(text, ASCII_LENGTH), used = 0;
	const unsigned char *data =
	    (const unsigned char *)text + (ascii ? lay.ascii_size : lay.compact_size);
	for (size_t i = 0; i < length && used + 5 < len; i++) {
		uint32_t c = data[i];
		if (kind == 2) {
			uint16_t unit;
			memcpy(&unit, data + 2 * i, 2);
			c = unit;
		} else if (kind == 4) {
			memcpy(&c, data + 4 * i, 4);
		}
		if (c < 0x80) {
			out[used++] = (char)c;
		} else if (c < 0x800) {
			out[used++] = (char)(0xc0 | c >> 6);
			out[used++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			out[used++] = (char)(0xe0 | c >> 12);
			out[used++] = (char)(0x80 | ((c >> 6) & 0x3f));
			out[used++] = (char)(0x80 | (c & 0x3f));
		} else {
			out[used++] = (char)(0xf0 | c >> 18);
			out[used++] = (char)(0x80 | ((c >> 12) & 0x3f));
			out[used++] = (char)(0x80 | ((c >> 6) & 0x3f));
			out[used++] = (char)(0x80 | (c & 0x3f));
		}
	}
	out[used] = 0;
}

/* A varint of the line table: 6-bit chunks, least significant first, 0x40 on all but the last.
 */
static unsigned table_varint(const unsigned char **p, const unsigned char *end)
{
	unsigned value = 0, shift = 0;
	while (*p < end) {
		unsigned char byte = *(*p)++;
		value |= (unsigned)(byte & 0x3f) << shift;
		shift += 6;
		if (!(byte & 0x40) || shift > 24)
			break;
	}
	return value;
}

static int table_svarint(const unsigned char **p, const unsigned char *end)
{
	unsigned value = table_varint(p, end);
	return value & 1 ? -(int)(value >> 1) : (int)(value >> 1);
}

/* The line of a code object's instruction (an offset in code units), from its line table
 * (co_linetable, 3.11 and later: CPython's Objects/locations.md). Each entry starts with a byte
 * 1CCCCLLL: it covers LLL + 1 code units; code C says how the line moves from the previous
 * entry's: 15 no location (the line is -1 there, as Python says), 14 the long form (a signed
 * varint line delta, then three varints: end line, column, end column), 13 no column (a signed
 * varint delta), 10-12 one line (delta C - 10, then two bytes of columns), 0-9 the same line
 * (one byte of column). The first line is co_firstlineno. */
static int code_line(uintptr_t code, int instruction)
{
	uintptr_t table = load(code, lay.code_linetable);
	if (!table || load(table, OB_TYPE) != lay.bytes_type)
		return -1;
	const unsigned char *p = (const unsigned char *)table + BYTES_DATA;
	const unsigned char *end = p + load(table, OB_SIZE);
	int line = load_int(code, lay.code_firstlineno), address = 0;
	while (p < end) {
		unsigned char first = *p++;
		if (!(first & 0x80))
			return -1; /* not an entry's start: not a table this code knows */
		int kind = (first >> 3) & 15, length = (first & 7) + 1;
		if (kind == 14) {
			line += table_svarint(&p, end);
			for (int i = 0; i < 3; i++)
				table_varint(&p, end);
		} else if (kind == 13) {
			line += table_svarint(&p, end);
		} else if (kind >= 10 && kind <= 12) {
			line += kind - 10;
			p += 2;
		} else if (kind < 10) {
			p += 1;
		}
		if (instruction < address + length)
			return kind == 15 ? -1 : line;
		address += length;
	}
	return -1;
}

/* ------------------------------------------------------------------ naming code objects */

/* A code object's attribute as UTF-8 into out ("?" when it has none), through the C API. */
static void code_text(PyObject *code, const char *attr, char *out, size_t len)
{
	PyObject *value = py.get_attr(code, attr);
	const char *text = value ? py.as_utf8(value) : NULL;
	snprintf(out, len, "%s", text ? text : "?");
	if (value)
		py.decref(value);
}

/* Code objects already named, by address: reading co_filename and co_name costs more than the
 * rest of a frame. Through the C API each cached code object is kept alive (a reference taken
 * under the GIL), so its address cannot come back as another code object: an entry is never
 * stale. Read directly, no reference can be taken: an entry holds what the code object pointed
 * to when it was named (its file name, function name and line table objects, its first line),
 * and is trusted only while the code object at that address still does; one that does not is
 * named without the cache. Entries are never replaced (other threads may be reading their
 * text). Bounded: once full, frames are named without it. */
#define CODE_CACHE_SLOTS 2048 /* a power of two; filled to 3/4 at most */

static struct code_name {
	PyObject *code;
	uintptr_t filename, name, linetable; /* read directly: what the entry was named from */
	int firstlineno;
	char *file, *function; /* one allocation: file, then function */
} code_cache[CODE_CACHE_SLOTS];
static int code_cache_used;
static pthread_mutex_t code_cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* The file and function of a code object, through the cache; into the buffers when it is full
 * (or, read directly, when its slot holds a code object once at the same address). Returns 1
 * when the names came from, or went into, the cache, 0 when not. The caller holds
 * code_cache_lock (once per stack, not per frame). */
static int code_names(PyObject *code, char *file, size_t file_len, char *function,
		      size_t function_len, const char **file_out, const char **function_out)
{
	struct code_name now = {.code = code};
	if (lay.usable) {
		now.filename = load((uintptr_t)code, lay.code_filename);
		now.name = load((uintptr_t)code, lay.code_name);
		now.linetable = load((uintptr_t)code, lay.code_linetable);
		now.firstlineno = load_int((uintptr_t)code, lay.code_firstlineno);
	}
	size_t slot = ((uintptr_t)code >> 4) & (CODE_CACHE_SLOTS - 1);
	for (int probe = 0; probe < 16; probe++, slot = (slot + 1) & (CODE_CACHE_SLOTS - 1)) {
		struct code_name *entry = &code_cache[slot];
		if (entry->code == code) {
			if (entry->filename != now.filename || entry->name != now.name ||
			    entry->linetable != now.linetable ||
			    entry->firstlineno != now.firstlineno) {
				slot = SIZE_MAX; /* another code object, once at this address */
				break;
			}
			*file_out = entry->file;
			*function_out = entry->function;
			return 1;
		}
		if (entry->code == NULL)
			break;
	}
	if (lay.usable) {
		unicode_text(now.filename, file, file_len);
		unicode_text(now.name, function, function_len);
	} else {
		code_text(code, "co_filename", file, file_len);
		code_text(code, "co_name", function, function_len);
	}
	*file_out = file;
	*function_out = function;
	if (slot == SIZE_MAX)
		return 0;
	struct code_name *entry = &code_cache[slot];
	size_t flen = strlen(file) + 1, glen = strlen(function) + 1;
	char *text = entry->code == NULL && code_cache_used < CODE_CACHE_SLOTS * 3 / 4
			 ? malloc(flen + glen)
			 : NULL;
	if (text) {
		memcpy(text, file, flen);
		memcpy(text + flen, function, glen);
		if (!lay.usable)
			py.incref(code); /* kept for the cache's life: see above */
		now.file = text;
		now.function = text + flen;
		*entry = now;
		code_cache_used++;
		*file_out = entry->file;
		*function_out = entry->function;
	}
	return text != NULL;
}

#define MAX_FRAMES   128
#define SEEN_PER_TLS 64 /* stack keys a thread remembers having sent with their text */

static __thread uint64_t seen[SEEN_PER_TLS] __attribute__((tls_model("initial-exec")));

/* One walked frame: what keys it (code, position) and what names it. */
struct walked {
	PyObject *frame, *code; /* C API: references of ours, but the first frame (borrowed) */
	const char *file, *function;
	int position; /* the instruction offset (3.11+) or the line */
};

/* ------------------------------------------------------------------ autograd's device threads */

/*
 * PYTHON-1: a sync on one of PyTorch's autograd device threads is named by the Python frames of
 * the thread that called backward(). The engine runs the backward of CUDA operations on a thread
 * of its own per device, named "pt_autograd_<device>" (c10::setThreadName), which runs no Python
 * there: it has a thread state (torch's PythonEngine::thread_init makes one, for hooks written
 * in Python) but no frame. Its syncs (anomaly mode's checks, cuDNN's autotuning of a backward
 * convolution, a backward that reads a size) had no user line, only torch's native code. The
 * thread that called backward() waits in the engine meanwhile, its innermost Python frame
 * torch's _engine_run_backward (torch/autograd/graph.py; before torch 2.3, backward or grad in
 * torch/autograd/__init__.py). That thread is found among the interpreter's thread states, and
 * its frames from that one outwards are the sync's. Another thread's frames are read only
 * through process_vm_readv on this process (a read of memory that is gone fails, where a load
 * would crash): the thread list and each frame; a code object is trusted once its type is read
 * so (its names and line table are then read as the calling thread's are). Any other thread
 * running no Python keeps no frames: a watchdog's queries are nobody's line.
 */
static __thread signed char autograd_thread; /* 0 not asked yet, 1 pt_autograd_*, -1 not */

static int on_autograd_thread(void)
{
	if (!autograd_thread) {
		char name[17] = "";
		autograd_thread =
		    prctl(PR_GET_NAME, name) == 0 && !strncmp(name, "pt_autograd_", 12) ? 1 : -1;
	}
	return autograd_thread > 0;
}

static pid_t main_thread_id(void);

/* LEN bytes at ADDRESS of this process into OUT, or 0 when they cannot be read. */
static int safe_read(uintptr_t address, void *out, size_t len)
{
	struct iovec here = {out, len}, there = {(void *)address, len};
	return address &&
	       process_vm_readv(main_thread_id(), &here, 1, &there, 1, 0) == (ssize_t)len;
}

static uintptr_t safe_load(uintptr_t base, size_t offset)
{
	uintptr_t value;
	return safe_read(base + offset, &value, sizeof(value)) ? value : 0;
}

/* A compact ASCII unicode object's text into out (len > 1), read safely: 1, or 0 when it is
 * not one (a name with other characters is none of those looked for here). */
static int safe_ascii(uintptr_t text, char *out, size_t len)
{
	unsigned state;
	uintptr_t length;
	if (safe_load(text, OB_TYPE) != lay.unicode_type ||
	    !safe_read(text + ASCII_STATE, &state, sizeof(state)) || !((state >> 5) & 1) ||
	    !((state >> 6) & 1) || !safe_read(text + ASCII_LENGTH, &length, sizeof(length)) ||
	    length >= len || !safe_read(text + lay.ascii_size, out, length))
		return 0;
	out[length] = 0;
	return 1;
}

/* A thread state's current frame, read directly or (SAFE: another thread's, PYTHON-1) through
 * safe_load. */
static uintptr_t state_frame(uintptr_t state, int safe)
{
	uintptr_t (*read)(uintptr_t, size_t) = safe ? safe_load : load;
	if (lay.tstate_cframe == SIZE_MAX)
		return read(state, lay.tstate_frame);
	uintptr_t cframe = read(state, lay.tstate_cframe);
	return cframe ? read(cframe, lay.tstate_frame) : 0;
}

/* The frames from FRAME outwards, innermost first: returns how many. Skips the interpreter's
 * shim frames and frames whose code has not started. SAFE: another thread's (PYTHON-1), each
 * frame read through safe_read, each code object's type too. */
static int walk_from(uintptr_t frame, int safe, struct walked *walked, int max_depth)
{
	int n = 0;
	for (int seen_frames = 0; frame && n < max_depth && seen_frames < 4096; seen_frames++) {
		unsigned char copy[FRAME_BYTES];
		uintptr_t at = frame;
		if (safe) {
			if (!safe_read(frame, copy, sizeof(copy)))
				break;
			at = (uintptr_t)copy;
		}
		frame = load(at, lay.frame_previous);
		signed char owner = *((const signed char *)at + lay.frame_owner);
		if (owner == lay.owner_cstack)
			continue;
		uintptr_t code = load(at, lay.frame_code);
		if (!code ||
		    (safe ? safe_load(code, OB_TYPE) : load(code, OB_TYPE)) != lay.code_type)
			continue;
		uintptr_t start = code + lay.code_adaptive, instr = load(at, lay.frame_instr);
		intptr_t position = ((intptr_t)instr - (intptr_t)start) / 2; /* 2-byte code units */
		if (position < 0 || (owner != lay.owner_generator &&
				     position < load_int(code, lay.code_firsttraceable)))
			continue; /* not started: the interpreter shows no such frame either */
		walked[n++] = (struct walked){.code = (PyObject *)code, .position = (int)position};
	}
	return n;
}

/* Whether a frame another thread walked (PYTHON-1) is the autograd engine's entry. */
static int backward_entry(const struct walked *w)
{
	char name[32], file[512];
	uintptr_t code = (uintptr_t)w->code; /* its type read safely by walk_from */
	if (!safe_ascii(safe_load(code, lay.code_name), name, sizeof(name)) ||
	    !safe_ascii(safe_load(code, lay.code_filename), file, sizeof(file)) ||
	    !strstr(file, "torch/autograd/"))
		return 0;
	return !strcmp(name, "_engine_run_backward") || !strcmp(name, "backward") ||
	       !strcmp(name, "grad");
}

/* The current frame of the thread waiting in backward() (PYTHON-1), else 0: the thread whose
 * innermost started frame is the engine's entry. */
static uintptr_t backward_caller_frame(void)
{
	if (!lay.main_interpreter || !lay.thread_head || !on_autograd_thread())
		return 0;
	void *interpreter = lay.main_interpreter();
	uintptr_t state = interpreter ? (uintptr_t)lay.thread_head(interpreter) : 0;
	for (int n = 0; state && n < 256; n++, state = safe_load(state, TSTATE_NEXT)) {
		uintptr_t frame = state_frame(state, 1);
		struct walked innermost;
		if (walk_from(frame, 1, &innermost, 1) == 1 && backward_entry(&innermost))
			return frame;
	}
	return 0;
}

/* The calling thread's frames, read directly (lay.usable), innermost first: returns how many;
 * on an autograd device thread, those of the thread waiting in backward() (PYTHON-1). */
static int walk_direct(struct walked *walked, int max_depth)
{
	uintptr_t state = (uintptr_t)lay.this_thread_state();
	uintptr_t frame = state ? state_frame(state, 0) : 0;
	/* A thread Python does not know, or one that runs no Python now: torch's autograd
	 * threads have a thread state of their own (PythonEngine::thread_init makes one, for
	 * hooks written in Python) with no frame while the engine runs CUDA's backward. */
	if (!frame)
		return walk_from(backward_caller_frame(), 1, walked, max_depth);
	return walk_from(frame, 0, walked, max_depth);
}

/* The calling thread's frames through the C API (it holds the GIL): returns how many; the
 * first past max_depth is released. */
static int walk_c_api(struct walked *walked, int max_depth)
{
	PyObject *frame = py.get_frame();
	int n = 0;
	while (frame && n < max_depth) {
		PyObject *code = py.frame_get_code(frame);
		if (!code)
			break;
		walked[n++] =
		    (struct walked){.frame = frame,
				    .code = code,
				    .position = py.frame_get_lasti ? py.frame_get_lasti(frame)
								   : py.frame_get_line(frame)};
		frame = py.frame_get_back(frame);
	}
	if (frame && n) /* the first frame past the depth */
		py.decref(frame);
	return n;
}

/* What a walk through the C API set aside: the error the program may be raising. */
struct saved_error {
	PyObject *type, *value, *traceback;
	int fetched;
};

/* The calling thread's frames, innermost first: read directly (lay.usable) or through the C
 * API, which the caller may use only while the thread holds the GIL. walk_release gives back
 * what the walk took. */
static int walk_frames(struct walked *walked, int max_depth, struct saved_error *error)
{
	if (lay.usable)
		return walk_direct(walked, max_depth);
	if (!py.get_frame())
		return 0;
	/* The program may be in the middle of raising: keep its error as it is. */
	py.err_fetch(&error->type, &error->value, &error->traceback);
	error->fetched = 1;
	return walk_c_api(walked, max_depth);
}

static void walk_release(struct walked *walked, int n, struct saved_error *error)
{
	if (lay.usable)
		return;
	for (int i = 0; i < n; i++) {
		py.decref(walked[i].code);
		if (i) /* the first frame is borrowed */
			py.decref(walked[i].frame);
	}
	if (error->fetched)
		py.err_restore(error->type, error->value, error->traceback);
}

/* A walked frame's line. */
static int walked_line(const struct walked *w)
{
	if (lay.usable)
		return code_line((uintptr_t)w->code, w->position);
	return py.frame_get_lasti ? py.frame_get_line(w->frame) : w->position;
}

/* The frames' text, "file:line in function" per frame, innermost first (malloc'd). The caller
 * holds code_cache_lock. */
static char *frames_text(struct walked *walked, int n, size_t *length)
{
	size_t capacity = 4096, used = 0;
	char *text = malloc(capacity);
	for (int i = 0; text && i < n; i++) {
		char file_buffer[512], function_buffer[256];
		const char *file = walked[i].file, *function = walked[i].function;
		if (!file) /* not in the code cache (full): read now */
			code_names(walked[i].code, file_buffer, sizeof(file_buffer),
				   function_buffer, sizeof(function_buffer), &file, &function);
		int line = walked_line(&walked[i]);
		size_t need = strlen(file) + strlen(function) + 32;
		if (used + need > capacity) {
			char *grown = realloc(text, capacity * 2 + need);
			if (!grown)
				break;
			text = grown;
			capacity = capacity * 2 + need;
		}
		used += (size_t)snprintf(text + used, capacity - used, "%s%s:%d in %s",
					 i ? "\n" : "", file, line, function);
	}
	*length = used;
	return text;
}

/* Walks the calling thread's Python frames (directly, or through the C API while it holds the
 * GIL) and pushes them: with their text the first time this thread sees the stack, by key
 * afterwards. Returns 1 when it sent the key (a stack seen before). */
static int push_frames(struct ss_ring *ring, int deferred)
{
	struct saved_error error = {0};
	struct walked walked[MAX_FRAMES];
	struct {
		uintptr_t code;
		intptr_t position;
	} keys[MAX_FRAMES]; /* what identifies the stack: hashed into its key */
	int max_depth = (int)ss_config.SYNCSPY_STACK_DEPTH, n, all_cached = 1;
	if (max_depth > MAX_FRAMES)
		max_depth = MAX_FRAMES;
	n = walk_frames(walked, max_depth, &error);
	pthread_mutex_lock(&code_cache_lock);
	for (int i = 0; i < n; i++) {
		char file_buffer[512], function_buffer[256]; /* only for the cache to copy */
		struct walked *w = &walked[i];
		if (!code_names(w->code, file_buffer, sizeof(file_buffer), function_buffer,
				sizeof(function_buffer), &w->file, &w->function)) {
			w->file = w->function = NULL; /* not cached: named later, uncached */
			all_cached = 0;
		}
		keys[i].code = (uintptr_t)w->code;
		keys[i].position = w->position;
	}
	uint64_t key = ss_hash64(keys, (size_t)n * sizeof(keys[0])) | 1;
	uint64_t *slot = &seen[key % SEEN_PER_TLS];
	struct ss_rec rec = {
	    .api = SS_REC_PYSTACK, .aux = key, .stream = (uint64_t)n, .cls = (uint8_t)deferred};
	int keyed = all_cached && *slot == key; /* the writer has its text (SS_REC_PYSTACK) */
	char *text = NULL;
	if (n && !keyed) {
		size_t length = 0;
		text = frames_text(walked, n, &length);
		rec.obj = (uintptr_t)text;
		rec.bytes = length;
		/* A stack with a code object the cache does not hold is keyed by its text. */
		if (!all_cached)
			rec.aux = text ? ss_hash64(text, length) | 1 : 0;
	}
	pthread_mutex_unlock(&code_cache_lock);
	walk_release(walked, n, &error);
	if (!n || (!keyed && !text))
		return 0;
	if (!ss_ring_push(ring, &rec))
		free(text); /* counted as dropped (SHIM-5) */
	else if (text && all_cached)
		*slot = key;
	return keyed;
}

/* The guard's name for a sync point (guard.c): the calling thread's user frame, the innermost
 * outside the frameworks (ss_framework_python_file, as the writer picks a stack's site:
 * SCHEMA-6), else its innermost frame. Read at the sync as push_frames reads them: directly, or
 * through the C API while the thread holds the GIL; an interpreter of unknown layout without
 * the GIL has none to give (0). errno kept (SHIM-2). */
int ss_python_user_frame(char *file, size_t file_len, int *line, char *function,
			 size_t function_len)
{
	int saved_errno = errno, found = 0;
	pthread_once(&py_once, find_python);
	if (!py.usable || !py.is_initialized() || (!lay.usable && !py.gil_check())) {
		errno = saved_errno;
		return 0;
	}
	struct saved_error error = {0};
	struct walked walked[MAX_FRAMES];
	int n = walk_frames(walked, MAX_FRAMES, &error);
	pthread_mutex_lock(&code_cache_lock);
	for (int i = 0; i < n; i++) {
		char file_buffer[512], function_buffer[256];
		const char *name, *in;
		code_names(walked[i].code, file_buffer, sizeof(file_buffer), function_buffer,
			   sizeof(function_buffer), &name, &in);
		int user = !ss_framework_python_file(name);
		if (i == 0 || user) { /* the innermost, until a user frame is found */
			snprintf(file, file_len, "%s", name);
			snprintf(function, function_len, "%s", in);
			*line = walked_line(&walked[i]);
			found = 1;
		}
		if (user)
			break;
	}
	pthread_mutex_unlock(&code_cache_lock);
	walk_release(walked, n, &error);
	errno = saved_errno;
	return found;
}

/* syncspy_python_raise (guard.c): the Python exception class EXCEPTION raised in the calling
 * thread as soon as it is back in Python (PyThreadState_SetAsyncExc), for a guard that raises at
 * its first sync point. The one place the shim takes the GIL (PyGILState_Ensure): only for a
 * guard the program opened with it, after the real call returned (docs/python.md). Returns 1
 * when the exception is scheduled. errno kept (SHIM-2). */
int ss_python_raise_async(void *exception)
{
	static int (*ensure)(void);
	static void (*release)(int);
	static int (*set_async)(unsigned long, PyObject *);
	static unsigned long (*thread_id)(void);
	int saved_errno = errno, scheduled = 0;
	pthread_once(&py_once, find_python);
	if (!ensure) {
		*(void **)&release = ss_dlsym(RTLD_DEFAULT, "PyGILState_Release");
		*(void **)&set_async = ss_dlsym(RTLD_DEFAULT, "PyThreadState_SetAsyncExc");
		*(void **)&thread_id = ss_dlsym(RTLD_DEFAULT, "PyThread_get_thread_ident");
		*(void **)&ensure = ss_dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
	}
	if (exception && py.usable && py.is_initialized() && ensure && release && set_async &&
	    thread_id) {
		int state = ensure();
		scheduled = set_async(thread_id(), exception) == 1;
		release(state);
	}
	errno = saved_errno;
	return scheduled;
}

/* The main thread's tid is the pid. Kept: getpid() is a system call at every sync point
 * otherwise (glibc caches it no more), a tenth of a stack's cost. 0 until the first sync
 * point, and again in a forked child. */
static pid_t process_id;

void ss_python_fork_child(void)
{
	memset(seen, 0, sizeof(seen)); /* the child's writer knows none of them */
	process_id = 0;
}

/* Runs on the main thread with the GIL (Py_AddPendingCall), as soon as the interpreter is back
 * from the C call that synced: the thread has run no Python meanwhile, so its frames are still
 * those of the line that made the sync. */
static _Atomic int deferred_scheduled;

static int deferred_capture(void *arg)
{
	(void)arg;
	struct ss_tls *tls = &ss_tls;
	atomic_store(&deferred_scheduled, 0);
	if (tls->ring && tls->generation == atomic_load(&ss_hot.generation)) {
		uint64_t start = ss_now();
		int keyed = push_frames(tls->ring, 1);
		uint64_t took = ss_now() - start;
		atomic_fetch_add_explicit(&tls->ring->stack_ticks[1], took, memory_order_relaxed);
		if (keyed) /* a stack seen before: part of the steady state (meta) */
			atomic_fetch_add_explicit(&tls->ring->stack_ticks_repeated, took,
						  memory_order_relaxed);
	}
	return 0;
}

static pid_t main_thread_id(void)
{
	if (!process_id)
		process_id = getpid();
	return process_id;
}

static void python_attach(struct ss_tls *tls);

/* SHIM-2: the C API's lookups, the frames' allocation and Py_AddPendingCall may set errno. */
void ss_python_attach(struct ss_tls *tls)
{
	int saved_errno = errno;
	python_attach(tls);
	errno = saved_errno;
}

static void python_attach(struct ss_tls *tls)
{
	pthread_once(&py_once, find_python);
	if (!py.usable || !tls->ring || !py.is_initialized())
		return;
	if (lay.usable || py.gil_check()) { /* read at the sync itself: see the top */
		push_frames(tls->ring, 0);
		return;
	}
	/* An interpreter whose layout is not known, with the GIL released (torch releases it
	 * around its operations, `.item()` included): the frames cannot be read now. On the main
	 * thread, ask the interpreter to call back as soon as it holds the GIL again, and mark the
	 * call as waiting for them. Elsewhere: no frames (docs/attribution.md). Py_AddPendingCall
	 * needs neither the GIL nor a thread state. */
	if (!py.add_pending_call || tls->ring->tid != main_thread_id())
		return;
	struct ss_rec waiting = {.api = SS_REC_PYSTACK_WAIT};
	if (!ss_ring_push(tls->ring, &waiting))
		return;
	int expected = 0;
	if (atomic_compare_exchange_strong(&deferred_scheduled, &expected, 1) &&
	    py.add_pending_call(deferred_capture, NULL) != 0)
		atomic_store(&deferred_scheduled, 0);
}
