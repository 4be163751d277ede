/*
 * interpose/dynsyms.h: dladdr's answer from sorted copies of the modules' dynamic symbol tables
 * (dynsyms.c, SITES-2): for the writer thread, which names native frames.
 */
#ifndef SYNCSPY_DYNSYMS_H
#define SYNCSPY_DYNSYMS_H

#include <dlfcn.h>

/* As dladdr(ADDRESS, INFO): the module and the dynamic symbol holding ADDRESS. One caller at a
 * time. */
int ss_dladdr(const void *address, Dl_info *info);
/* Drops the tables (at a module's unload, in a fork child, when the database closes). */
void ss_dynsyms_forget(void);
/* The modules unloaded so far, the loader's count (native.c): what is remembered by address
 * (NATIVE-2's verdicts, the writer's frame names and these tables: SITES-1, SITES-2) holds
 * while it stays the same. */
unsigned long long ss_module_unloads(void);

#endif
