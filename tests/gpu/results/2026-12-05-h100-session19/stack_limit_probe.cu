// tests/gpu/results/2026-12-05-h100-session19/stack_limit_probe.cu: how long cudaDeviceSetLimit
// (cudaLimitStackSize) takes on the machine with a 20 ms kernel queued before it (session 19 run
// 3): does a raise, a restore, a second raise to a size already reserved, a set to the same value
// wait for the queued kernel ("if necessary, the device will block until all preceding requested
// tasks are complete", cuCtxSetLimit)? And the printf FIFO's limit for comparison (error
// expected after a launch). Prints one line per case: its host time in ms.
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>

__global__ void spin(long long ns)
{
	long long start = clock64();
	// about 1.98 GHz on an H100: cycles = ns * 2
	while (clock64() - start < ns * 2)
		;
}

static double timed_set(cudaLimit limit, size_t value, cudaError_t *err)
{
	auto t0 = std::chrono::steady_clock::now();
	*err = cudaDeviceSetLimit(limit, value);
	auto t1 = std::chrono::steady_clock::now();
	return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

int main()
{
	cudaStream_t s;
	cudaError_t err;
	size_t v;
	cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	spin<<<1, 1, 0, s>>>(1000);
	cudaDeviceSynchronize();
	cudaDeviceGetLimit(&v, cudaLimitStackSize);
	printf("default stack %zu\n", v);
	struct {
		const char *what;
		cudaLimit limit;
		size_t value;
	} cases[] = {
	    {"raise 16K", cudaLimitStackSize, 16 << 10},
	    {"same 16K", cudaLimitStackSize, 16 << 10},
	    {"restore default", cudaLimitStackSize, v},
	    {"raise 16K again", cudaLimitStackSize, 16 << 10},
	    {"raise 32K", cudaLimitStackSize, 32 << 10},
	    {"lower 16K", cudaLimitStackSize, 16 << 10},
	    {"restore default", cudaLimitStackSize, v},
	    {"printf fifo 2M", cudaLimitPrintfFifoSize, 2 << 20},
	};
	for (int round = 0; round < 2; round++)
		for (auto &c : cases) {
			spin<<<132, 128, 0, s>>>(20000000); // 20 ms
			double ms = timed_set(c.limit, c.value, &err);
			auto t0 = std::chrono::steady_clock::now();
			cudaStreamSynchronize(s);
			double rest = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
			printf("round %d %-16s set %8.3f ms (%s), then the stream sync %8.3f ms\n", round, c.what, ms,
			       cudaGetErrorName(err), rest);
		}
	return 0;
}
