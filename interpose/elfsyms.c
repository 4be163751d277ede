/*
 * interpose/elfsyms.c: is a return address inside a CUDA runtime linked statically into a
 * program or library? nvcc links the runtime statically by default; its functions then live in
 * the user's own module, where the module-based rule for the user call site (sites.c,
 * ss_framework_module) cannot tell them apart. Their names can: the module's .symtab (kept unless
 * the module was stripped) names them cuda*, __cuda* or cudart::*; Thrust's and CUB's functions
 * instantiated there are counted with them (ELFSYMS-1).
 *
 * The writer thread calls this while symbolizing stacks, an application thread the first time
 * an enqueue comes along a new path (native.c); the cache is under a lock.
 * A stripped module, or one that cannot be read, has no such frames as far as this knows.
 */
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsyms.h"

struct runtime_range {
	uint64_t start, end; /* [start, end) of one runtime function, as in the file */
	int kind;	     /* SS_FRAME_RUNTIME or SS_FRAME_LIBRARY */
};

struct module_symbols {
	char *path;
	int relative; /* ET_DYN: symbol values are relative to the load base */
	struct runtime_range *ranges;
	size_t count;
};

static struct module_symbols *modules;
static size_t module_count;

/* The runtime's functions, and the host stubs nvcc generates for kernels (`__device_stub__`,
 * mangled or not: a <<<>>> launch passes through one, and its line is the caller's).
 * ELFSYMS-1: also the functions of the toolkit's header libraries that a program instantiates
 * in its own binary, Thrust's and CUB's (mangled _ZN6thrust..., _ZN3cub..., const members
 * _ZNK...): thrust::count_if's temporary allocation and cub::SyncStream are frames of their
 * own there, and the user's line is the one that called into the library (t226). */
static int runtime_name(const char *name)
{
	if (!strncmp(name, "cuda", 4) || !strncmp(name, "__cuda", 6) ||
	    strstr(name, "cudart") != NULL || strstr(name, "__device_stub__") != NULL)
		return SS_FRAME_RUNTIME;
	if (!strncmp(name, "_ZN6thrust", 10) || !strncmp(name, "_ZNK6thrust", 11) ||
	    !strncmp(name, "_ZN3cub", 7) || !strncmp(name, "_ZNK3cub", 8))
		return SS_FRAME_LIBRARY;
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct runtime_range *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

/* Reads the runtime functions of one ELF64 file's .symtab. */
static void load_module(struct module_symbols *m)
{
	int fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && m->path[0] != '/') /* the main program, named as it was started */
		fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return;
	if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
		close(fd);
		return;
	}
	size_t size = (size_t)st.st_size;
	const unsigned char *file = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (file == MAP_FAILED)
		return;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)file;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shoff == 0 || eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size)
		goto done;
	m->relative = eh->e_type == ET_DYN;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(file + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
			continue;
		const Elf64_Shdr *strtab = &sh[sh[i].sh_link];
		if (sh[i].sh_offset + sh[i].sh_size > size ||
		    strtab->sh_offset + strtab->sh_size > size)
			continue;
		const Elf64_Sym *syms = (const Elf64_Sym *)(file + sh[i].sh_offset);
		const char *names = (const char *)(file + strtab->sh_offset);
		size_t n = sh[i].sh_size / sizeof(Elf64_Sym);
		/* the kernels' host-side functions: `k<<<...>>>(args)` calls k(args), which only
		 * calls its stub; unoptimized (nvcc's host default) it is a frame of its own, and
		 * the launch's line is its caller's. nvcc names the stub "__device_stub_" + k's
		 * mangled name, itself mangled as a C++ function: k = _Z10count_livePi has the stub
		 * _Z29__device_stub__Z10count_livePiPi (an extern "C" kernel's: __device_stub__k).
		 */
		struct kernel_name {
			const char *text;
			size_t len;
		} *kernels = NULL;
		size_t nkernels = 0;
		for (size_t k = 0; k < n; k++) {
			const char *name = names + syms[k].st_name, *id = name;
			size_t len;
			struct kernel_name *grown;

			if (ELF64_ST_TYPE(syms[k].st_info) != STT_FUNC ||
			    syms[k].st_name >= strtab->sh_size)
				continue;
			if (name[0] == '_' && name[1] == 'Z' && name[2] >= '0' && name[2] <= '9') {
				char *end;

				len = strtoul(name + 2, &end, 10); /* _Z<len><identifier><params> */
				id = end;
				if (strnlen(id, len) < len)
					continue;
			} else {
				len = strlen(name);
			}
			if (len <= 14 || strncmp(id, "__device_stub_", 14) != 0)
				continue;
			grown = realloc(kernels, (nkernels + 1) * sizeof(*grown));
			if (!grown)
				break;
			kernels = grown;
			kernels[nkernels++] = (struct kernel_name){id + 14, len - 14};
		}
		for (size_t k = 0; k < n; k++) {
			const char *name = names + syms[k].st_name;
			int kernel_host = 0;

			if (ELF64_ST_TYPE(syms[k].st_info) != STT_FUNC || syms[k].st_value == 0 ||
			    syms[k].st_name >= strtab->sh_size)
				continue;
			for (size_t j = 0; j < nkernels && !kernel_host; j++) {
				const struct kernel_name *kn = &kernels[j];

				/* "_Z10count_livePi" for "__device_stub__Z10count_livePi"; "k" or
				 * "_k" for an extern "C" "__device_stub__k" */
				kernel_host = (strlen(name) == kn->len &&
					       !strncmp(name, kn->text, kn->len)) ||
					      (kn->text[0] == '_' && strlen(name) == kn->len - 1 &&
					       !strncmp(name, kn->text + 1, kn->len - 1));
			}
			int kind = kernel_host ? SS_FRAME_RUNTIME : runtime_name(name);
			if (!kind)
				continue;
			struct runtime_range *grown =
			    realloc(m->ranges, (m->count + 1) * sizeof(*grown));
			if (!grown) {
				free(kernels);
				goto done;
			}
			m->ranges = grown;
			uint64_t start = syms[k].st_value;
			m->ranges[m->count++] = (struct runtime_range){
			    start, start + (syms[k].st_size ? syms[k].st_size : 1), kind};
		}
		free(kernels);
	}
	if (m->count)
		qsort(m->ranges, m->count, sizeof(*m->ranges), by_start);
done:
	munmap((void *)file, size);
}

static int runtime_frame(const char *module_path, uintptr_t module_base, uintptr_t ip)
{
	struct module_symbols *m = NULL;
	for (size_t i = 0; i < module_count && !m; i++)
		if (!strcmp(modules[i].path, module_path))
			m = &modules[i];
	if (!m) {
		struct module_symbols *grown =
		    realloc(modules, (module_count + 1) * sizeof(*grown));
		if (!grown)
			return 0;
		modules = grown;
		m = &modules[module_count++];
		*m = (struct module_symbols){strdup(module_path), 0, NULL, 0};
		if (m->path)
			load_module(m);
	}
	uint64_t address = m->relative ? ip - module_base : ip;
	size_t lo = 0, hi = m->count;
	while (lo < hi) { /* the last range starting at or before address */
		size_t mid = lo + (hi - lo) / 2;
		if (m->ranges[mid].start <= address)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && address < m->ranges[lo - 1].end ? m->ranges[lo - 1].kind : 0;
}

/* The writer (symbolizing stacks) and an application thread (learning the path of an enqueue
 * through a static runtime, native.c, once per path) both ask: the cache is shared under a
 * lock that neither holds long, once a module's symbols are read. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

int ss_static_runtime_frame(const char *module_path, uintptr_t module_base, uintptr_t ip)
{
	pthread_mutex_lock(&lock);
	int found = runtime_frame(module_path, module_base, ip);
	pthread_mutex_unlock(&lock);
	return found;
}

/* A fork child has only the forking thread: a lock another thread held stays held there. */
void ss_elfsyms_fork_child(void)
{
	pthread_mutex_init(&lock, NULL);
}
