/*
 * examples/corpus/c27_thrust_count_if_per_step.cu: corpus workload (CUDA C + Thrust). A
 * particle transport step with population control: each step moves every particle and
 * deposits part of its energy; a particle below the cut-off is dead. The host asks
 * thrust::count_if how many particles are still alive, every step, to decide whether to launch
 * the respawn kernel (splitting the live ones into the dead slots). count_if returns its count
 * to the host: inside the call Thrust allocates the reduction's temporary storage with
 * cudaMalloc, runs the reduction on the stream, copies the count back and synchronizes the
 * stream, then frees the temporary storage, every step. Kept on the device (a count kernel
 * writing a device flag that the respawn kernel reads, or cub::DeviceReduce with storage
 * allocated once) the loop would never wait.
 * Planted: the per-step thrust::count_if (a sync and an allocation inside the library call).
 * Clean: setup allocations and upload, the final read, teardown.
 */
#include "corpus.h"

#include <thrust/count.h>
#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>

enum { STEPS = 60, N = 1 << 21, THREADS = 256, ROUNDS = 96 };
enum { CUTOFF = 1 << 12, RESPAWN_BELOW = N - N / 8 };

struct is_alive {
	__host__ __device__ bool operator()(uint32_t e) const { return e >= CUTOFF; }
};

__global__ void transport(uint32_t *energy, uint32_t *pos, unsigned long long *deposit, int n, int step)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t e = energy[i], p = pos[i];
	if (e < CUTOFF)
		return;
	for (int r = 0; r < ROUNDS; r++)
		p = (p ^ (p >> 13)) * 1274126177u + (uint32_t)(step + r);
	uint32_t loss = e >> (3 + (p & 3));
	energy[i] = e - loss;
	pos[i] = p;
	if ((i & 1023) == 0)
		atomicAdd(deposit, (unsigned long long)loss);
}

/* A dead slot i takes half the energy of live slot i ^ 1 (a deterministic split). */
__global__ void respawn(uint32_t *energy, uint32_t *pos, int n, int step)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint32_t e = energy[i], twin = energy[i ^ 1];
	if (e < CUTOFF && twin >= 2 * CUTOFF) {
		energy[i] = twin / 2 + (uint32_t)(step & 7);
		pos[i] = pos[i ^ 1] ^ 0x5bd1e995u;
	}
}

int main(void)
{
	uint32_t *h_energy = (uint32_t *)malloc((size_t)N * sizeof(uint32_t));
	uint32_t *d_energy, *d_pos;
	unsigned long long *d_deposit, deposit = 0, checksum = 0;
	cudaStream_t s;
	int respawns = 0;

	for (int i = 0; i < N; i++)
		h_energy[i] = (1u << 20) + ((uint32_t)i * 2654435761u >> 12);
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_energy, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_pos, (size_t)N * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_deposit, sizeof *d_deposit)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpyAsync(d_energy, h_energy, (size_t)N * sizeof(uint32_t), cudaMemcpyHostToDevice, s)); // SYNCSPY-CLEAN: setup upload (pageable, once)
	CHECK(cudaMemsetAsync(d_pos, 0, (size_t)N * sizeof(uint32_t), s));
	CHECK(cudaMemsetAsync(d_deposit, 0, sizeof *d_deposit, s));

	thrust::device_ptr<uint32_t> energy(d_energy);
	for (int step = 0; step < STEPS; step++) {
		transport<<<N / THREADS, THREADS, 0, s>>>(d_energy, d_pos, d_deposit, N, step);
		CHECK_LAUNCH();
		long alive = (long)thrust::count_if(thrust::cuda::par.on(s), energy, energy + N, is_alive()); // SYNCSPY-PROBLEM: returns the count to the host (temporary allocation and a stream sync inside) every step
		if (alive < RESPAWN_BELOW) {
			respawn<<<N / THREADS, THREADS, 0, s>>>(d_energy, d_pos, N, step);
			CHECK_LAUNCH();
			respawns++;
		}
		checksum = checksum * 1000003 + (unsigned long long)alive;
	}

	CHECK(cudaMemcpyAsync(&deposit, d_deposit, sizeof deposit, cudaMemcpyDeviceToHost, s)); // SYNCSPY-CLEAN: final read
	CHECK(cudaStreamSynchronize(s)); // SYNCSPY-CLEAN: final read
	checksum = checksum * 1000003 + deposit + (unsigned long long)respawns;
	CHECK(cudaFree(d_energy)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_pos)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_deposit)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(s));
	free(h_energy);
	corpus_result("c27_thrust_count_if_per_step", STEPS, checksum);
	return 0;
}
