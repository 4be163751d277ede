/*
 * interpose/resolve.c: the API registry (names, layers, static classes, generated from the
 * tables; cupti/ reads it through ss_api_name, cupti/cupti.h) and the lookup of the real
 * functions behind the wrappers.
 *
 * Runtime: dlsym(RTLD_NEXT) first; when libcudart was loaded RTLD_LOCAL (a dependency of a
 * Python extension), RTLD_NEXT cannot see it, so ask the loaded library itself through
 * dlopen("libcudart.so.13", RTLD_NOLOAD). NCCL: the loaded libnccl.so.2 and its pnccl* names
 * first (docs/architecture.md F5), then RTLD_NEXT. A handle taken here is never closed: the
 * function pointers handed out must stay valid for the life of the process.
 * Each entry point is resolved on its first call (the library may be loaded late) and cached.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cupti/cupti.h"
#include "driver.h"
#include "resolve.h"
#include "shim.h"

const struct ss_api_info ss_apis[SS_API_COUNT] = {
#define INFO_NONE(name, cls)
#define INFO_PTSZ(name, cls) [SS_API_##name##_ptsz] = {#name "_ptsz", SS_LAYER_RUNTIME, SS_##cls},
#define INFO_PTDS(name, cls) [SS_API_##name##_ptds] = {#name "_ptds", SS_LAYER_RUNTIME, SS_##cls},
#define CUDART_INFO(name, variant, cls, params, args, pre, post)                                   \
	[SS_API_##name] = {#name, SS_LAYER_RUNTIME, SS_##cls}, INFO_##variant(name, cls)
#define DINFO_NONE(name, cls)
#define DINFO_PTSZ(name, cls) [SS_API_##name##_ptsz] = {#name "_ptsz", SS_LAYER_DRIVER, SS_##cls},
#define DINFO_PTDS(name, cls) [SS_API_##name##_ptds] = {#name "_ptds", SS_LAYER_DRIVER, SS_##cls},
#define DRIVER_INFO(name, variant, cls, params, args, pre, post)                                   \
	[SS_API_##name] = {#name, SS_LAYER_DRIVER, SS_##cls}, DINFO_##variant(name, cls)
#define NCCL_INFO(name, cls, params, args, pre, post)                                              \
	[SS_API_##name] = {#name, SS_LAYER_NCCL, SS_##cls},
    SS_CUDART_FUNCS(CUDART_INFO) SS_DRIVER_FUNCS(DRIVER_INFO) SS_NCCL_FUNCS(NCCL_INFO)
#undef CUDART_INFO
#undef NCCL_INFO
};

/* cupti/cupti.h: the registry as cupti/ sees it, without the shim's headers */
const int ss_api_total = SS_API_COUNT;

const char *ss_api_name(int i, enum ss_layer *layer)
{
	*layer = (enum ss_layer)ss_apis[i].layer;
	return ss_apis[i].name;
}

void *_Atomic ss_real_fns[SS_API_COUNT];

static const char *const layer_sonames[SS_LAYER_COUNT] = {
    [SS_LAYER_RUNTIME] = "libcudart.so.13",
    [SS_LAYER_DRIVER] = "libcuda.so.1",
    [SS_LAYER_NCCL] = "libnccl.so.2",
};

static void *loaded_library(enum ss_layer layer)
{
	static void *_Atomic handles[SS_LAYER_COUNT];
	void *handle = atomic_load(&handles[layer]);
	if (handle == NULL) {
		handle = dlopen(layer_sonames[layer], RTLD_LAZY | RTLD_NOLOAD);
		if (handle)
			atomic_store(&handles[layer], handle);
	}
	return handle;
}

void *ss_resolve_helper(enum ss_layer layer, const char *name)
{
	void *fn = NULL;
	if (layer == SS_LAYER_NCCL) {
		char profiling_name[128];
		snprintf(profiling_name, sizeof(profiling_name), "p%s", name);
		void *handle = loaded_library(layer);
		if (handle)
			fn = ss_dlsym(handle, profiling_name);
		if (!fn && handle)
			fn = ss_dlsym(handle, name);
		if (!fn)
			fn = ss_dlsym(RTLD_NEXT, profiling_name);
		if (!fn)
			fn = ss_dlsym(RTLD_NEXT, name);
		return fn;
	}
	fn = ss_dlsym(RTLD_NEXT, name);
	if (!fn) {
		void *handle = loaded_library(layer);
		if (handle)
			fn = ss_dlsym(handle, name);
	}
	return fn;
}

void *ss_resolve(int api)
{
	void *fn = ss_resolve_helper(ss_apis[api].layer, ss_apis[api].name);
	if (fn)
		atomic_store_explicit(&ss_real_fns[api], fn, memory_order_relaxed);
	return fn;
}

/* A word at a time, then the tail, then a final mix: stacks are hashed at every sync point
 * (32 return addresses), and a byte-at-a-time hash cost as much as a tenth of a stack. */
uint64_t ss_hash64(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0x243f6a8885a308d3ull ^ (len * 0x9e3779b97f4a7c15ull);
	for (; len >= 8; p += 8, len -= 8) {
		uint64_t word;
		memcpy(&word, p, 8); /* unaligned-safe; compiles to one load */
		h ^= word * 0x9e3779b97f4a7c15ull;
		h = ((h << 27) | (h >> 37)) * 0xbf58476d1ce4e5b9ull;
	}
	if (len) {
		uint64_t word = 0;
		memcpy(&word, p, len);
		h ^= word * 0x9e3779b97f4a7c15ull;
		h = ((h << 27) | (h >> 37)) * 0xbf58476d1ce4e5b9ull;
	}
	h ^= h >> 31; /* every input bit reaches every output bit */
	h *= 0x94d049bb133111ebull;
	return h ^ (h >> 29);
}
