/*
 * examples/cuda/driver_api_kernel.cu: the kernel of examples/cuda/driver_api.c, compiled to a
 * cubin (nvcc -cubin) and loaded with cuModuleLoad, so that the host program needs no runtime.
 */
extern "C" __global__ void scale_add(const float *x, float *y, float scale, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] += scale * x[i];
}
