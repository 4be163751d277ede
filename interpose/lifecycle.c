/*
 * interpose/lifecycle.c: the process around the recording. Load, lazy start, exit, fork, exec
 * and the two signals that end programs politely (SIGINT, SIGTERM).
 *
 * - Load (constructor, or the first wrapper if another library's constructor calls CUDA first):
 *   reads the configuration, picks the clock, reads the rank from the environment. Creates no
 *   file and no thread: a process that never calls CUDA or NCCL (a shell, a compiler run by
 *   `syncspy run`) runs exactly as without the shim and writes nothing.
 * - Start (first recorded call): starts the writer thread, installs the signal handlers.
 * - Exit: the exit notice (SHIM-8: the newest exit handler, so the first to run) leaves CUPTI
 *   (CUPTI-14); then the destructor: final drain (writer.c), close, rename (dbfile.c).
 * - Fork: the child has no writer thread; by default it starts its own database on its first
 *   call (SYNCSPY_FORK=child), or records nothing (SYNCSPY_FORK=off). The writer's lock is held
 *   across fork so that the child never inherits SQLite in the middle of a call.
 * - Exec: the database is finished before the image is replaced; the new image, which inherits
 *   LD_PRELOAD, starts its own. If exec fails, recording goes on in a new database.
 * - SIGINT/SIGTERM: the program's handler stays the program's: the shim's handler commits (or,
 *   when the program had none, finishes the database), then does what the program asked for.
 *   sigaction()/signal() are interposed for these two signals so the program can change its
 *   handler without removing the shim's.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "capture.h"
#include "clock.h"
#include "env.h"
#include "gate.h"
#include "lifecycle.h"
#include "native.h"
#include "nccl_shim.h"
#include "python.h"
#include "ranges.h"
#include "resolve.h"
#include "ring.h"
#include "shim.h"
#include "writer.h"
#include "cupti/cupti.h"

__thread struct ss_tls ss_tls __attribute__((tls_model("initial-exec")));
struct ss_hot ss_hot;
_Atomic int ss_open_captures; /* hot.h, CUPTI-9 */
struct ss_process ss_process = {.rank = -1, .world_size = -1, .local_rank = -1};

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

static void install_signal_handlers(void);

/* ------------------------------------------------------------------ rank from the environment */

static int env_int(const char *name)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return -1;
	char *end;
	long n = strtol(v, &end, 10);
	return (*end || n < 0 || n > 1 << 30) ? -1 : (int)n;
}

/* torchrun/torch.distributed, Open MPI, MPICH/PMI, Slurm: the first one set wins. */
static void rank_from_environment(void)
{
	static const char *const ranks[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
					    "SLURM_PROCID"};
	static const char *const sizes[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
					    "SLURM_NTASKS"};
	static const char *const local_ranks[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
						  "MPI_LOCALRANKID", "SLURM_LOCALID"};
	for (size_t i = 0; i < sizeof(ranks) / sizeof(ranks[0]); i++) {
		int rank = env_int(ranks[i]);
		if (rank < 0)
			continue;
		atomic_store(&ss_process.rank, rank);
		atomic_store(&ss_process.world_size, env_int(sizes[i]));
		atomic_store(&ss_process.local_rank, env_int(local_ranks[i]));
		atomic_store(&ss_process.rank_source, 1);
		return;
	}
}

/* A communicator's rank overrides the environment; a larger communicator overrides a smaller
 * one (the world communicator, not a sub-group, names the process). */
void ss_rank_from_comm(int rank, int nranks)
{
	if (atomic_load(&ss_process.rank_source) == 2 && nranks <= ss_process.world_size)
		return;
	atomic_store(&ss_process.rank, rank);
	atomic_store(&ss_process.world_size, nranks);
	atomic_store(&ss_process.rank_source, 2);
	ss_note_versions();
}

/* ------------------------------------------------------------------ versions */

static void library_path(void *fn, char *out, size_t len)
{
	Dl_info info;
	if (fn && dladdr(fn, &info) && info.dli_fname)
		snprintf(out, len, "%s", info.dli_fname);
}

void ss_note_versions(void)
{
	if (!atomic_load(&ss_process.cudart_version)) {
		cudaError_t (*runtime_version)(int *) =
		    ss_resolve_helper(SS_LAYER_RUNTIME, "cudaRuntimeGetVersion");
		cudaError_t (*driver_version)(int *) =
		    ss_resolve_helper(SS_LAYER_RUNTIME, "cudaDriverGetVersion");
		int v = 0;
		if (runtime_version && runtime_version(&v) == cudaSuccess && v) {
			library_path((void *)runtime_version, ss_process.cudart_path,
				     sizeof(ss_process.cudart_path));
			atomic_store(&ss_process.cudart_version, v);
		}
		v = 0;
		if (driver_version && driver_version(&v) == cudaSuccess && v)
			atomic_store(&ss_process.driver_version, v);
	}
	if (!atomic_load(&ss_process.nccl_version)) {
		ncclResult_t (*nccl_version)(int *) =
		    ss_resolve_helper(SS_LAYER_NCCL, "ncclGetVersion");
		int v = 0;
		if (nccl_version && nccl_version(&v) == ncclSuccess && v) {
			library_path((void *)nccl_version, ss_process.nccl_path,
				     sizeof(ss_process.nccl_path));
			atomic_store(&ss_process.nccl_version, v);
		}
	}
}

/* ------------------------------------------------------------------ fork */

static void before_fork(void)
{
	if (atomic_load(&ss_hot.state) == SS_STATE_RUNNING)
		ss_writer_fork_prepare();
}

static int writer_locked_for_fork(void)
{
	return atomic_load(&ss_hot.state) == SS_STATE_RUNNING;
}

static void after_fork_parent(void)
{
	if (writer_locked_for_fork())
		ss_writer_fork_parent();
}

static void after_fork_child(void)
{
	int state = atomic_load(&ss_hot.state);
	ss_writer_fork_child(); /* re-initializes the lock the parent held across fork */
	pthread_mutex_init(&start_lock, NULL);
	if (state == SS_STATE_RUNNING || state == SS_STATE_READY) {
		atomic_fetch_add(&ss_hot.generation, 1);
		ss_ring_forget_all();
		ss_range_reset();
		ss_nccl_fork_child();
		ss_native_fork_child();
		ss_python_fork_child();
		ss_cupti_fork_child();
		ss_gate_fork_child();
		ss_capture_fork_child();
		ss_process.start_mono_ns = ss_mono_ns();
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ss_process.start_realtime_ns = (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
		int child_records = strcmp(ss_config.SYNCSPY_FORK, "off") != 0;
		atomic_store(&ss_hot.state, child_records ? SS_STATE_READY : SS_STATE_CLOSED);
	}
}

/* ------------------------------------------------------------------ load, start, stop */

static void load(void)
{
	ss_config_load();
	if (ss_config.SYNCSPY_DISABLE) {
		atomic_store(&ss_hot.state, SS_STATE_CLOSED);
		return;
	}
	ss_clock_init(strcmp(ss_config.SYNCSPY_CLOCK, "mono") != 0);
	ss_hot.enqueue_timing = ss_config.SYNCSPY_ENQUEUE_TIMING;
	ss_process.start_mono_ns = ss_mono_ns();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ss_process.start_realtime_ns = (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
	rank_from_environment();
	ss_capture_load(); /* after start_mono_ns: SYNCSPY_DELAY counts from it */
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	atomic_store(&ss_hot.state, SS_STATE_READY);
}

void ss_load(void)
{
	pthread_once(&load_once, load);
}

void ss_start(void)
{
	if (atomic_load(&ss_hot.state) != SS_STATE_READY)
		return;
	pthread_mutex_lock(&start_lock);
	if (atomic_load(&ss_hot.state) == SS_STATE_READY) {
		ss_note_versions();
		if (ss_writer_start() == 0) {
			atomic_store(&ss_hot.state, SS_STATE_RUNNING);
			install_signal_handlers();
			if (ss_config.SYNCSPY_CUPTI && !ss_capturing())
				ss_cupti_capture(
				    0); /* starts off outside a capture range (SHIM-6) */
			/* aggregate mode's bounded GPU timeline unless asked otherwise (CUPTI-7) */
			const char *sample = ss_config.SYNCSPY_CUPTI_SAMPLE;
			if (ss_aggregate_mode && strcmp(sample, "auto") == 0)
				sample = SS_CUPTI_SAMPLE_AGGREGATE;
			if (ss_config.SYNCSPY_CUPTI)
				ss_cupti_start(ss_config.SYNCSPY_CUPTI_KINDS, sample,
					       ss_config.SYNCSPY_CUPTI_PAUSE);
		} else {
			atomic_store(&ss_hot.state, SS_STATE_CLOSED);
		}
	}
	pthread_mutex_unlock(&start_lock);
}

void ss_first_call(struct ss_tls *tls)
{
	int saved_errno = errno;
	tls->depth++;
	ss_load();
	ss_start();
	tls->depth--;
	errno = saved_errno;
}

static void stop(const char *reason)
{
	pthread_mutex_lock(&start_lock);
	if (atomic_load(&ss_hot.state) == SS_STATE_RUNNING)
		ss_cupti_flush(); /* on this thread: the writer makes no CUDA/CUPTI call (SHIM-4) */
	if (atomic_load(&ss_hot.state) == SS_STATE_RUNNING)
		ss_writer_finalize(reason);
	pthread_mutex_unlock(&start_lock);
}

__attribute__((constructor)) static void on_load(void)
{
	ss_load();
}

__attribute__((destructor)) static void on_unload(void)
{
	stop("exit");
	atomic_store(&ss_hot.state, SS_STATE_CLOSED);
}

/* ------------------------------------------------------------------ exit handlers */

extern void *__dso_handle; /* this object's, for the notice's registration */

static void exit_notice(void *unused)
{
	(void)unused;
	int saved_errno = errno;
	ss_cupti_exit_notice(); /* CUPTI-14 */
	errno = saved_errno;
}

/* SHIM-8: every exit handler registered by another object (a C++ static's destructor, an
 * atexit call: libc_nonshared's atexit calls this) is followed by the notice, so that the notice
 * is always the newest and runs first at exit. glibc keeps the handlers in a list it grows as
 * needed: the notice costs an entry per registration, and only its first run does anything. */
SS_PRE_INIT SS_EXPORT int __cxa_atexit(void (*handler)(void *), void *arg, void *dso)
{
	/* SS_PRE_INIT: a sanitizer's runtime registers its own handler while it starts (TSan
	 * crashed in the instrumented entry of this function: t857) */
	static int (*_Atomic real)(void (*)(void *), void *, void *);
	if (!real)
		real = (int (*)(void (*)(void *), void *, void *))dlsym(RTLD_NEXT, "__cxa_atexit");
	if (!real)
		return -1;
	int result = real(handler, arg, dso);
	if (result == 0 && handler != exit_notice) {
		int saved_errno = errno;
		real(exit_notice, NULL, &__dso_handle);
		errno = saved_errno;
	}
	return result;
}

/* ------------------------------------------------------------------ exec */

/* Finishes the database before the image is replaced. If exec fails, the next recorded call
 * starts a new database (the rings and their unread records stay). */
static void before_exec(void)
{
	int saved_errno = errno;
	stop("exec");
	pthread_mutex_lock(&start_lock);
	if (atomic_load(&ss_hot.state) == SS_STATE_CLOSED && !ss_config.SYNCSPY_DISABLE &&
	    load_once != PTHREAD_ONCE_INIT)
		atomic_store(&ss_hot.state, SS_STATE_READY);
	pthread_mutex_unlock(&start_lock);
	errno = saved_errno;
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

SS_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(execve)(path, argv, envp);
}

SS_EXPORT int execv(const char *path, char *const argv[])
{
	before_exec();
	return REAL(execv)(path, argv);
}

SS_EXPORT int execvp(const char *file, char *const argv[])
{
	before_exec();
	return REAL(execvp)(file, argv);
}

SS_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(execvpe)(file, argv, envp);
}

SS_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(fexecve)(fd, argv, envp);
}

/* execl, execlp, execle: glibc builds the argument vector and calls execve/execvpe
 * internally, where no interposer sees it; so these collect it themselves and go through the
 * vector forms above. */
enum exec_list_kind { EXEC_PATH, EXEC_SEARCH, EXEC_ENV };

static int exec_list(enum exec_list_kind kind, const char *target, const char *arg0, va_list ap)
{
	size_t n = 1;
	va_list count;
	va_copy(count, ap);
	while (va_arg(count, char *))
		n++;
	va_end(count);
	char **argv = malloc((n + 1) * sizeof(*argv));
	if (!argv) {
		errno = ENOMEM;
		return -1;
	}
	argv[0] = (char *)arg0;
	for (size_t i = 1; i <= n; i++)
		argv[i] = va_arg(ap, char *); /* the last one read is the terminating NULL */
	int rc;
	if (kind == EXEC_ENV)
		rc = execve(target, argv, va_arg(ap, char *const *));
	else if (kind == EXEC_SEARCH)
		rc = execvp(target, argv);
	else
		rc = execv(target, argv);
	free(argv);
	return rc;
}

#define DEFINE_EXEC_LIST(name, kind)                                                               \
	SS_EXPORT int name(const char *target, const char *arg, ...)                               \
	{                                                                                          \
		va_list ap;                                                                        \
		va_start(ap, arg);                                                                 \
		int rc = exec_list(kind, target, arg, ap);                                         \
		va_end(ap);                                                                        \
		return rc;                                                                         \
	}
DEFINE_EXEC_LIST(execl, EXEC_PATH)
DEFINE_EXEC_LIST(execlp, EXEC_SEARCH)
DEFINE_EXEC_LIST(execle, EXEC_ENV)

/* ------------------------------------------------------------------ signals */

static const int watched_signals[] = {SIGINT, SIGTERM};
static struct sigaction program_action[NSIG]; /* what the program asked for */
static volatile sig_atomic_t shim_handler_installed[NSIG];
static pthread_mutex_t signal_lock = PTHREAD_MUTEX_INITIALIZER;

SS_PRE_INIT static int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	static int (*_Atomic fn)(int, const struct sigaction *, struct sigaction *);
	if (!fn)
		fn = dlsym(RTLD_NEXT, "sigaction");
	return fn(sig, act, old);
}

static void on_signal(int sig, siginfo_t *info, void *context)
{
	int saved_errno = errno;
	struct sigaction program = program_action[sig];
	if (!(program.sa_flags & SA_SIGINFO) && program.sa_handler == SIG_DFL) {
		/* The signal will end the process: finish the database, then let it. */
		ss_writer_signal_flush(1);
		struct sigaction dfl = {.sa_handler = SIG_DFL};
		sigemptyset(&dfl.sa_mask);
		real_sigaction(sig, &dfl, NULL);
		shim_handler_installed[sig] = 0;
		errno = saved_errno;
		raise(sig); /* blocked until this handler returns, then delivered */
		return;
	}
	ss_writer_signal_flush(0);
	if (program.sa_flags & SA_RESETHAND) {
		program_action[sig].sa_handler = SIG_DFL;
		program_action[sig].sa_flags &= ~SA_SIGINFO;
	}
	errno = saved_errno;
	if (program.sa_flags & SA_SIGINFO)
		program.sa_sigaction(sig, info, context);
	else if (program.sa_handler != SIG_IGN)
		program.sa_handler(sig);
}

/* The shim's handler, with the program's mask and restart behaviour. */
static void install_for(int sig)
{
	struct sigaction mine = {.sa_sigaction = on_signal};
	mine.sa_mask = program_action[sig].sa_mask;
	mine.sa_flags =
	    SA_SIGINFO | (program_action[sig].sa_flags & (SA_RESTART | SA_NODEFER | SA_ONSTACK));
	if (real_sigaction(sig, &mine, NULL) == 0)
		shim_handler_installed[sig] = 1;
}

static void install_signal_handlers(void)
{
	pthread_mutex_lock(&signal_lock);
	for (size_t i = 0; i < sizeof(watched_signals) / sizeof(watched_signals[0]); i++) {
		int sig = watched_signals[i];
		if (shim_handler_installed[sig])
			continue;
		if (real_sigaction(sig, NULL, &program_action[sig]) != 0)
			continue;
		/* An ignored signal ends nothing: leave it alone. */
		if (!(program_action[sig].sa_flags & SA_SIGINFO) &&
		    program_action[sig].sa_handler == SIG_IGN)
			continue;
		install_for(sig);
	}
	pthread_mutex_unlock(&signal_lock);
}

/* DRIVER-5: TSan installs its own handlers through here while it initializes. */
SS_PRE_INIT SS_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig <= 0 || sig >= NSIG || !shim_handler_installed[sig])
		return real_sigaction(sig, act, old);
	pthread_mutex_lock(&signal_lock);
	if (old)
		*old = program_action[sig];
	int rc = 0;
	if (act) {
		if (!(act->sa_flags & SA_SIGINFO) && act->sa_handler == SIG_IGN) {
			/* ignoring: step aside, so the kernel discards it as it would */
			rc = real_sigaction(sig, act, NULL);
			if (rc == 0)
				shim_handler_installed[sig] = 0;
		}
		if (rc == 0) {
			program_action[sig] = *act;
			if (shim_handler_installed[sig])
				install_for(sig);
		}
	}
	pthread_mutex_unlock(&signal_lock);
	return rc;
}

SS_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	if (sig <= 0 || sig >= NSIG || !shim_handler_installed[sig]) {
		static sighandler_t (*_Atomic real_signal)(int, sighandler_t);
		if (!real_signal)
			real_signal = dlsym(RTLD_NEXT, "signal");
		return real_signal(sig, handler);
	}
	struct sigaction act = {.sa_handler = handler, .sa_flags = SA_RESTART}, old;
	sigemptyset(&act.sa_mask);
	if (sigaction(sig, &act, &old) != 0)
		return SIG_ERR;
	if (old.sa_flags & SA_SIGINFO) /* signal() cannot say it; as glibc, hand back the pointer */
		return (sighandler_t)(void (*)(void))old.sa_sigaction;
	return old.sa_handler;
}
