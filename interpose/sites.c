/*
 * interpose/sites.c: naming code, on the writer thread: what a call's return address, its native
 * stack and its Python frames become in the database (sites, stacks and the modules extension
 * table). A native address is named with dladdr in the recording process (the mappings are
 * gone afterwards): "symbol+0xoff (module)", C++ names demangled through the process's own
 * C++ runtime, with the module's GNU build id so that `syncspy report` reads line numbers only
 * from the very file that ran. A stack's user frame, the first outside the shim, CUDA, NCCL,
 * the frameworks and the interpreter (docs/attribution.md), becomes the call's site
 * (SCHEMA-6). Each address, stack and module is named once and remembered by key.
 *
 * Never on the hot path (SHIM-1): app threads only push addresses and frames into their rings.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syncspy/schema.h"

#include "dbfile.h"
#include "driver.h"
#include "dynsyms.h"
#include "elfsyms.h"
#include "native.h"
#include "resolve.h"
#include "shim.h"
#include "sites.h"

/* ------------------------------------------------------------------ call sites */

/* A map from a 64-bit key (an address, a hash) to a row id, open addressing. */
struct id_map {
	uint64_t *keys;
	int64_t *ids;
	size_t capacity, count;
};
static struct id_map sites, text_sites, stacks, native_stacks, native_stack_sites,
    python_stack_sites, modules_noted;

static void id_map_free(struct id_map *map)
{
	free(map->keys);
	free(map->ids);
	memset(map, 0, sizeof(*map));
}

/* The slot of key: its id when present, 0 when not (key 0 is never stored). */
static int64_t *id_map_slot(struct id_map *map, uint64_t key)
{
	if (map->count * 2 >= map->capacity) { /* grow: keep the load under one half */
		size_t capacity = map->capacity ? map->capacity * 2 : 1024;
		uint64_t *keys = calloc(capacity, sizeof(*keys));
		int64_t *ids = calloc(capacity, sizeof(*ids));
		if (!keys || !ids) {
			free(keys);
			free(ids);
			return NULL;
		}
		for (size_t i = 0; i < map->capacity; i++) {
			if (!map->keys[i])
				continue;
			size_t j = ss_hash64(&map->keys[i], 8) & (capacity - 1);
			while (keys[j])
				j = (j + 1) & (capacity - 1);
			keys[j] = map->keys[i];
			ids[j] = map->ids[i];
		}
		free(map->keys);
		free(map->ids);
		map->keys = keys;
		map->ids = ids;
		map->capacity = capacity;
	}
	size_t j = ss_hash64(&key, 8) & (map->capacity - 1);
	while (map->keys[j] && map->keys[j] != key)
		j = (j + 1) & (map->capacity - 1);
	if (!map->keys[j]) {
		map->keys[j] = key;
		map->ids[j] = 0;
		map->count++;
	}
	return &map->ids[j];
}

static int64_t insert_site_row(uint64_t address, const char *module, uint64_t offset,
			       const char *symbol, const char *text)
{
	sqlite3_stmt *st = ss_statements[SS_ST_SITE];
	ss_sq.sqlite3_bind_int64(st, 1, (sqlite3_int64)address);
	if (module)
		ss_sq.sqlite3_bind_text(st, 2, module, -1, SQLITE_TRANSIENT);
	else
		ss_sq.sqlite3_bind_null(st, 2);
	ss_sq.sqlite3_bind_int64(st, 3, (sqlite3_int64)offset);
	if (symbol)
		ss_sq.sqlite3_bind_text(st, 4, symbol, -1, SQLITE_TRANSIENT);
	else
		ss_sq.sqlite3_bind_null(st, 4);
	ss_sq.sqlite3_bind_text(st, 5, text, -1, SQLITE_TRANSIENT);
	if (ss_db_step(st) != 0)
		return 0;
	return ss_sq.sqlite3_last_insert_rowid(ss_db);
}

/* A C++ symbol's readable name, through the C++ runtime's own demangler when the process has
 * one loaded (every C++ and nvcc-built program does); NULL otherwise. The caller frees it. */
char *ss_demangle(const char *symbol)
{
	static char *(*cxa_demangle)(const char *, char *, size_t *, int *);
	static int looked;
	if (!symbol || symbol[0] != '_' || symbol[1] != 'Z')
		return NULL;
	if (!looked) {
		*(void **)&cxa_demangle = ss_dlsym(RTLD_DEFAULT, "__cxa_demangle");
		looked = 1;
	}
	int status = -1;
	char *name = cxa_demangle ? cxa_demangle(symbol, NULL, NULL, &status) : NULL;
	if (status != 0) {
		free(name);
		return NULL;
	}
	return name;
}

/* ------------------------------------------------------------------ modules and build ids */

/* The modules of native sites, with their GNU build id, so that `syncspy report` reads line
 * numbers only from the very file that ran (docs/schema.md, modules). An extension table
 * (SS_MODULES_SQL), created with the first native site. */
static sqlite3_stmt *module_insert;

struct build_id_search {
	uintptr_t address;
	char hex[2 * 64 + 1]; /* "" until found */
};

/* dl_iterate_phdr callback: the object whose PT_LOAD holds the address; its NT_GNU_BUILD_ID
 * note, read from memory (the mapped file as it ran). */
static int find_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
	struct build_id_search *search = data;
	int holds = 0;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum && !holds; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		holds = ph->p_type == PT_LOAD && search->address >= start &&
			search->address < start + ph->p_memsz;
	}
	if (!holds)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *note = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const char *end = note + ph->p_memsz;
		while (note + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)note;
			const char *name = note + sizeof(*nh);
			const unsigned char *desc =
			    (const unsigned char *)name + ((nh->n_namesz + 3) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0 && nh->n_descsz <= 64 &&
			    (const char *)desc + nh->n_descsz <= end) {
				for (unsigned k = 0; k < nh->n_descsz; k++)
					snprintf(search->hex + 2 * k, 3, "%02x", desc[k]);
				return 1;
			}
			note = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 1; /* the object, without a build id */
}

static void note_module(const char *module, uint64_t address)
{
	/* once per module: its sites are many, its build id and path one */
	int64_t *noted = id_map_slot(&modules_noted, ss_hash64(module, strlen(module)) | 1);
	if (noted && *noted)
		return;
	if (noted)
		*noted = 1;
	if (!module_insert &&
	    (ss_db_exec(SS_MODULES_SQL) != SQLITE_OK ||
	     ss_sq.sqlite3_prepare_v2(ss_db, "INSERT OR IGNORE INTO modules VALUES(?, ?, ?)", -1,
				      &module_insert, NULL) != SQLITE_OK)) {
		module_insert = NULL;
		return;
	}
	struct build_id_search search = {.address = (uintptr_t)address};
	dl_iterate_phdr(find_build_id, &search);
	ss_sq.sqlite3_bind_text(module_insert, 1, module, -1, SQLITE_TRANSIENT);
	if (search.hex[0])
		ss_sq.sqlite3_bind_text(module_insert, 2, search.hex, -1, SQLITE_TRANSIENT);
	else
		ss_sq.sqlite3_bind_null(module_insert, 2);
	/* the absolute path (the main program's name may be relative to the working directory) */
	char *file = realpath(module, NULL);
	if (file)
		ss_sq.sqlite3_bind_text(module_insert, 3, file, -1, SQLITE_TRANSIENT);
	else
		ss_sq.sqlite3_bind_null(module_insert, 3);
	free(file);
	ss_db_step(module_insert);
}

/* A native return address: "symbol+0xoff (module)" or "module+0xoff"; C++ names demangled in
 * the text (sites.symbol keeps the linker's name). */
static int64_t insert_native_site(uint64_t address)
{
	Dl_info info;
	const char *module = NULL, *symbol = NULL;
	uint64_t offset = address;
	char text[1024];
	if (ss_dladdr((void *)(uintptr_t)address, &info) && info.dli_fname) { /* SITES-2 */
		module = info.dli_fname;
		offset = address - (uint64_t)(uintptr_t)info.dli_fbase;
		symbol = info.dli_sname;
	}
	const char *base = module ? strrchr(module, '/') : NULL;
	base = base ? base + 1 : (module && *module ? module : "?");
	char *readable = ss_demangle(symbol);
	if (symbol)
		snprintf(text, sizeof(text), "%s+0x%llx (%s)", readable ? readable : symbol,
			 (unsigned long long)(address - (uint64_t)(uintptr_t)info.dli_saddr), base);
	else
		snprintf(text, sizeof(text), "%s+0x%llx", base, (unsigned long long)offset);
	free(readable);
	if (module)
		note_module(module, address);
	return insert_site_row(address, module, offset, symbol, text);
}

/* The last address named: a burst of calls from one line asks for it again and again. */
static uint64_t last_address;
static int64_t last_site;

int64_t ss_site_id(uint64_t address)
{
	if (address == 0)
		return 0;
	if (address == last_address)
		return last_site;
	int64_t *slot = id_map_slot(&sites, address);
	if (!slot)
		return 0;
	if (*slot == 0)
		*slot = insert_native_site(address);
	if (*slot) {
		last_address = address;
		last_site = *slot;
	}
	return *slot;
}

/* ------------------------------------------------------------------ stacks */

/* ss_framework_python_file on one line of a stack's text, LENGTH bytes from LINE: the frames
 * after it are not its own (a user line inside nn.Module.forward is followed by torch's
 * module.py frames, which must not make it a framework frame). */
static int framework_python_line(const char *line, size_t length)
{
	char frame[1024];
	snprintf(frame, sizeof(frame), "%.*s", (int)length, line);
	return ss_framework_python_file(frame);
}

/* The site of a Python frame line "file:line in function", by its text. */
static int64_t python_site(const char *frame, size_t length)
{
	char text[1024], file[768] = "", function[256] = "";
	snprintf(text, sizeof(text), "%.*s", (int)length, frame);
	int64_t *slot = id_map_slot(&text_sites, ss_hash64(text, strlen(text)) | 1);
	if (!slot)
		return 0;
	if (*slot == 0) {
		long line = 0;
		const char *in = strstr(text, " in ");
		const char *colon = in ? in : text + strlen(text);
		while (colon > text && *colon != ':')
			colon--;
		snprintf(file, sizeof(file), "%.*s", (int)(colon - text), text);
		if (*colon == ':')
			line = strtol(colon + 1, NULL, 10);
		if (in)
			snprintf(function, sizeof(function), "%s", in + 4);
		*slot = insert_site_row(0, file, (uint64_t)line, *function ? function : NULL, text);
	}
	return *slot;
}

/* A call's Python frames (python.c): deduplicated into stacks; the user's frame becomes the
 * call's site (SCHEMA-6). A record carries the frames' text the first time its thread sends
 * the stack, only the stack's key (aux) afterwards: the stack and its site are found by key.
 * The text's buffer was the writer's to free from the moment it was pushed. */
void ss_store_python_stack(const struct ss_rec *r, const int64_t *calls, size_t ncalls)
{
	char *frames = (char *)(uintptr_t)r->obj;
	uint64_t hash = r->aux | 1;
	int64_t *slot = id_map_slot(&stacks, hash);
	int64_t *site_slot = id_map_slot(&python_stack_sites, hash);
	int64_t site = site_slot ? *site_slot : 0;
	if (frames && slot && *slot == 0) {
		sqlite3_stmt *st = ss_statements[SS_ST_STACK];
		ss_sq.sqlite3_bind_text(st, 1, "python", -1, SQLITE_STATIC);
		ss_sq.sqlite3_bind_int64(st, 2, (sqlite3_int64)r->aux);
		ss_sq.sqlite3_bind_int64(st, 3, (sqlite3_int64)r->stream);
		ss_sq.sqlite3_bind_text(st, 4, frames, (int)r->bytes, SQLITE_TRANSIENT);
		if (ss_db_step(st) == 0)
			*slot = ss_sq.sqlite3_last_insert_rowid(ss_db);
	}
	if (frames && !site) {
		const char *user = frames, *line = frames;
		for (;;) {
			const char *end = strchr(line, '\n');
			if (!framework_python_line(line,
						   end ? (size_t)(end - line) : strlen(line))) {
				user = line;
				break;
			}
			if (!end)
				break;
			line = end + 1;
		}
		const char *user_end = strchr(user, '\n');
		site = python_site(user, user_end ? (size_t)(user_end - user) : strlen(user));
		if (site_slot)
			*site_slot = site;
	}
	for (size_t i = 0; slot && *slot && i < ncalls; i++) {
		sqlite3_stmt *st = ss_statements[SS_ST_ATTACH_STACK];
		ss_sq.sqlite3_bind_int64(st, 1, *slot);
		if (site)
			ss_sq.sqlite3_bind_int64(st, 2, site);
		else
			ss_sq.sqlite3_bind_null(st, 2);
		ss_sq.sqlite3_bind_int64(st, 3, calls[i]);
		ss_db_step(st);
	}
	free(frames);
}

/* docs/attribution.md: native frames of the shim, CUDA, NCCL, the frameworks and the Python
 * interpreter; the native user site is the first frame outside these. */
int ss_framework_module(const char *path)
{
	static const char *const prefixes[] = {"libsyncspy", "libcudart", "libcuda.",	"libnccl",
					       "libtorch",   "libc10",	  "libpython",	"python",
					       "libcublas",  "libcudnn",  "libc.so",	"_C.",
					       "libcupti",   "ld-linux",  "libffi",	"_ctypes",
					       "libstdc++",  "libgcc_s",  "libcublasLt",
					       /* the toolkit's other libraries: the user's call into
						* them is the site, not where they allocate or sync */
					       "libcufft",   "libcusolver", "libcusparse", "libcurand",
					       "libnpp",     "libnvjpeg",   "libcutensor", "libnvrtc",
					       "libnvJitLink", "libnvblas", "libcudss"};
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(base, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

/*
 * Native frames already named, by return address (SITES-1): a new stack shares most of its
 * frames with stacks stored before (the interpreter's, a framework's dispatch), and naming one
 * asks dladdr for the nearest symbol, a scan of the module's whole dynamic symbol table: 0.3 ms
 * an address in a libtorch_cpu.so of 34,000 symbols (measured on the build machine; torch 2.11's
 * libraries hold more), on the writer thread, beside the program's first steps on its cores. A
 * frame is named once; the names are forgotten when a module was unloaded (another may take its
 * addresses: ss_module_unloads).
 */
struct frame_name {
	char *text; /* "symbol+0xoff (module)" or "module+0xoff" */
	int user;   /* a frame of the user's: not a framework's, nor a static runtime's */
};
static struct id_map frame_index; /* return address -> 1 + its index in frame_names */
static struct frame_name *frame_names;
static size_t nframe_names, frame_names_capacity;
static unsigned long long frame_names_unloads;

static void forget_frame_names(void)
{
	for (size_t i = 0; i < nframe_names; i++)
		free(frame_names[i].text);
	free(frame_names);
	frame_names = NULL;
	nframe_names = frame_names_capacity = 0;
	id_map_free(&frame_index);
}

/* The frame at return address IP, named (NULL: out of memory). Keyed by IP + 1: an unwinder's
 * last frame may be 0, and the map never stores key 0. */
static const struct frame_name *frame_name(uintptr_t ip)
{
	int64_t *slot = id_map_slot(&frame_index, (uint64_t)ip + 1);
	if (slot && *slot)
		return &frame_names[*slot - 1];
	Dl_info info;
	uintptr_t lookup = ip ? ip - 1 : ip; /* inside the call */
	const char *module = "?", *symbol = NULL;
	uintptr_t offset = ip, symbol_offset = 0;
	struct frame_name named = {NULL, 0};
	if (ss_dladdr((void *)lookup, &info) && info.dli_fname) { /* SITES-2 */
		module = strrchr(info.dli_fname, '/') ? strrchr(info.dli_fname, '/') + 1
						      : info.dli_fname;
		offset = ip - (uintptr_t)info.dli_fbase;
		symbol = info.dli_sname;
		symbol_offset = ip - (uintptr_t)info.dli_saddr;
		/* ELFSYMS-1's library frames are not the user's either */
		named.user =
		    !ss_framework_module(info.dli_fname) &&
		    !ss_static_runtime_frame(info.dli_fname, (uintptr_t)info.dli_fbase, lookup);
	}
	char text[1024], *readable = ss_demangle(symbol);
	if (symbol)
		snprintf(text, sizeof(text), "%s+0x%lx (%s)", readable ? readable : symbol,
			 (unsigned long)symbol_offset, module);
	else
		snprintf(text, sizeof(text), "%s+0x%lx", *module ? module : "?",
			 (unsigned long)offset);
	free(readable);
	named.text = strdup(text);
	if (!named.text)
		return NULL;
	if (nframe_names == frame_names_capacity) {
		size_t capacity = frame_names_capacity ? frame_names_capacity * 2 : 1024;
		struct frame_name *grown = realloc(frame_names, capacity * sizeof(*grown));
		if (!grown) {
			free(named.text);
			return NULL;
		}
		frame_names = grown;
		frame_names_capacity = capacity;
	}
	frame_names[nframe_names++] = named;
	slot = id_map_slot(&frame_index, (uint64_t)ip + 1); /* the map may have grown meanwhile */
	if (slot)
		*slot = (int64_t)nframe_names;
	return &frame_names[nframe_names - 1];
}

/* A call's native stack (native.c): stored once per hash, its frames symbolized here, in the
 * recording process, with dladdr (SITES-1); its first frame outside the frameworks becomes the
 * call's site (a Python site, which follows, takes precedence: SCHEMA-6). */
void ss_store_native_stack(const struct ss_rec *r, int64_t call_rowid)
{
	uintptr_t *ips = (uintptr_t *)(uintptr_t)r->obj;
	size_t n = (size_t)r->stream;
	int64_t *slot = id_map_slot(&native_stacks, r->aux);
	int64_t user_site = 0;
	if (slot && *slot == 0 && ips) {
		unsigned long long unloads = ss_module_unloads();
		if (unloads != frame_names_unloads) {
			forget_frame_names();
			frame_names_unloads = unloads;
		}
		size_t capacity = n * 512 + 1, used = 0; /* demangled C++ names run long */
		char *text = malloc(capacity);
		for (size_t i = 0; text && i < n; i++) {
			const struct frame_name *frame = frame_name(ips[i]);
			if (!frame)
				break;
			/* with no user frame, the call's own return address stays its site */
			if (!user_site && frame->user)
				user_site = ss_site_id(ips[i]);
			used += (size_t)snprintf(text + used, capacity - used, "%s%s",
						 i ? "\n" : "", frame->text);
			if (used >= capacity)
				break;
		}
		if (text) {
			sqlite3_stmt *st = ss_statements[SS_ST_STACK];
			ss_sq.sqlite3_bind_text(st, 1, "native", -1, SQLITE_STATIC);
			ss_sq.sqlite3_bind_int64(st, 2, (sqlite3_int64)r->aux);
			ss_sq.sqlite3_bind_int64(st, 3, (sqlite3_int64)n);
			ss_sq.sqlite3_bind_text(st, 4, text, -1, SQLITE_TRANSIENT);
			if (ss_db_step(st) == 0)
				*slot = ss_sq.sqlite3_last_insert_rowid(ss_db);
			free(text);
		}
	}
	/* A stack's user site is found once, with its frames, and remembered by its hash: a thread
	 * sends the frames of a stack only the first time (native.c). */
	int64_t *site_slot = id_map_slot(&native_stack_sites, r->aux);
	if (site_slot && user_site)
		*site_slot = user_site;
	else if (site_slot)
		user_site = *site_slot;
	if (call_rowid && slot && *slot) {
		sqlite3_stmt *st = ss_statements[SS_ST_ATTACH_NATIVE];
		ss_sq.sqlite3_bind_int64(st, 1, *slot);
		if (user_site)
			ss_sq.sqlite3_bind_int64(st, 2, user_site);
		else
			ss_sq.sqlite3_bind_null(st, 2);
		ss_sq.sqlite3_bind_int64(st, 3, call_rowid);
		ss_db_step(st);
	}
	free(ips);
}

/* ------------------------------------------------------------------ end, fork */

/* What this file remembers of the database it writes: its ids, by address, text and key. */
static void forget_ids(void)
{
	last_address = 0;
	last_site = 0;
	id_map_free(&sites);
	id_map_free(&text_sites);
	id_map_free(&stacks);
	id_map_free(&native_stacks);
	id_map_free(&native_stack_sites);
	id_map_free(&python_stack_sites);
	id_map_free(&modules_noted);
	forget_frame_names();
	ss_dynsyms_forget();
}

void ss_sites_close(void)
{
	ss_sq.sqlite3_finalize(module_insert);
	module_insert = NULL;
	forget_ids();
}

void ss_sites_fork_child(void)
{
	forget_ids();
	module_insert = NULL; /* a statement of the parent's connection */
}
