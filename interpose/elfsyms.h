/*
 * interpose/elfsyms.h: a module's own symbol table, read from its file (elfsyms.c), for the
 * frames dladdr cannot name: those inside a statically linked CUDA runtime.
 */
#ifndef SYNCSPY_ELFSYMS_H
#define SYNCSPY_ELFSYMS_H

#include <stdint.h>

/* IP (in the module at MODULE_PATH, loaded at MODULE_BASE) is inside a statically linked CUDA
 * runtime's code (docs/attribution.md). */
int ss_static_runtime_frame(const char *module_path, uintptr_t module_base, uintptr_t ip);
void ss_elfsyms_fork_child(void); /* its lock, as a fork child must find it */

#endif
