/*
 * interpose/python.c: the Python frames of a sync point (S1-S6), taken when the calling thread
 * holds the GIL: `.item()`, printing a tensor, `.cpu()` and the like reach CUDA from Python with
 * the GIL held, and their frames name the user's line.
 *
 * Python's C API is found at run time (dlsym in the global scope: the python executable exports
 * it), never linked. The hook runs no Python code and never takes the GIL: it asks
 * PyGILState_Check() first and walks frame objects with the GIL the thread already holds
 * (PyEval_GetFrame, PyFrame_GetBack/GetCode/GetLineNumber, Python 3.9 and later). A sync made
 * with the GIL released (torch releases it around its operations: `.item()`,
 * torch.cuda.synchronize) on the main thread gets them a moment later: Py_AddPendingCall, which
 * needs no GIL, has the interpreter call back with the GIL as soon as it is back from the C
 * call, and the frames are still those of the line that synced. On other threads such a sync
 * gets no Python frames: its site is the native one (docs/attribution.md).
 *
 * The frames travel to the writer as a record of their own (api SS_REC_PYSTACK) right behind
 * the call's record, carrying a malloc'd text, "file:line in function" per frame, innermost
 * first, the first time this thread sees the stack, and only the stack's key afterwards (as
 * native.c does): a sync point repeats its stack every step, and naming frames (the line
 * number from the code's line table, the text, its allocation) costs more than walking them.
 * The key is a hash of each frame's code object and instruction offset (PyFrame_GetLasti,
 * Python 3.11 and later; the line number before), and is used only when every code object of
 * the stack is held by the code cache below, so that no address can come back meaning
 * another code object. Sync points cost microseconds already; the work is theirs only
 * (SHIM-1).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "ring.h"
#include "shim.h"

void *ss_dlsym(void *handle, const char *name); /* driver.c: the real dlsym */

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
}

/* A code object's attribute as UTF-8 into out ("?" when it has none). */
static void code_text(PyObject *code, const char *attr, char *out, size_t len)
{
	PyObject *value = py.get_attr(code, attr);
	const char *text = value ? py.as_utf8(value) : NULL;
	snprintf(out, len, "%s", text ? text : "?");
	if (value)
		py.decref(value);
}

/* Code objects already named, by address: reading co_filename and co_name through the C API
 * costs more than the rest of a frame. Each cached code object is kept alive (a reference
 * taken under the GIL), so its address cannot come back as another code object: an entry is
 * never stale. Bounded: once full, frames are named without it. */
#define CODE_CACHE_SLOTS 2048 /* a power of two; filled to 3/4 at most */

static struct code_name {
	PyObject *code;
	char *file, *function; /* one allocation: file, then function */
} code_cache[CODE_CACHE_SLOTS];
static int code_cache_used;
static pthread_mutex_t code_cache_lock = PTHREAD_MUTEX_INITIALIZER; /* free-threaded Pythons */

/* The file and function of a code object, through the cache; into the buffers when it is full.
 * Returns 1 when the code object is in the cache (and so kept alive), 0 when it is not. The
 * caller holds code_cache_lock (once per stack, not per frame). */
static int code_names(PyObject *code, char *file, size_t file_len, char *function,
		      size_t function_len, const char **file_out, const char **function_out)
{
	size_t slot = ((uintptr_t)code >> 4) & (CODE_CACHE_SLOTS - 1);
	for (int probe = 0; probe < 16; probe++, slot = (slot + 1) & (CODE_CACHE_SLOTS - 1)) {
		struct code_name *entry = &code_cache[slot];
		if (entry->code == code) {
			*file_out = entry->file;
			*function_out = entry->function;
			return 1;
		}
		if (entry->code == NULL)
			break;
	}
	code_text(code, "co_filename", file, file_len);
	code_text(code, "co_name", function, function_len);
	*file_out = file;
	*function_out = function;
	struct code_name *entry = &code_cache[slot];
	size_t flen = strlen(file) + 1, glen = strlen(function) + 1;
	char *text = entry->code == NULL && code_cache_used < CODE_CACHE_SLOTS * 3 / 4
			 ? malloc(flen + glen)
			 : NULL;
	if (text) {
		memcpy(text, file, flen);
		memcpy(text + flen, function, glen);
		py.incref(code); /* kept for the cache's life: see above */
		*entry = (struct code_name){code, text, text + flen};
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
	PyObject *frame, *code; /* references of ours, but the first frame (borrowed) */
	const char *file, *function;
	int position; /* the instruction offset (3.11+) or the line */
};

/* The frames' text, "file:line in function" per frame, innermost first (malloc'd). */
static char *frames_text(struct walked *walked, int n, size_t *length)
{
	size_t capacity = 4096, used = 0;
	char *text = malloc(capacity);
	for (int i = 0; text && i < n; i++) {
		char file_buffer[512], function_buffer[256];
		const char *file = walked[i].file, *function = walked[i].function;
		if (!file) { /* not in the code cache (full): read now */
			pthread_mutex_lock(&code_cache_lock);
			code_names(walked[i].code, file_buffer, sizeof(file_buffer),
				   function_buffer, sizeof(function_buffer), &file, &function);
			pthread_mutex_unlock(&code_cache_lock);
		}
		int line =
		    py.frame_get_lasti ? py.frame_get_line(walked[i].frame) : walked[i].position;
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

/* Walks the calling thread's Python frames (it holds the GIL) and pushes them: with their text
 * the first time this thread sees the stack, by key afterwards. Returns 1 when it sent the key
 * (a stack seen before). */
static int push_frames(struct ss_ring *ring, int deferred)
{
	PyObject *frame = py.get_frame();
	if (!frame)
		return 0;
	/* The program may be in the middle of raising: keep its error as it is. */
	PyObject *type = NULL, *value = NULL, *traceback = NULL;
	py.err_fetch(&type, &value, &traceback);
	struct walked walked[MAX_FRAMES];
	struct {
		uintptr_t code;
		intptr_t position;
	} keys[MAX_FRAMES]; /* what identifies the stack: hashed into its key */
	int max_depth = (int)ss_config.SYNCSPY_STACK_DEPTH, n = 0, all_cached = 1;
	if (max_depth > MAX_FRAMES)
		max_depth = MAX_FRAMES;
	pthread_mutex_lock(&code_cache_lock);
	while (frame && n < max_depth) {
		PyObject *code = py.frame_get_code(frame);
		if (!code)
			break;
		char file_buffer[512], function_buffer[256]; /* only for the cache to copy */
		struct walked *w = &walked[n++];
		*w = (struct walked){.frame = frame, .code = code};
		if (!code_names(code, file_buffer, sizeof(file_buffer), function_buffer,
				sizeof(function_buffer), &w->file, &w->function)) {
			w->file = w->function = NULL; /* the cache is full: named later, uncached */
			all_cached = 0;
		}
		w->position =
		    py.frame_get_lasti ? py.frame_get_lasti(frame) : py.frame_get_line(frame);
		keys[n - 1].code = (uintptr_t)code;
		keys[n - 1].position = w->position;
		frame = py.frame_get_back(frame);
	}
	pthread_mutex_unlock(&code_cache_lock);
	if (frame) /* the first frame past the depth */
		py.decref(frame);
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
	for (int i = 0; i < n; i++) {
		py.decref(walked[i].code);
		if (i) /* the first frame is borrowed */
			py.decref(walked[i].frame);
	}
	py.err_restore(type, value, traceback);
	if (!n || (!keyed && !text))
		return 0;
	if (!ss_ring_push(ring, &rec))
		free(text); /* counted as dropped (SHIM-5) */
	else if (text && all_cached)
		*slot = key;
	return keyed;
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
	if (py.gil_check()) {
		push_frames(tls->ring, 0);
		return;
	}
	/* The GIL is released (torch releases it around its operations, `.item()` included): the
	 * frames cannot be read now. On the main thread, ask the interpreter to call back as soon
	 * as it holds the GIL again, and mark the call as waiting for them. Elsewhere: no frames
	 * (docs/attribution.md). Py_AddPendingCall needs neither the GIL nor a thread state. */
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
