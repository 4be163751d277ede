/* SPDX-License-Identifier: MIT */
/*
 * bench/dynsyms_cost.c: naming return addresses in a large library, dladdr against
 * interpose/dynsyms.c's sorted tables (SITES-2), in-process. LIBRARY is dlopened; N addresses
 * spread over its executable segments are named by each, alternately, ROUNDS times; the first
 * ss_dladdr round includes reading and sorting the table (reported apart).
 *
 *   dynsyms_cost LIBRARY [N [ROUNDS]]
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../interpose/dynsyms.c"

unsigned long long ss_module_unloads(void)
{
	return 0;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uintptr_t text_start, text_size;

static int find_text(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if (strcmp(info->dlpi_name, (const char *)data) != 0)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X)) {
			text_start = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
			text_size = info->dlpi_phdr[i].p_memsz;
			return 1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int n = argc > 2 ? atoi(argv[2]) : 200, rounds = argc > 3 ? atoi(argv[3]) : 6;
	void *handle = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	struct link_map *map;
	if (!handle || dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0) {
		fprintf(stderr, "dynsyms_cost: %s\n", dlerror());
		return 2;
	}
	dl_iterate_phdr(find_text, map->l_name);
	if (!text_size)
		return 2;
	Dl_info info;
	unsigned long differ = 0;
	printf("library %s, %d addresses a round\n", map->l_name, n);
	for (int r = 0; r < rounds; r++) {
		double t0 = now();
		for (int i = 0; i < n; i++)
			dladdr((void *)(text_start + (uintptr_t)i * (text_size / n)), &info);
		double t1 = now();
		for (int i = 0; i < n; i++) {
			Dl_info mine;
			ss_dladdr((void *)(text_start + (uintptr_t)i * (text_size / n)), &mine);
			dladdr((void *)(text_start + (uintptr_t)i * (text_size / n)), &info);
			differ += (mine.dli_sname == NULL) != (info.dli_sname == NULL) ||
				  (mine.dli_sname && strcmp(mine.dli_sname, info.dli_sname));
		}
		double t2 = now();
		for (int i = 0; i < n; i++)
			ss_dladdr((void *)(text_start + (uintptr_t)i * (text_size / n)), &info);
		double t3 = now();
		printf("round %d: dladdr %.2f us/address, ss_dladdr %.3f us/address\n", r + 1,
		       (t1 - t0) / n * 1e6, (t3 - t2) / n * 1e6);
		if (r == 0) {
			ss_dynsyms_forget();
			double b0 = now();
			ss_dladdr((void *)text_start, &info);
			printf("table: %zu symbols read and sorted in %.2f ms\n", tables[0].count,
			       (now() - b0) * 1e3);
		}
	}
	printf("names differing from dladdr: %lu\n", differ);
	return differ ? 1 : 0;
}
