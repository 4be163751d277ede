/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/dynsyms_check.c: interpose/dynsyms.c (compiled in here) against dladdr (t043).
 * For every module loaded (the program, libc, the loader, libstdc++ and SQLite when they load),
 * at each dynamic symbol's first byte, second byte, middle, last byte and the byte past it, and
 * at 4096 addresses spread over each executable segment, ss_dladdr must say what dladdr says:
 * the module's file and base, the symbol's name and address (SITES-2). Prints the addresses
 * compared and exits 1 at the first difference.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "../../interpose/dynsyms.c"

unsigned long long ss_module_unloads(void)
{
	return 0; /* nothing is unloaded here */
}

static unsigned long compared, failed;

static void compare(uintptr_t addr)
{
	Dl_info want, got;
	int w = dladdr((void *)addr, &want), g = ss_dladdr((void *)addr, &got);
	compared++;
	if (w != g || (w && ((want.dli_fname == NULL) != (got.dli_fname == NULL) ||
			     (want.dli_fname && strcmp(want.dli_fname, got.dli_fname)) ||
			     want.dli_fbase != got.dli_fbase ||
			     (want.dli_sname == NULL) != (got.dli_sname == NULL) ||
			     (want.dli_sname && strcmp(want.dli_sname, got.dli_sname)) ||
			     want.dli_saddr != got.dli_saddr))) {
		if (failed++ < 10)
			fprintf(stderr, "%#lx: dladdr %d %s %p %s %p, ss_dladdr %d %s %p %s %p\n",
				(unsigned long)addr, w, w ? want.dli_fname : "-",
				w ? want.dli_fbase : NULL,
				w && want.dli_sname ? want.dli_sname : "-",
				w ? want.dli_saddr : NULL, g, g ? got.dli_fname : "-",
				g ? got.dli_fbase : NULL, g && got.dli_sname ? got.dli_sname : "-",
				g ? got.dli_saddr : NULL);
	}
}

static int each_module(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		for (uintptr_t k = 0; k < 4096; k++)
			compare(start + k * ph->p_memsz / 4096);
		/* the symbols: those of the table ss_dladdr read for this module */
		struct dl_find_object found;
		if (_dl_find_object((void *)start, &found) != 0)
			continue;
		const struct module_table *t =
		    table_of(found.dlfo_link_map, (uintptr_t)found.dlfo_map_start,
			     (uintptr_t)found.dlfo_map_end);
		for (size_t s = 0; t && s < t->count; s++) {
			uintptr_t v = t->syms[s].value, n = t->syms[s].size;
			compare(v);
			compare(v + 1);
			compare(v + n / 2);
			if (n) {
				compare(v + n - 1);
				compare(v + n);
			}
		}
	}
	return 0;
}

int main(void)
{
	dlopen("libstdc++.so.6", RTLD_NOW);
	dlopen("libsqlite3.so.0", RTLD_NOW);
	dl_iterate_phdr(each_module, NULL);
	printf("dynsyms: %lu addresses compared, %lu differ, %zu modules read\n", compared, failed,
	       ntables);
	return failed ? 1 : 0;
}
