/*
 * interpose/env.h: the shim's configuration (env.c): the SYNCSPY_* variables of
 * include/syncspy/env.h, read once at load (ss_config_load) into ss_config.
 */
#ifndef SYNCSPY_INTERPOSE_ENV_H
#define SYNCSPY_INTERPOSE_ENV_H

#include "syncspy/env.h"

struct ss_config {
#define SS_CONFIG_FIELD_INT(name, def)	      long name;
#define SS_CONFIG_FIELD_BOOL(name, def)	      int name;
#define SS_CONFIG_FIELD_STR(name, def)	      const char *name;
#define SS_CONFIG_FIELD(name, type, def, doc) SS_CONFIG_FIELD_##type(name, def)
	SS_ENV_VARS(SS_CONFIG_FIELD)
#undef SS_CONFIG_FIELD
};
extern struct ss_config ss_config;
/* SYNCSPY_MODE=aggregate (SHIM-7), decided by ss_config_load; 0: trace */
extern int ss_aggregate_mode;
void ss_config_load(void);

#endif
