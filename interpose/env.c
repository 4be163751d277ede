/*
 * interpose/env.c: reads every SYNCSPY_* variable once, from the one table in
 * include/syncspy/env.h, into ss_config. Bad values fall back to the default with one warning:
 * a profiler must never stop the program it profiles.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "shim.h"

struct ss_config ss_config;
int ss_aggregate_mode;

static long parse_int(const char *name, const char *value, const char *def)
{
	char *end;
	errno = 0;
	long v = strtol(value, &end, 10);
	if (errno || end == value || *end || v < 0) {
		fprintf(stderr, "syncspy: ignoring %s=%s (not a non-negative integer), using %s\n",
			name, value, def);
		v = strtol(def, NULL, 10);
	}
	return v;
}

static int parse_bool(const char *name, const char *value, const char *def)
{
	if (!strcmp(value, "1") || !strcasecmp(value, "yes") || !strcasecmp(value, "true"))
		return 1;
	if (!strcmp(value, "0") || !strcasecmp(value, "no") || !strcasecmp(value, "false") ||
	    !*value)
		return 0;
	fprintf(stderr, "syncspy: ignoring %s=%s (not 0 or 1), using %s\n", name, value, def);
	return !strcmp(def, "1");
}

#define SS_PARSE_INT(name, value, def)	parse_int(name, value, def)
#define SS_PARSE_BOOL(name, value, def) parse_bool(name, value, def)
#define SS_PARSE_STR(name, value, def)	strdup(value) /* the environment may change later */

void ss_config_load(void)
{
	const char *v;
#define SS_LOAD(name, type, def, doc)                                                              \
	v = getenv(#name);                                                                         \
	ss_config.name = SS_PARSE_##type(#name, (v ? v : def), def);
	SS_ENV_VARS(SS_LOAD)
#undef SS_LOAD
	/* docs/architecture.md, data flow 4: a commit at least every second. */
	if (ss_config.SYNCSPY_COMMIT_MS == 0 || ss_config.SYNCSPY_COMMIT_MS > 1000)
		ss_config.SYNCSPY_COMMIT_MS = 1000;
	if (ss_config.SYNCSPY_DRAIN_MS == 0)
		ss_config.SYNCSPY_DRAIN_MS = 1;
	if (ss_config.SYNCSPY_DRAIN_MS > ss_config.SYNCSPY_COMMIT_MS)
		ss_config.SYNCSPY_DRAIN_MS = ss_config.SYNCSPY_COMMIT_MS;
	if (ss_config.SYNCSPY_BUFFER_MB == 0)
		ss_config.SYNCSPY_BUFFER_MB = 1;
	/* SHIM-7: the mode is the writer's alone (the wrappers record alike in both) */
	ss_aggregate_mode = strcmp(ss_config.SYNCSPY_MODE, "aggregate") == 0;
	if (!ss_aggregate_mode && strcmp(ss_config.SYNCSPY_MODE, "trace") != 0) {
		fprintf(stderr,
			"syncspy: ignoring SYNCSPY_MODE=%s (not trace or aggregate), using trace\n",
			ss_config.SYNCSPY_MODE);
		ss_config.SYNCSPY_MODE = "trace";
	}
}
