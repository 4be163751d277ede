/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/driver_loop.c: a training-like loop on the CUDA driver API alone (no libcudart),
 * as a program built with nvcc's default static cudart reaches it: each step launches a kernel
 * (a host function of the CPU stand-in that sleeps KERNEL_US) on a stream and waits for it with
 * cuStreamSynchronize, which is where the report's steps come from.
 *
 *   driver_loop STEPS arrays            creates and destroys CUDA arrays every step (a 2D, a 3D
 *                                       and a mipmapped one: alloc-in-loop at each line, t229),
 *                                       calling the driver through its link-time symbols
 *   driver_loop STEPS arrays-procaddr   the same lines, with the functions got through
 *                                       dlopen("libcuda.so.1") and cuGetProcAddress
 *   driver_loop STEPS modules           loads a module (cuModuleLoad) and a library
 *                                       (cuLibraryLoadData) every step and gets the step's
 *                                       kernel from each (module-load-in-loop at the four lines,
 *                                       t232); the modules are kept and unloaded after the loop,
 *                                       each library is unloaded in its step
 *   driver_loop STEPS modules-once      the fix: loaded once before the loop, each kernel got
 *                                       once, launched every step, unloaded after the loop
 *   driver_loop STEPS pool              a workspace from a memory pool every step
 *                                       (cuMemAllocFromPoolAsync, freed stream-ordered), the
 *                                       step's kernel, a stream sync (async-alloc-slow with the
 *                                       stand-in's STANDIN_POOL_REMAP_US, t245)
 *   driver_loop STEPS vmm               an arena of virtual memory management: a chunk created,
 *                                       mapped and given access every step, the step's kernel
 *                                       writing it, a stream sync, and the chunk unmapped and
 *                                       released again (d39 of examples/corpus; t247)
 *   driver_loop STEPS vmm-once          the fix: the chunk mapped once before the loop, kept
 *                                       mapped through it, unmapped and released after it
 *   driver_loop STEPS stack-limit       the step's kernel, then the stack size raised
 *                                       (cuCtxSetLimit), a second kernel, and the old size
 *                                       put back, every step (d42 of examples/corpus; t248)
 *   driver_loop STEPS graph-shared      two lanes, each a stream, launching one executable graph
 *                                       of one kernel (GRAPH_KERNEL_US) every step, then a sync
 *                                       of each lane: the launches of one executable graph run one
 *                                       after the other (d43 of examples/corpus; t249)
 *   driver_loop STEPS graph-lanes       the fix: one executable graph per lane, which overlap
 *   driver_loop STEPS private-context   an engine's kernel every step in a context of its own
 *                                       (cuCtxCreate before the loop, pushed and popped every
 *                                       step) beside the program's in the primary context (d49
 *                                       of examples/corpus; t256)
 *   driver_loop STEPS primary-context   the fix: the engine retains the primary context too
 *   driver_loop STEPS context-per-step  the engine's context made and destroyed every step
 *   driver_loop STEPS graph-host        a kernel and a host function of HOST_NODE_US captured
 *                                       into a graph (cuStreamBeginCapture, cuLaunchHostFunc,
 *                                       cuStreamEndCapture), instantiated once, launched every
 *                                       step without a sync between (d40 of examples/corpus;
 *                                       t234)
 *
 * The stand-in finds a module's functions by name among the program's own (-rdynamic).
 * Lines that tests look up carry a MARK: comment.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "cu_check.h"

#define KERNEL_US 500
#define MAX_STEPS 1000
/* cuLibraryLoadData's JIT and library options: none */
#define NO_OPTIONS NULL, NULL, 0, NULL, NULL, 0

/* The kernels the modules and libraries hold (exported: the stand-in looks them up by name). */
void driver_loop_module_kernel(void *usec);
void driver_loop_library_kernel(void *usec);

void driver_loop_module_kernel(void *usec)
{
	usleep((useconds_t)(uintptr_t)usec);
}

void driver_loop_library_kernel(void *usec)
{
	usleep((useconds_t)(uintptr_t)usec);
}

/* The array functions, from the link or from cuGetProcAddress. */
struct array_api {
	CUresult (*create)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *);
	CUresult (*create3d)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *);
	CUresult (*destroy)(CUarray);
	CUresult (*mipmapped_create)(CUmipmappedArray *, const CUDA_ARRAY3D_DESCRIPTOR *,
				     unsigned int);
	CUresult (*mipmapped_destroy)(CUmipmappedArray);
};

static void launch(CUfunction f, CUstream s)
{
	void *param = (void *)(uintptr_t)KERNEL_US;
	void *args[] = {&param};
	CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

static void array_step(const struct array_api *api, CUfunction kernel, CUstream s)
{
	CUDA_ARRAY_DESCRIPTOR d2 = {
	    .Width = 64, .Height = 64, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
	CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = 16,
				      .Height = 16,
				      .Depth = 16,
				      .Format = CU_AD_FORMAT_UNSIGNED_INT8,
				      .NumChannels = 4};
	CUarray a2, a3;
	CUmipmappedArray mm;

	CHECK(api->create(&a2, &d2));		   /* MARK:array-create */
	CHECK(api->create3d(&a3, &d3));		   /* MARK:array3d-create */
	CHECK(api->mipmapped_create(&mm, &d3, 4)); /* MARK:mipmapped-create */
	launch(kernel, s);
	CHECK(cuStreamSynchronize(s));
	CHECK(api->destroy(a2));	   /* MARK:array-destroy */
	CHECK(api->destroy(a3));	   /* MARK:array3d-destroy */
	CHECK(api->mipmapped_destroy(mm)); /* MARK:mipmapped-destroy */
}

typedef CUresult (*get_proc_t)(const char *, void **, int, cuuint64_t,
			       CUdriverProcAddressQueryResult *);

static void *get(get_proc_t get_proc, const char *name)
{
	void *fn = NULL;
	CUdriverProcAddressQueryResult status;
	CHECK(get_proc(name, &fn, 13000, 0, &status));
	return fn;
}

/* The driver, a stream of its own and the module's kernel, as the arrays, pool, vmm and
 * graph-host modes start; the module is unloaded and the stream destroyed by close_module. */
static void open_module(CUstream *s, CUmodule *mod, CUfunction *kernel)
{
	CHECK(cuInit(0));
	CHECK(cuStreamCreate(s, CU_STREAM_NON_BLOCKING));
	CHECK(cuModuleLoad(mod, "driver_loop.cubin"));
	CHECK(cuModuleGetFunction(kernel, *mod, "driver_loop_module_kernel"));
}

static void close_module(CUstream s, CUmodule mod)
{
	CHECK(cuModuleUnload(mod));
	CHECK(cuStreamDestroy(s));
}

static int arrays(int steps, int procaddr)
{
	struct array_api api = {cuArrayCreate, cuArray3DCreate, cuArrayDestroy,
				cuMipmappedArrayCreate, cuMipmappedArrayDestroy};
	CUmodule mod;
	CUfunction kernel;
	CUstream s;

	if (procaddr) {
		void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
		if (!libcuda)
			return 3;
		get_proc_t get_proc = (get_proc_t)dlsym(libcuda, "cuGetProcAddress_v2");
		api.create = get(get_proc, "cuArrayCreate");
		api.create3d = get(get_proc, "cuArray3DCreate");
		api.destroy = get(get_proc, "cuArrayDestroy");
		api.mipmapped_create = get(get_proc, "cuMipmappedArrayCreate");
		api.mipmapped_destroy = get(get_proc, "cuMipmappedArrayDestroy");
	}
	open_module(&s, &mod, &kernel);
	for (int step = 0; step < steps; step++)
		array_step(&api, kernel, s);
	close_module(s, mod);
	printf("arrays ok\n");
	return 0;
}

static int modules(int steps, int once)
{
	static const char image[] = "driver_loop library image", path[] = "driver_loop.cubin";
	static const char fn_name[] = "driver_loop_module_kernel";
	static const char kernel_name[] = "driver_loop_library_kernel";
	CUmodule mods[MAX_STEPS];
	CUlibrary lib = NULL;
	CUfunction fn = NULL;
	CUkernel kernel = NULL;
	CUstream s;
	int nmods = 0;

	if (steps > MAX_STEPS)
		return 2;
	CHECK(cuInit(0));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	if (once) {
		CHECK(cuModuleLoad(&mods[nmods++], path));
		CHECK(cuModuleGetFunction(&fn, mods[0], fn_name));
		CHECK(cuLibraryLoadData(&lib, image, NO_OPTIONS));
		CHECK(cuLibraryGetKernel(&kernel, lib, kernel_name));
	}
	for (int step = 0; step < steps; step++) {
		if (!once) {
			CHECK(cuModuleLoad(&mods[nmods], path));		 /* MARK:load */
			CHECK(cuModuleGetFunction(&fn, mods[nmods++], fn_name)); /* MARK:get */
			CHECK(cuLibraryLoadData(&lib, image, NO_OPTIONS));	 /* MARK:libload */
			CHECK(cuLibraryGetKernel(&kernel, lib, kernel_name));	 /* MARK:libget */
		}
		launch(fn, s);
		launch((CUfunction)(void *)kernel, s);
		CHECK(cuStreamSynchronize(s));
		if (!once)
			CHECK(cuLibraryUnload(lib)); /* MARK:libunload */
	}
	for (int i = 0; i < nmods; i++)
		CHECK(cuModuleUnload(mods[i])); /* MARK:unload */
	if (once)
		CHECK(cuLibraryUnload(lib));
	CHECK(cuStreamDestroy(s));
	printf("modules ok\n");
	return 0;
}

/* The stand-in keeps no pools: any handle but NULL stands for one (cuMemPoolCreate is not in
 * it), here the address of a local. */
static int pool(int steps)
{
	static char pool_handle;
	CUmemoryPool pool = (CUmemoryPool)(void *)&pool_handle;
	CUmodule mod;
	CUfunction kernel;
	CUdeviceptr work;
	CUstream s;

	open_module(&s, &mod, &kernel);
	for (int step = 0; step < steps; step++) {
		CHECK(cuMemAllocFromPoolAsync(&work, 4096, pool, s)); /* MARK:pool-alloc */
		launch(kernel, s);
		CHECK(cuMemFreeAsync(work, s));
		CHECK(cuStreamSynchronize(s));
	}
	close_module(s, mod);
	printf("pool ok\n");
	return 0;
}

/* A chunk of VMM memory: created (MARK:vmm-create), mapped into a reserved range
 * (MARK:vmm-map), given read-write access (MARK:vmm-access); then unmapped (MARK:vmm-unmap) and
 * released (MARK:vmm-release). Each step fills it with a memset and reads a word back. */
static CUmemAllocationProp vmm_prop(void)
{
	CUmemAllocationProp prop;

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	return prop;
}

static void vmm_map(CUdeviceptr base, size_t chunk, CUmemGenericAllocationHandle *h)
{
	CUmemAllocationProp prop = vmm_prop();
	CUmemAccessDesc access;

	memset(&access, 0, sizeof(access));
	access.location = prop.location;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CHECK(cuMemCreate(h, chunk, &prop, 0));		/* MARK:vmm-create */
	CHECK(cuMemMap(base, chunk, 0, *h, 0));		/* MARK:vmm-map */
	CHECK(cuMemSetAccess(base, chunk, &access, 1)); /* MARK:vmm-access */
}

static void vmm_unmap(CUdeviceptr base, size_t chunk, CUmemGenericAllocationHandle h)
{
	CHECK(cuMemUnmap(base, chunk)); /* MARK:vmm-unmap */
	CHECK(cuMemRelease(h));		/* MARK:vmm-release */
}

static int vmm(int steps, int once)
{
	const size_t chunk = 2u << 20;
	CUmemGenericAllocationHandle h = 0;
	CUdeviceptr base;
	CUmodule mod;
	CUfunction kernel;
	CUstream s;
	unsigned *word, sum = 0;

	open_module(&s, &mod, &kernel);
	CHECK(cuMemAllocHost((void **)&word, sizeof(*word)));
	CHECK(cuMemAddressReserve(&base, chunk, 0, 0, 0));
	if (once)
		vmm_map(base, chunk, &h);
	for (int step = 0; step < steps; step++) {
		if (!once)
			vmm_map(base, chunk, &h);
		CHECK(cuMemsetD32Async(base, (unsigned)step, chunk / 4, s));
		launch(kernel, s);
		CHECK(cuMemcpyDtoHAsync(word, base + chunk - 4, 4, s));
		CHECK(cuStreamSynchronize(s));
		sum += *word;
		if (!once)
			vmm_unmap(base, chunk, h);
	}
	if (once)
		vmm_unmap(base, chunk, h);
	CHECK(cuMemAddressFree(base, chunk));
	CHECK(cuMemFreeHost(word));
	close_module(s, mod);
	printf("vmm ok %u\n", sum);
	return 0;
}

static int stack_limit(int steps)
{
	CUmodule mod;
	CUfunction kernel;
	CUstream s;
	size_t saved = 0;

	open_module(&s, &mod, &kernel);
	for (int step = 0; step < steps; step++) {
		launch(kernel, s);
		CHECK(cuCtxGetLimit(&saved, CU_LIMIT_STACK_SIZE));
		CHECK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 16 << 10)); /* MARK:cu-stack-raise */
		launch(kernel, s);
		CHECK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, saved)); /* MARK:cu-stack-restore */
	}
	CHECK(cuStreamSynchronize(s));
	close_module(s, mod);
	printf("stack-limit ok %zu\n", saved);
	return 0;
}

/* An engine beside the program's own kernels (the program's in the primary context), the
 * engine's kernel launched and waited for every step, in a context of its own made before the
 * loop (private-context: cuCtxCreate, push and pop every step, cuCtxDestroy after the loop; d49
 * of examples/corpus), in the primary context retained again (primary-context: the fix, d51),
 * or in a context made and destroyed every step (context-per-step). t256. */
static int contexts(int steps, const char *how)
{
	int per_step = !strcmp(how, "context-per-step"), own = !strcmp(how, "private-context");
	CUdevice dev;
	CUcontext primary, engine = NULL;
	CUmodule mod;
	CUfunction kernel;
	CUstream s, es = NULL;

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&primary, dev));
	CHECK(cuCtxSetCurrent(primary));
	open_module(&s, &mod, &kernel);
	if (own) {
		CHECK(cuCtxCreate(&engine, NULL, 0, dev)); /* MARK:ctx-create */
		CHECK(cuStreamCreate(&es, CU_STREAM_NON_BLOCKING));
		CHECK(cuCtxPopCurrent(NULL));
	} else if (!per_step) {
		CHECK(cuDevicePrimaryCtxRetain(&engine, dev)); /* MARK:ctx-retain */
		CHECK(cuStreamCreate(&es, CU_STREAM_NON_BLOCKING));
	}
	for (int step = 0; step < steps; step++) {
		launch(kernel, s);
		if (per_step) {
			CHECK(cuCtxCreate(&engine, NULL, 0, dev)); /* MARK:ctx-create-step */
			launch(kernel, CU_STREAM_PER_THREAD);
			CHECK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
			CHECK(cuCtxDestroy(engine)); /* MARK:ctx-destroy-step */
		} else {
			if (own)
				CHECK(cuCtxPushCurrent(engine));
			launch(kernel, es);
			CHECK(cuStreamSynchronize(es));
			if (own)
				CHECK(cuCtxPopCurrent(NULL));
		}
		CHECK(cuStreamSynchronize(s));
	}
	if (own) {
		CHECK(cuCtxPushCurrent(engine));
		CHECK(cuStreamDestroy(es));
		CHECK(cuCtxDestroy(engine)); /* MARK:ctx-destroy */
	} else if (!per_step) {
		CHECK(cuStreamDestroy(es));
		CHECK(cuDevicePrimaryCtxRelease(dev));
	}
	close_module(s, mod);
	CHECK(cuDevicePrimaryCtxRelease(dev));
	printf("%s ok\n", how);
	return 0;
}

#define HOST_NODE_US 1500

static void CUDA_CB host_node(void *usec)
{
	usleep((useconds_t)(uintptr_t)usec);
}

static int graph_host(int steps)
{
	CUmodule mod;
	CUfunction kernel;
	CUstream s;
	CUgraph g;
	CUgraphExec exec;

	open_module(&s, &mod, &kernel);
	CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	launch(kernel, s);
	CHECK(cuLaunchHostFunc(s, host_node, (void *)(uintptr_t)HOST_NODE_US)); /* MARK:host-node */
	CHECK(cuStreamEndCapture(s, &g));
	CHECK(cuGraphInstantiateWithFlags(&exec, g, 0));
	for (int step = 0; step < steps; step++)
		CHECK(cuGraphLaunch(exec, s));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuGraphExecDestroy(exec));
	CHECK(cuGraphDestroy(g));
	close_module(s, mod);
	printf("graph-host ok\n");
	return 0;
}

#define GRAPH_KERNEL_US 2000

/* Two lanes launching one executable graph (shared) or one each. */
static int graph_lanes(int steps, int shared)
{
	CUmodule mod;
	CUfunction kernel;
	CUstream s[2];
	CUgraph g;
	CUgraphExec exec[2];
	void *param = (void *)(uintptr_t)GRAPH_KERNEL_US;
	void *args[] = {&param};

	open_module(&s[0], &mod, &kernel);
	CHECK(cuStreamCreate(&s[1], CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamBeginCapture(s[0], CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	CHECK(cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, s[0], args, NULL));
	CHECK(cuStreamEndCapture(s[0], &g));
	CHECK(cuGraphInstantiateWithFlags(&exec[0], g, 0));
	if (shared)
		exec[1] = exec[0];
	else
		CHECK(cuGraphInstantiateWithFlags(&exec[1], g, 0));
	for (int step = 0; step < steps; step++) {
		for (int lane = 0; lane < 2; lane++)
			CHECK(cuGraphLaunch(exec[lane], s[lane])); /* MARK:lane-launch */
		for (int lane = 0; lane < 2; lane++)
			CHECK(cuStreamSynchronize(s[lane]));
	}
	CHECK(cuGraphExecDestroy(exec[0]));
	if (!shared)
		CHECK(cuGraphExecDestroy(exec[1]));
	CHECK(cuGraphDestroy(g));
	CHECK(cuStreamDestroy(s[1]));
	close_module(s[0], mod);
	printf("graph-lanes ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 0;
	const char *mode = argc > 2 ? argv[2] : "";

	if (steps > 0 && !strcmp(mode, "arrays"))
		return arrays(steps, 0);
	if (steps > 0 && !strcmp(mode, "arrays-procaddr"))
		return arrays(steps, 1);
	if (steps > 0 && !strcmp(mode, "modules"))
		return modules(steps, 0);
	if (steps > 0 && !strcmp(mode, "modules-once"))
		return modules(steps, 1);
	if (steps > 0 && !strcmp(mode, "pool"))
		return pool(steps);
	if (steps > 0 && !strcmp(mode, "vmm"))
		return vmm(steps, 0);
	if (steps > 0 && !strcmp(mode, "vmm-once"))
		return vmm(steps, 1);
	if (steps > 0 && !strcmp(mode, "stack-limit"))
		return stack_limit(steps);
	if (steps > 0 && !strcmp(mode, "graph-shared"))
		return graph_lanes(steps, 1);
	if (steps > 0 && !strcmp(mode, "graph-lanes"))
		return graph_lanes(steps, 0);
	if (steps > 0 && !strcmp(mode, "graph-host"))
		return graph_host(steps);
	if (steps > 0 && (!strcmp(mode, "private-context") || !strcmp(mode, "primary-context") ||
			  !strcmp(mode, "context-per-step")))
		return contexts(steps, mode);
	fprintf(stderr, "usage: driver_loop STEPS "
			"arrays|arrays-procaddr|modules|modules-once|pool|vmm|vmm-once|stack-limit|"
			"graph-host|private-context|primary-context|context-per-step\n");
	return 2;
}
