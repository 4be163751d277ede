// tests/progs/exceptions.cc: C++ exceptions must unwind as usual under the shim, whose
// unwinder and storage engine stay out of the process's global symbol scope (DESIGN.md
// section 4). Makes CUDA calls (so the shim starts), then throws and catches through frames.
#include <cstdio>
#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>

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
		if (cudaDeviceSynchronize() != cudaSuccess)
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
