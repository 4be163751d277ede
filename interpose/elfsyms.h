/*
 * interpose/elfsyms.h: a module's own symbol table, read from its file (elfsyms.c), for the
 * frames dladdr cannot name: those inside a statically linked CUDA runtime.
 */
#ifndef SYNCSPY_ELFSYMS_H
#define SYNCSPY_ELFSYMS_H

#include <stdint.h>

/* Where IP (in the module at MODULE_PATH, loaded at MODULE_BASE) lies: 0 the module's own code;
 * SS_FRAME_RUNTIME a statically linked CUDA runtime's or an nvcc stub's; SS_FRAME_LIBRARY a
 * function of Thrust or CUB instantiated in the module (ELFSYMS-1), the user's site only when no
 * frame of the user's own is found (docs/attribution.md). */
enum { SS_FRAME_RUNTIME = 1, SS_FRAME_LIBRARY = 2 };
int ss_static_runtime_frame(const char *module_path, uintptr_t module_base, uintptr_t ip);
void ss_elfsyms_fork_child(void); /* its lock, as a fork child must find it */

#endif
