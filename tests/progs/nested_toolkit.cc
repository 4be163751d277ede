// SPDX-License-Identifier: MIT
// tests/progs/nested_toolkit.cc: a sync reached through a header-only library's templates
// inlined several levels deep (include/fakecuda/nested_sync.h, as thrust::count_if reaches
// cub::SyncStream), built -O2 -g: its site must be this file's line (report/lines.c follows the
// inlined chain from the innermost instance, not by address alone); and an allocation reached
// the same way whose innermost scopes are lexical blocks (@site nested-alloc).
#include <cstdio>

#include "include/fakecuda/nested_sync.h"

int main()
{
	long total = 0;
	for (int i = 0; i < 30; i++) {
		total += fakecuda::count_if((cudaStream_t)0, i); // @site nested-count
		void *scratch = fakecuda::temporary_buffer(4096 + i); // @site nested-alloc
		cudaFree(scratch);
	}
	std::printf("done %ld\n", total);
	return 0;
}
