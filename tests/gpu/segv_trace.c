/*
 * tests/gpu/segv_trace.c: a fatal signal's native stack, for a crash on a machine without gdb
 * (the GPU machine). Preloaded beside the shim (LD_PRELOAD="libsyncspy.so segv_trace.so"): on
 * SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT it writes to stderr the signal, the faulting
 * address, the thread, and each frame as LIBRARY+OFFSET (symbol+offset where the library exports
 * one), so that `addr2line -e LIBRARY OFFSET` here names the line of a carried build; then it
 * lets the signal end the process as it would have (the default action, the same exit status).
 *
 * Python's faulthandler (PYTHONFAULTHANDLER=1) installs its handler after this one, writes the
 * Python stack, restores the previous handler (this one) and returns: the fault comes again and
 * lands here, so both stacks are written.
 *
 * Build on the GPU machine: gcc -O1 -shared -fPIC -o segv_trace.so tests/gpu/segv_trace.c
 * Not part of the product: a diagnostic of tests/gpu (tests/gpu/README.md).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static char alt_stack[1 << 16];

static void say(const char *text)
{
	ssize_t ignored = write(2, text, strlen(text));
	(void)ignored;
}

static void on_fatal(int sig, siginfo_t *info, void *context)
{
	(void)context;
	char line[512];
	snprintf(line, sizeof(line), "segv_trace: signal %d at %p, thread %ld (process %ld)\n", sig,
		 info ? info->si_addr : NULL, (long)syscall(SYS_gettid), (long)getpid());
	say(line);
	void *frames[64];
	int n = backtrace(frames, 64);
	for (int i = 0; i < n; i++) {
		Dl_info where;
		if (dladdr(frames[i], &where) && where.dli_fname) {
			uintptr_t offset = (uintptr_t)frames[i] - (uintptr_t)where.dli_fbase;
			long symbol_offset = where.dli_saddr ? (long)((uintptr_t)frames[i] -
								      (uintptr_t)where.dli_saddr)
							     : 0;
			snprintf(line, sizeof(line), "segv_trace: #%d %s+0x%lx (%s+0x%lx)\n", i,
				 where.dli_fname, (unsigned long)offset,
				 where.dli_sname ? where.dli_sname : "?", symbol_offset);
		} else {
			snprintf(line, sizeof(line), "segv_trace: #%d %p\n", i, frames[i]);
		}
		say(line);
	}
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig); /* delivered when this handler returns */
}

__attribute__((constructor)) static void install(void)
{
	void *warm[2];
	backtrace(warm, 2); /* loads libgcc_s now, not inside the handler */
	stack_t stack = {.ss_sp = alt_stack, .ss_size = sizeof(alt_stack)};
	sigaltstack(&stack, NULL);
	struct sigaction action = {.sa_sigaction = on_fatal,
				   .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER};
	sigemptyset(&action.sa_mask);
	int signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		sigaction(signals[i], &action, NULL);
}
