/*
 * examples/corpus/c70_managed_inflow_boundary.cu: corpus workload (CUDA C, managed memory). A
 * coastal inundation model (integer shallow-water stand-in on a 2048 x 1024 grid) written with
 * cudaMallocManaged so that the host can set boundary conditions directly: every step the tide
 * gauge's inflow for the step is written by the host into the first row of the managed height
 * field, then the GPU advances the field one step (a five-point update into the other managed
 * buffer) and the buffers swap. To write the row safely the host first waits for the previous
 * step in set_inflow_row() with cudaStreamSynchronize, every step. Besides the wait, the host
 * write moves the pages holding the row to the CPU, and the next kernel faults them back to the
 * GPU (CUDA programming guide, unified memory: pages migrate on access by the processor that
 * touches them; a CPU access to managed memory the GPU may be using needs that work finished):
 * a page thrashing between the processors every step. The gauge's series is known in advance:
 * uploaded once (or one row staged in pinned memory and copied with cudaMemcpyAsync), the
 * inflow would need neither the wait nor the migration.
 * Planted: the cudaStreamSynchronize in set_inflow_row() before the host writes managed memory,
 * every step (the page migrations it leads to are its consequence).
 * Clean: the managed allocations, the prefetch to the GPU in setup, the final wait before the
 * host reads the field, teardown.
 */
#include "corpus.h"

enum { STEPS = 50, NX = 2048, NY = 1024, CELLS = NX * NY, THREADS = 256 };

static int gauge(int step, int x)
{
	return 4096 + ((step * 37 + x / 64) % 17) * 64;
}

__host__ __device__ static inline int update(const int *h, int x, int y)
{
	int c = h[y * NX + x];
	int l = h[y * NX + (x > 0 ? x - 1 : 0)], r = h[y * NX + (x < NX - 1 ? x + 1 : NX - 1)];
	int u = h[(y > 0 ? y - 1 : 0) * NX + x], d = h[(y < NY - 1 ? y + 1 : NY - 1) * NX + x];
	return (4 * c + l + r + u + d) / 8 - (y == NY - 1 ? 1 : 0); /* the far edge drains */
}

__global__ void advance(const int *cur, int *next)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < CELLS)
		next[i] = update(cur, i % NX, i / NX);
}

struct model {
	cudaStream_t s;
	int *h[2]; /* managed */
};

/* --- boundary conditions ------------------------------------------------------------------ */

static void set_inflow_row(struct model *m, int *field, int step)
{
	CHECK(cudaStreamSynchronize(m->s)); // SYNCSPY-PROBLEM: waits for every step so the host can write the managed field (the write pulls its pages to the CPU)
	for (int x = 0; x < NX; x++)
		field[x] = gauge(step, x);
}

int main(void)
{
	const char *name = "c70_managed_inflow_boundary";
	struct model m;
	int cur = 0;

	CHECK(cudaStreamCreateWithFlags(&m.s, cudaStreamNonBlocking));
	for (int b = 0; b < 2; b++)
		CHECK(cudaMallocManaged(&m.h[b], CELLS * sizeof(int))); // SYNCSPY-CLEAN: setup managed allocation
	for (int i = 0; i < CELLS; i++)
		m.h[0][i] = m.h[1][i] = 1024 + (i % 97);
	cudaMemLocation gpu = {};
	gpu.type = cudaMemLocationTypeDevice;
	gpu.id = 0;
	for (int b = 0; b < 2; b++)
		CHECK(cudaMemPrefetchAsync(m.h[b], CELLS * sizeof(int), gpu, 0, m.s)); // SYNCSPY-CLEAN: setup, the field moved to the GPU once

	for (int step = 0; step < STEPS; step++) {
		set_inflow_row(&m, m.h[cur], step);
		advance<<<CELLS / THREADS, THREADS, 0, m.s>>>(m.h[cur], m.h[1 - cur]);
		CHECK_LAUNCH();
		cur = 1 - cur;
	}
	CHECK(cudaStreamSynchronize(m.s)); // SYNCSPY-CLEAN: the final wait before the host reads the field

	/* the same model on the host */
	int *a = (int *)malloc(CELLS * sizeof(int)), *b = (int *)malloc(CELLS * sizeof(int));
	for (int i = 0; i < CELLS; i++)
		a[i] = 1024 + (i % 97);
	for (int step = 0; step < STEPS; step++) {
		for (int x = 0; x < NX; x++)
			a[x] = gauge(step, x);
		for (int i = 0; i < CELLS; i++)
			b[i] = update(a, i % NX, i / NX);
		int *t = a;
		a = b;
		b = t;
	}
	unsigned long long checksum = 0;
	for (int i = 0; i < CELLS; i++) {
		corpus_expect(name, "cell height", m.h[cur][i], a[i]);
		checksum = checksum * 1000003u + (unsigned long long)(uint32_t)m.h[cur][i];
	}
	free(a);
	free(b);

	for (int k = 0; k < 2; k++)
		CHECK(cudaFree(m.h[k])); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(m.s));
	corpus_result(name, STEPS, checksum);
	return 0;
}
