/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/copy_shapes.h: the driver's copy descriptors the tests' programs fill in the same
 * shapes (driver_calls.c calls the driver with them, static_copies.c passes them through a
 * static runtime): every buffer is 4096 bytes, as 64 rows of 64 bytes or 4 slices of 16 such
 * rows, so that each recorded copy is expected to carry 4096 bytes.
 */
#ifndef SYNCSPY_TESTS_COPY_SHAPES_H
#define SYNCSPY_TESTS_COPY_SHAPES_H

#include <stdint.h>

#include <cuda.h>

/* 64 rows of 64 bytes, device to host */
static inline CUDA_MEMCPY2D copy2d_down(CUdeviceptr dev, void *host)
{
	return (CUDA_MEMCPY2D){.srcMemoryType = CU_MEMORYTYPE_DEVICE,
			       .srcDevice = dev,
			       .srcPitch = 64,
			       .dstMemoryType = CU_MEMORYTYPE_HOST,
			       .dstHost = host,
			       .dstPitch = 64,
			       .WidthInBytes = 64,
			       .Height = 64};
}

/* the same rows, host to device */
static inline CUDA_MEMCPY2D copy2d_up(const void *host, CUdeviceptr dev)
{
	return (CUDA_MEMCPY2D){.srcMemoryType = CU_MEMORYTYPE_HOST,
			       .srcHost = host,
			       .srcPitch = 64,
			       .dstMemoryType = CU_MEMORYTYPE_DEVICE,
			       .dstDevice = dev,
			       .dstPitch = 64,
			       .WidthInBytes = 64,
			       .Height = 64};
}

/* 4 slices of 16 rows of 64 bytes, device to host */
static inline CUDA_MEMCPY3D copy3d_down(CUdeviceptr dev, void *host)
{
	return (CUDA_MEMCPY3D){.srcMemoryType = CU_MEMORYTYPE_DEVICE,
			       .srcDevice = dev,
			       .srcPitch = 64,
			       .srcHeight = 16,
			       .dstMemoryType = CU_MEMORYTYPE_HOST,
			       .dstHost = host,
			       .dstPitch = 64,
			       .dstHeight = 16,
			       .WidthInBytes = 64,
			       .Height = 16,
			       .Depth = 4};
}

/* the same shape, host to device */
static inline CUDA_MEMCPY3D copy3d_up(const void *host, CUdeviceptr dev)
{
	CUDA_MEMCPY3D up = copy3d_down(0, NULL);
	up.srcMemoryType = CU_MEMORYTYPE_HOST;
	up.srcHost = host;
	up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	up.dstDevice = dev;
	return up;
}

/* the same shape, device to device in one context */
static inline CUDA_MEMCPY3D_PEER copy3d_peer(CUdeviceptr src, CUdeviceptr dst, CUcontext ctx)
{
	return (CUDA_MEMCPY3D_PEER){.srcMemoryType = CU_MEMORYTYPE_DEVICE,
				    .srcDevice = src,
				    .srcContext = ctx,
				    .srcPitch = 64,
				    .srcHeight = 16,
				    .dstMemoryType = CU_MEMORYTYPE_DEVICE,
				    .dstDevice = dst,
				    .dstContext = ctx,
				    .dstPitch = 64,
				    .dstHeight = 16,
				    .WidthInBytes = 64,
				    .Height = 16,
				    .Depth = 4};
}

/* one operation of a 3D batch: 4096 bytes between two device pointers */
static inline CUDA_MEMCPY3D_BATCH_OP copy3d_batch_op(CUdeviceptr src, CUdeviceptr dst)
{
	return (CUDA_MEMCPY3D_BATCH_OP){
	    .src = {.type = CU_MEMCPY_OPERAND_TYPE_POINTER, .op.ptr = {.ptr = src}},
	    .dst = {.type = CU_MEMCPY_OPERAND_TYPE_POINTER, .op.ptr = {.ptr = dst}},
	    .extent = {4096, 1, 1},
	    .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
}

#endif
