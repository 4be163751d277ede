/*
 * tests/fuzz/replay.c: the fuzz targets' driver where libFuzzer is missing (no clang): runs
 * LLVMFuzzerTestOneInput once on each file named, or on each file of each directory named (the
 * committed corpus, tests/fuzz/corpus), in name order. A crash or an abort is the test's
 * failure, as under libFuzzer; it prints the file it was on first.
 */
#undef main /* the report/ sources are built with -Dmain=syncspy_main; this is the program's */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t size = 0, cap = 0, n;

	if (!f) {
		perror(path);
		return 1;
	}
	do {
		if (size == cap) {
			uint8_t *grown = realloc(buf, cap = cap ? 2 * cap : 65536);
			if (!grown) {
				fprintf(stderr, "%s: out of memory\n", path);
				return 1;
			}
			buf = grown;
		}
		n = fread(buf + size, 1, cap - size, f);
		size += n;
	} while (n > 0);
	fclose(f);
	fprintf(stderr, "replay: %s (%zu bytes)\n", path, size);
	LLVMFuzzerTestOneInput(buf, size);
	free(buf);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
	int failed = 0, ran = 0;

	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		struct dirent **names;
		int n;

		if (stat(argv[i], &st) != 0 || !S_ISDIR(st.st_mode)) {
			failed |= run_file(argv[i]);
			ran++;
			continue;
		}
		n = scandir(argv[i], &names, NULL, by_name);
		if (n < 0) {
			perror(argv[i]);
			return 1;
		}
		for (int k = 0; k < n; k++) {
			char path[4096];

			snprintf(path, sizeof(path), "%s/%s", argv[i], names[k]->d_name);
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
				failed |= run_file(path);
				ran++;
			}
			free(names[k]);
		}
		free(names);
	}
	fprintf(stderr, "replay: %d inputs\n", ran);
	return failed || ran == 0;
}
