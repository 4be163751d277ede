/*
 * report/lines.c: file:line for native call sites, read after the run from the debug
 * information of the very files that ran (DWARF line tables, through elfutils' libdwfl).
 *
 * The recording stores a native site as module + offset, and each module's GNU build id and
 * absolute path in the `modules` table (interpose/sites.c). Here, for each native site whose
 * module is on this machine with the same build id and carries line information, the site's
 * text becomes "FILE:LINE in FUNCTION", the form Python frames have, so that findings name the
 * line. The new texts live in a TEMP table `sites` that shadows the database's own for this
 * connection's queries (SQLite looks in temp first); the database is never written here (it is
 * open read-only): `syncspy symbolize` (cmd_symbolize.c) takes the same texts from
 * ss_lines_each and writes them into the database. libdw.so.1 is dlopen()ed: without it, without debug information, or when the
 * file changed since the run, a site keeps its "symbol+0xoff (module)" text.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <sqlite3.h>

#include "lines.h"

static struct {
	Dwfl *(*begin)(const Dwfl_Callbacks *);
	void (*end)(Dwfl *);
	void (*report_begin)(Dwfl *);
	int (*report_end)(Dwfl *, int (*)(Dwfl_Module *, void *, const char *, Dwarf_Addr, void *),
			  void *);
	Dwfl_Module *(*report_elf)(Dwfl *, const char *, const char *, int, GElf_Addr, bool);
	const char *(*module_info)(Dwfl_Module *, void ***, Dwarf_Addr *, Dwarf_Addr *,
				   Dwarf_Addr *, Dwarf_Addr *, const char **, const char **);
	int (*module_build_id)(Dwfl_Module *, const unsigned char **, GElf_Addr *);
	Dwfl_Line *(*module_getsrc)(Dwfl_Module *, Dwarf_Addr);
	const char *(*lineinfo)(Dwfl_Line *, Dwarf_Addr *, int *, int *, Dwarf_Word *,
				Dwarf_Word *);
	const char *(*module_addrname)(Dwfl_Module *, GElf_Addr);
	int (*module_getsymtab)(Dwfl_Module *);
	const char *(*module_getsym)(Dwfl_Module *, int, GElf_Sym *, GElf_Word *);
	const char *(*line_comp_dir)(Dwfl_Line *);
	Dwarf_Die *(*module_addrdie)(Dwfl_Module *, Dwarf_Addr, Dwarf_Addr *);
	int (*getscopes)(Dwarf_Die *, Dwarf_Addr, Dwarf_Die **);
	int (*getscopes_die)(Dwarf_Die *, Dwarf_Die **);
	int (*tag)(Dwarf_Die *);
	const char *(*diename)(Dwarf_Die *);
	Dwarf_Attribute *(*attr_integrate)(Dwarf_Die *, unsigned int, Dwarf_Attribute *);
	int (*formudata)(Dwarf_Attribute *, Dwarf_Word *);
	Dwarf_Die *(*diecu)(Dwarf_Die *, Dwarf_Die *, uint8_t *, uint8_t *);
	int (*getsrcfiles)(Dwarf_Die *, Dwarf_Files **, size_t *);
	const char *(*filesrc)(Dwarf_Files *, size_t, Dwarf_Word *, Dwarf_Word *);
	int (*find_debuginfo)(Dwfl_Module *, void **, const char *, Dwarf_Addr, const char *,
			      const char *, GElf_Word, char **);
	int (*section_address)(Dwfl_Module *, void **, const char *, Dwarf_Addr, const char *,
			       GElf_Word, const GElf_Shdr *, Dwarf_Addr *);
	char *(*demangle)(const char *, char *, size_t *, int *); /* libstdc++'s, if any */
	int usable;
	/* the same for every Dwfl, outliving them; debuginfo_path NULL: libdwfl's default
	 * places for separate debug information (.debug, /usr/lib/debug) */
	Dwfl_Callbacks callbacks;
	char *debuginfo_path;
} dw;

/* libstdc++'s __cxa_demangle, loaded once (libdw or not); NULL without libstdc++. */
typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
static demangle_fn cxa_demangle;

static void load_demangler_once(void)
{
	void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
	if (cxx)
		*(void **)&cxa_demangle = dlsym(cxx, "__cxa_demangle");
}

static demangle_fn demangler(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, load_demangler_once);
	return cxa_demangle;
}

char *ss_demangle(const char *symbol)
{
	demangle_fn demangle = demangler();
	int status = -1;
	if (!symbol || !demangle || strncmp(symbol, "_Z", 2) != 0)
		return NULL;
	char *readable = demangle(symbol, NULL, NULL, &status);
	if (status != 0) {
		free(readable);
		return NULL;
	}
	return readable;
}

/* SQL ss_demangle(x): the demangled name of a C++ symbol, else x unchanged. */
static void sql_demangle(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	(void)argc;
	char *readable = sqlite3_value_type(argv[0]) == SQLITE_TEXT
			     ? ss_demangle((const char *)sqlite3_value_text(argv[0]))
			     : NULL;
	if (readable)
		sqlite3_result_text(ctx, readable, -1, free);
	else
		sqlite3_result_value(ctx, argv[0]);
}

int ss_demangle_attach(sqlite3 *db)
{
	return sqlite3_create_function(db, "ss_demangle", 1,
				       SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL,
				       sql_demangle, NULL, NULL);
}

static void load_libdw_once(void)
{
	void *library = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!library)
		return;
#define FIND(field, name) *(void **)&dw.field = dlsym(library, name)
	FIND(begin, "dwfl_begin");
	FIND(end, "dwfl_end");
	FIND(report_begin, "dwfl_report_begin");
	FIND(report_end, "dwfl_report_end");
	FIND(report_elf, "dwfl_report_elf");
	FIND(module_info, "dwfl_module_info");
	FIND(module_build_id, "dwfl_module_build_id");
	FIND(module_getsrc, "dwfl_module_getsrc");
	FIND(lineinfo, "dwfl_lineinfo");
	FIND(module_addrname, "dwfl_module_addrname");
	FIND(module_getsymtab, "dwfl_module_getsymtab");
	FIND(module_getsym, "dwfl_module_getsym");
	FIND(line_comp_dir, "dwfl_line_comp_dir");
	FIND(module_addrdie, "dwfl_module_addrdie");
	FIND(getscopes, "dwarf_getscopes");
	FIND(getscopes_die, "dwarf_getscopes_die");
	FIND(tag, "dwarf_tag");
	FIND(diename, "dwarf_diename");
	FIND(attr_integrate, "dwarf_attr_integrate");
	FIND(formudata, "dwarf_formudata");
	FIND(diecu, "dwarf_diecu");
	FIND(getsrcfiles, "dwarf_getsrcfiles");
	FIND(filesrc, "dwarf_filesrc");
	FIND(find_debuginfo, "dwfl_standard_find_debuginfo");
	FIND(section_address, "dwfl_offline_section_address");
#undef FIND
	dw.usable = dw.begin && dw.end && dw.report_begin && dw.report_end && dw.report_elf &&
		    dw.module_info && dw.module_build_id && dw.module_getsrc && dw.lineinfo &&
		    dw.module_addrname && dw.module_getsymtab && dw.module_getsym &&
		    dw.line_comp_dir && dw.module_addrdie && dw.getscopes && dw.getscopes_die && dw.tag && dw.diename &&
		    dw.attr_integrate && dw.formudata && dw.diecu && dw.getsrcfiles && dw.filesrc &&
		    dw.find_debuginfo && dw.section_address;
	dw.callbacks = (Dwfl_Callbacks){.find_debuginfo = dw.find_debuginfo,
					.section_address = dw.section_address,
					.debuginfo_path = &dw.debuginfo_path};
	dw.demangle = demangler();
}

static void load_libdw(void) /* report jobs run on several threads */
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, load_libdw_once);
}

/* One module of the recording, opened with its debug information; NULL when it is not the
 * file that ran (missing, or another build id). */
static Dwfl *open_module(const char *file, const char *build_id, Dwfl_Module **out)
{
	Dwfl *dwfl = dw.begin(&dw.callbacks);
	if (!dwfl)
		return NULL;
	dw.report_begin(dwfl);
	/* base 0: addresses are the file's own virtual addresses */
	Dwfl_Module *mod = dw.report_elf(dwfl, file, file, -1, 0, false);
	dw.report_end(dwfl, NULL, NULL);
	const unsigned char *bits = NULL;
	GElf_Addr vaddr;
	int n = mod ? dw.module_build_id(mod, &bits, &vaddr) : -1;
	char hex[2 * 64 + 1] = "";
	for (int i = 0; n > 0 && i < n && i < 64; i++)
		snprintf(hex + 2 * i, 3, "%02x", bits[i]);
	if (!mod || !build_id || strcmp(hex, build_id) != 0) {
		dw.end(dwfl);
		return NULL;
	}
	*out = mod;
	return dwfl;
}

/* Code the program did not write, though it is compiled into the program: the CUDA toolkit's
 * headers (inline helpers of cuda_runtime.h, crt/device_functions.h) and the host stubs nvcc
 * generates for `kernel<<<...>>>` (FILE.cudafe1.stub.c). */
static int toolkit_file(const char *file)
{
	return (strstr(file, "/include/") && strstr(file, "cuda")) || strstr(file, ".cudafe1.");
}

/* Whether FUNCTION (a DWARF name: "count_live") is a kernel's host-side function: `k<<<...>>>`
 * calls the host function k, which nvcc generates to call its stub "__device_stub_" + k's
 * mangled name (_Z29__device_stub__Z10count_livePiPi; an extern "C" kernel's:
 * __device_stub__count_live). Optimized host code inlines k into the launching function, and
 * the innermost line of the launch is then k's declaration, the __global__ line: the launch's
 * line is where k was inlined (attribution.md, "The site of an enqueue"). */
static int kernel_host_function(Dwfl_Module *mod, const char *function)
{
	size_t len = function ? strlen(function) : 0;
	char counted[300];
	int nsyms = len && len < 256 ? dw.module_getsymtab(mod) : -1;

	if (nsyms <= 0)
		return 0;
	snprintf(counted, sizeof counted, "%zu%s", len, function); /* as mangled: 10count_live */
	for (int i = 0; i < nsyms; i++) {
		GElf_Sym sym;
		const char *name = dw.module_getsym(mod, i, &sym, NULL);
		const char *stub = name ? strstr(name, "__device_stub__") : NULL;

		if (!stub)
			continue;
		stub += strlen("__device_stub__");
		if (stub[0] == 'Z' && strstr(stub, counted))
			return 1;
		if (!strncmp(stub, function, len) && (stub[len] == '\0' || stub[len] == '.'))
			return 1;
	}
	return 0;
}

/* Where an inlined subroutine was inlined: its DW_AT_call_file and DW_AT_call_line. */
static int call_site(Dwarf_Die *inlined, const char **file, int *line)
{
	Dwarf_Attribute attribute;
	Dwarf_Word file_index = 0, line_number = 0;
	Dwarf_Die cu;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	if (!dw.attr_integrate(inlined, DW_AT_call_file, &attribute) ||
	    dw.formudata(&attribute, &file_index) != 0 ||
	    !dw.attr_integrate(inlined, DW_AT_call_line, &attribute) ||
	    dw.formudata(&attribute, &line_number) != 0 || !dw.diecu(inlined, &cu, NULL, NULL) ||
	    dw.getsrcfiles(&cu, &files, &nfiles) != 0 || file_index >= nfiles)
		return 0;
	const char *name = dw.filesrc(files, file_index, NULL, NULL);
	if (!name || line_number == 0)
		return 0;
	*file = name;
	*line = (int)line_number;
	return 1;
}

/* "FILE:LINE in FUNCTION" for a return address at module_offset, or NULL: the line of the
 * program's own code, out of any toolkit code inlined into it (toolkit_file); NULL when the
 * address lies in toolkit code that was not inlined into the program's (an nvcc launch stub:
 * the site keeps its module+offset text, docs/attribution.md). */
static char *source_line(Dwfl_Module *mod, long long module_offset)
{
	Dwarf_Addr low = 0;
	dw.module_info(mod, NULL, &low, NULL, NULL, NULL, NULL, NULL);
	/* The module's load address is its first page (dladdr's dli_fbase); a return address
	 * points after the call: the call is at the byte before it. */
	Dwarf_Addr address = (low & ~(Dwarf_Addr)0xfff) + (Dwarf_Addr)module_offset - 1;
	Dwfl_Line *line = dw.module_getsrc(mod, address);
	int lineno = 0;
	const char *file = line ? dw.lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
	if (!file || lineno <= 0)
		return NULL;
	/* The function the line is in: the innermost function scope of the address (an inlined
	 * function's own name), else the ELF symbol, demangled where libstdc++ can. Toolkit code
	 * inlined into the program's is left for the line that called it. */
	const char *function = NULL;
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dw.module_addrdie(mod, address, &bias), *scopes = NULL;
	int nscopes = cu ? dw.getscopes(cu, address - bias, &scopes) : 0;
	/* By address, the scopes of an inlined function continue with its abstract definition's
	 * (its parents where it was declared), and an inlined chain can stop after its innermost
	 * link (thrust's count_if: SyncStream, then the unit). The concrete tree around the
	 * innermost instance has every link, each with its call site, up to the function it was
	 * all inlined into (as eu-addr2line -i walks it). The innermost scopes may be lexical
	 * blocks inside the innermost inlined function (thrust::cuda_cub::malloc's, whose chain
	 * by address then stops at the unit): the chain starts at that function. */
	int innermost = 0;
	while (innermost < nscopes && dw.tag(&scopes[innermost]) == DW_TAG_lexical_block)
		innermost++;
	if (innermost < nscopes && dw.tag(&scopes[innermost]) == DW_TAG_inlined_subroutine) {
		Dwarf_Die *chain = NULL;
		int nchain = dw.getscopes_die(&scopes[innermost], &chain);

		if (nchain > 0) {
			free(scopes);
			scopes = chain;
			nscopes = nchain;
		} else
			free(chain);
	}
	for (int i = 0; i < nscopes && !function; i++) {
		int tag = dw.tag(&scopes[i]);
		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		if (tag == DW_TAG_inlined_subroutine &&
		    (toolkit_file(file) || kernel_host_function(mod, dw.diename(&scopes[i]))) &&
		    call_site(&scopes[i], &file, &lineno))
			continue; /* now at the line that called the toolkit's code or the kernel */
		function = dw.diename(&scopes[i]);
	}
	if (toolkit_file(file)) {
		free(scopes);
		return NULL;
	}
	char *readable = NULL;
	if (!function) {
		const char *symbol = dw.module_addrname(mod, address);
		int status = -1;
		readable = symbol && dw.demangle ? dw.demangle(symbol, NULL, NULL, &status) : NULL;
		function = status == 0 && readable ? readable : symbol ? symbol : "?";
	}
	/* a relative file name is relative to the compilation directory (call_site's names come
	 * from the same unit's file table) */
	const char *dir = file[0] != '/' ? dw.line_comp_dir(line) : NULL;
	size_t size = (dir ? strlen(dir) + 1 : 0) + strlen(file) + strlen(function) + 32;
	char *text = malloc(size);
	if (text)
		snprintf(text, size, "%s%s%s:%d in %s", dir ? dir : "", dir ? "/" : "", file,
			 lineno, function);
	free(scopes);
	free(readable);
	return text;
}

#define SITES_SQL                                                                                  \
	"SELECT s.id, s.module_offset, m.file, m.build_id FROM main.sites s"                       \
	" JOIN main.modules m ON m.path = s.module WHERE s.address != 0 AND m.file IS NOT NULL"    \
	" AND m.build_id IS NOT NULL ORDER BY m.file"

int ss_lines_usable(void)
{
	load_libdw();
	return dw.usable;
}

int ss_lines_each(sqlite3 *db, int (*found)(void *context, long long site_id, char *text),
		  void *context)
{
	sqlite3_stmt *sites = NULL;
	int changed = 0;
	load_libdw();
	if (!dw.usable || sqlite3_prepare_v2(db, SITES_SQL, -1, &sites, NULL) != SQLITE_OK) {
		sqlite3_finalize(sites); /* no modules table: a recording made before it existed */
		return 0;
	}
	Dwfl *dwfl = NULL;
	Dwfl_Module *mod = NULL;
	char *current = NULL;
	while (sqlite3_step(sites) == SQLITE_ROW) {
		const char *file = (const char *)sqlite3_column_text(sites, 2);
		const char *build_id = (const char *)sqlite3_column_text(sites, 3);
		if (!current || strcmp(current, file) != 0) {
			if (dwfl)
				dw.end(dwfl);
			free(current);
			current = strdup(file);
			dwfl = open_module(file, build_id, &mod);
		}
		char *text = dwfl ? source_line(mod, sqlite3_column_int64(sites, 1)) : NULL;
		if (!text)
			continue;
		int rc = found(context, sqlite3_column_int64(sites, 0), text);
		if (rc < 0)
			break;
		changed += rc;
	}
	if (dwfl)
		dw.end(dwfl);
	free(current);
	sqlite3_finalize(sites);
	return changed;
}

/* ss_lines_attach's callback: the TEMP shadow made on the first line found, then updated. */
struct attach {
	sqlite3 *db;
	sqlite3_stmt *update;
};

static int attach_one(void *context, long long site_id, char *text)
{
	struct attach *a = context;
	if (!a->update &&
	    (sqlite3_exec(a->db, SS_LINES_SHADOW_SQL, NULL, NULL, NULL) != SQLITE_OK ||
	     sqlite3_prepare_v2(a->db, "UPDATE temp.sites SET text = ? WHERE id = ?", -1,
				&a->update, NULL) != SQLITE_OK)) {
		free(text);
		return -1;
	}
	sqlite3_bind_text(a->update, 1, text, -1, free);
	sqlite3_bind_int64(a->update, 2, site_id);
	int done = sqlite3_step(a->update) == SQLITE_DONE;
	sqlite3_reset(a->update);
	return done;
}

int ss_lines_attach(sqlite3 *db)
{
	struct attach a = {db, NULL};
	int changed = ss_lines_each(db, attach_one, &a);
	sqlite3_finalize(a.update);
	return changed;
}
