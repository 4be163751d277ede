/*
 * interpose/driver.h: what the driver module (driver.c) offers the rest of the shim: the real
 * dlsym past the shim's own (DRIVER-2; cupti/cupti.h declares it too, for cupti/), and who
 * looked driver functions up.
 */
#ifndef SYNCSPY_DRIVER_H
#define SYNCSPY_DRIVER_H

#include <stddef.h>

void *ss_dlsym(void *handle, const char *name); /* DRIVER-2 */
/* The modules that looked driver functions up through dlsym/cuGetProcAddress (comma-separated
 * basenames, for meta.driver_clients); returns the length written. */
size_t ss_driver_clients(char *out, size_t len);

#endif
