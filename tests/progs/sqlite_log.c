/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/sqlite_log.c: a program with its own SQLite and its own SQLITE_CONFIG_LOG
 * callback, under the shim (t855, issue 18 item 5). It writes every message its callback
 * receives to the file named by its one argument, makes CUDA calls that start the shim, and
 * runs one bad statement of its own, so that the file holds at least its own message. The
 * shim's SQLite must stay invisible: none of syncspy's statements may reach the callback.
 */
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "progs.h"

static int log_fd = -1;

static void on_log(void *arg, int code, const char *message)
{
	(void)arg;
	char line[8192];
	int n = snprintf(line, sizeof(line), "log %d: %s\n", code, message);
	if (n > 0 && log_fd >= 0 && write(log_fd, line, (size_t)n) < 0)
		return;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: sqlite_log LOGFILE\n");
		return 2;
	}
	log_fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (log_fd < 0 || sqlite3_config(SQLITE_CONFIG_LOG, on_log, NULL) != SQLITE_OK)
		return 3;
	sqlite3 *db;
	if (sqlite3_open(":memory:", &db) != SQLITE_OK)
		return 4;
	for (int i = 0; i < 10; i++)
		CHECK(cudaDeviceSynchronize());
	sqlite3_exec(db, "SELECT * FROM no_such_table_of_the_program", NULL, NULL, NULL);
	sqlite3_close(db);
	printf("sqlite_log: done\n");
	return 0; /* the shim writes its last rows after main returns: the log stays open */
}
