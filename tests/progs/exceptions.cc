// SPDX-License-Identifier: MIT
// tests/progs/exceptions.cc: C++ exceptions must unwind as usual under the shim, whose
// unwinder and storage engine stay out of the process's global symbol scope (docs/architecture.md
// F7). Makes CUDA calls (so the shim starts), then throws and catches through frames.
#include <cstdio>
#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>

// Exported (the program is linked -rdynamic) so that the shim can name it: its site must read
// as the demangled C++ name, syncspy_test::device_sync(int).
namespace syncspy_test
{
__attribute__((noinline)) cudaError_t device_sync(int round)
{
	cudaError_t rc = cudaDeviceSynchronize();
	asm volatile("" ::"r"(round)); // not a tail call: this frame is the call site
	return rc;
}
} // namespace syncspy_test

static int depth_then_throw(int n)
{
	if (n == 0)
		throw std::runtime_error("deep " + std::to_string(n));
	return depth_then_throw(n - 1) + 1;
}

int main()
{
	int caught = 0;
	for (int i = 0; i < 1000; i++) {
		if (syncspy_test::device_sync(i) != cudaSuccess)
			return 10;
		try {
			depth_then_throw(i % 20);
		} catch (const std::exception &e) {
			caught++;
		}
	}
	try {
		throw 42;
	} catch (int v) {
		caught += v == 42;
	}
	std::printf("caught %d\n", caught);
	return caught == 1001 ? 0 : 1;
}
