/* SPDX-License-Identifier: MIT */
/*
 * tests/progs/cfa_expression.c: sync points under a frame whose CFA is a DWARF expression.
 *
 * Realigned frames (AVX code in torch's libraries) describe their frame with
 * DW_CFA_def_cfa_expression. libunwind's fast trace cannot classify such a frame and walks the
 * whole stack with unw_step instead, at a system call or two per frame (interpose/native.c).
 * through_expression() below is such a frame, written in assembly so that the compiler cannot
 * describe it otherwise. t210 checks that the stacks of both loops are whole, and which
 * unwinder each call site chose.
 *
 *   cfa_expression N   N stream syncs straight from main's loop, then N through the frame
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

/* int through_expression(int (*fn)(void *), void *arg): returns fn(arg), called from a frame
 * whose CFA is given as DW_OP_breg6 (rbp) + 16. */
int through_expression(int (*fn)(void *), void *arg);
__asm__(".text\n"
	".globl through_expression\n"
	".type through_expression, @function\n"
	"through_expression:\n"
	".cfi_startproc\n"
	"push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"mov %rsp, %rbp\n"
	".cfi_escape 0x0f, 0x02, 0x76, 0x10\n" /* DW_CFA_def_cfa_expression: rbp + 16 */
	"mov %rdi, %rax\n"
	"mov %rsi, %rdi\n"
	"call *%rax\n"
	"pop %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size through_expression, .-through_expression\n");

/* Counted apart, so that the compiler cannot fold the two functions into one call site. */
static volatile int beneath_calls, plain_calls;

__attribute__((noinline)) static int sync_beneath(void *stream)
{
	int result = cudaStreamSynchronize((cudaStream_t)stream);
	beneath_calls++; /* and not a tail call */
	return result;
}

__attribute__((noinline)) static int sync_plain(void *stream)
{
	int result = cudaStreamSynchronize((cudaStream_t)stream);
	plain_calls++;
	return result;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 50;
	cudaStream_t stream;
	if (cudaStreamCreate(&stream) != cudaSuccess)
		return 1;
	for (int i = 0; i < n; i++)
		if (sync_plain(stream) != cudaSuccess)
			return 1;
	for (int i = 0; i < n; i++)
		if (through_expression(sync_beneath, stream) != cudaSuccess)
			return 1;
	puts("done");
	return 0;
}
