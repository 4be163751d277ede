/*
 * interpose/dynsyms.c: what dladdr says of an address (its module, the dynamic symbol holding
 * it), from a sorted copy of each module's dynamic symbol table (SITES-2).
 *
 * dladdr finds the symbol by walking the module's whole dynamic symbol table at every call:
 * 0.3 ms an address in a libtorch_cpu.so of 34,000 symbols on the build machine, and torch
 * 2.11's libraries hold more. The writer names every new native frame so (sites.c), and at
 * nice -10 it did so ahead of the program's own threads: 230-510 ms of writer CPU in the fifth
 * corpus set's PyTorch traces (meta.writer_cpu_ns), where writing their rows takes a few ms.
 * Here a module's table is read once, from the loader's own copy in memory (its dynamic
 * section's DT_SYMTAB, DT_STRTAB, DT_STRSZ and DT_GNU_HASH or DT_HASH), sorted by address, and
 * searched in O(log n). The answer is dladdr's (glibc's _dl_addr): among the symbols the hash
 * table lists (all of DT_HASH's; DT_GNU_HASH's from its first hashed index), defined or with a
 * value, not SHN_ABS, not TLS, whose name lies in the string table, the one holding the address
 * ([value, value + size), or exactly at it for a symbol of size 0) with the highest value, the
 * first in table order among equals. tests/progs/dynsyms_check.c compares the two on every
 * symbol of the modules it has loaded.
 *
 * Anything this cannot read the way it expects (no _dl_find_object, a table outside the
 * module's mapping, no hash table) is left to dladdr. Tables are kept until a module is unloaded
 * (the loader's count: ss_module_unloads), then all are dropped. One caller at a time: the
 * writer thread.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dynsyms.h"

/* glibc 2.35's module of an address (weak: without it, dladdr) */
extern int _dl_find_object(void *address, struct dl_find_object *result) __attribute__((weak));

struct dynsym {
	uintptr_t value, size; /* value: absolute */
	const char *name;
	uint32_t index;	    /* in the table: the first among equal values wins */
	unsigned sized : 1; /* a symbol of size 0 (or undefined) holds only its own address */
};

struct module_table {
	const struct link_map *map;
	struct dynsym *syms; /* sorted by value, then index; NULL: read by dladdr */
	size_t count;
};

static struct module_table *tables;
static size_t ntables, tables_capacity;
static unsigned long long tables_unloads;

void ss_dynsyms_forget(void)
{
	for (size_t i = 0; i < ntables; i++)
		free(tables[i].syms);
	free(tables);
	tables = NULL;
	ntables = tables_capacity = 0;
}

/* A dynamic entry's address, as an address of the module: the loader relocates most of its
 * dynamic section in place, not all of them (a read-only one, the vDSO's): either way it must
 * lie in [start, end). 0 when it does not. */
static uintptr_t in_module(uintptr_t ptr, const struct link_map *map, uintptr_t start,
			   uintptr_t end)
{
	if (ptr >= start && ptr < end)
		return ptr;
	ptr += map->l_addr;
	return ptr >= start && ptr < end ? ptr : 0;
}

/* How many symbols DT_GNU_HASH's table covers, and its first hashed index. */
static size_t gnu_hash_count(const uint32_t *hash, uint32_t *first)
{
	uint32_t nbuckets = hash[0], symoffset = hash[1], bloom_size = hash[2];
	const uint32_t *buckets = (const uint32_t *)((const uint64_t *)(hash + 4) + bloom_size);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t last = 0;
	*first = symoffset;
	for (uint32_t b = 0; b < nbuckets; b++)
		if (buckets[b] > last)
			last = buckets[b];
	if (last < symoffset)
		return symoffset; /* no hashed symbol */
	while (!(chain[last - symoffset] & 1))
		last++;
	return (size_t)last + 1;
}

static int by_value(const void *a, const void *b)
{
	const struct dynsym *x = a, *y = b;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

/* The sorted table of MAP (mapped at [start, end)); syms stays NULL when it cannot be read. */
static void read_table(struct module_table *t, uintptr_t start, uintptr_t end)
{
	const struct link_map *map = t->map;
	uintptr_t symtab = 0, strtab = 0, gnu_hash = 0, hash = 0;
	size_t strsz = 0, syment = sizeof(ElfW(Sym));
	for (const ElfW(Dyn) *d = map->l_ld; d && d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB:
			symtab = in_module(d->d_un.d_ptr, map, start, end);
			break;
		case DT_STRTAB:
			strtab = in_module(d->d_un.d_ptr, map, start, end);
			break;
		case DT_GNU_HASH:
			gnu_hash = in_module(d->d_un.d_ptr, map, start, end);
			break;
		case DT_HASH:
			hash = in_module(d->d_un.d_ptr, map, start, end);
			break;
		case DT_STRSZ:
			strsz = d->d_un.d_val;
			break;
		case DT_SYMENT:
			syment = d->d_un.d_val;
			break;
		}
	}
	if (!symtab || !strtab || syment != sizeof(ElfW(Sym)) || (!gnu_hash && !hash))
		return;
	uint32_t first = 0;
	size_t count = gnu_hash ? gnu_hash_count((const uint32_t *)gnu_hash, &first)
				: ((const uint32_t *)hash)[1];
	struct dynsym *syms = count > first ? malloc((count - first) * sizeof(*syms)) : NULL;
	size_t n = 0;
	if (!syms)
		return;
	for (size_t i = first; i < count; i++) {
		const ElfW(Sym) *s = (const ElfW(Sym) *)symtab + i;
		if ((s->st_shndx == SHN_UNDEF && s->st_value == 0) || s->st_shndx == SHN_ABS ||
		    ELF64_ST_TYPE(s->st_info) == STT_TLS || s->st_name >= strsz)
			continue;
		syms[n++] = (struct dynsym){.value = map->l_addr + s->st_value,
					    .size = s->st_size,
					    .name = (const char *)strtab + s->st_name,
					    .index = (uint32_t)i,
					    .sized = s->st_shndx != SHN_UNDEF && s->st_size != 0};
	}
	qsort(syms, n, sizeof(*syms), by_value);
	t->syms = syms;
	t->count = n;
}

static struct module_table *table_of(const struct link_map *map, uintptr_t start, uintptr_t end)
{
	for (size_t i = 0; i < ntables; i++)
		if (tables[i].map == map)
			return &tables[i];
	if (ntables == tables_capacity) {
		size_t capacity = tables_capacity ? tables_capacity * 2 : 64;
		struct module_table *grown = realloc(tables, capacity * sizeof(*grown));
		if (!grown)
			return NULL;
		tables = grown;
		tables_capacity = capacity;
	}
	struct module_table *t = &tables[ntables++];
	*t = (struct module_table){.map = map};
	read_table(t, start, end);
	return t;
}

/* The symbol of T holding ADDR (dladdr's choice), or NULL. */
static const struct dynsym *holding(const struct module_table *t, uintptr_t addr)
{
	size_t lo = 0, hi = t->count; /* the first symbol above addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->syms[mid].value <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct dynsym *best = NULL;
	/* Backwards from the highest value at or below addr: the first that holds it has the
	 * highest value; among equal values the table's first (sorted so) is kept. Functions do
	 * not nest: a few candidates back are enough. */
	for (size_t k = lo, seen = 0; k > 0 && seen < 64; k--, seen++) {
		const struct dynsym *s = &t->syms[k - 1];
		if (best && s->value < best->value)
			break;
		if (s->sized ? addr < s->value + s->size : addr == s->value)
			best = s;
	}
	return best;
}

int ss_dladdr(const void *address, Dl_info *info)
{
	struct dl_find_object found;
	uintptr_t addr = (uintptr_t)address;
	if (!_dl_find_object || _dl_find_object((void *)address, &found) != 0 ||
	    !found.dlfo_link_map)
		return dladdr(address, info);
	unsigned long long unloads = ss_module_unloads();
	if (unloads != tables_unloads) {
		ss_dynsyms_forget();
		tables_unloads = unloads;
	}
	const struct link_map *map = found.dlfo_link_map;
	struct module_table *t =
	    table_of(map, (uintptr_t)found.dlfo_map_start, (uintptr_t)found.dlfo_map_end);
	if (!t || !t->syms)
		return dladdr(address, info);
	const struct dynsym *s = holding(t, addr);
	info->dli_fname = map->l_name && *map->l_name ? map->l_name : program_invocation_name;
	info->dli_fbase = found.dlfo_map_start;
	info->dli_sname = s ? s->name : NULL;
	info->dli_saddr = s ? (void *)s->value : NULL;
	return 1;
}
