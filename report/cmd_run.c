/*
 * report/cmd_run.c: `syncspy run [-o DIR] [--cupti|--no-cupti] [--cupti-sample auto|all|ON/PERIOD]
 * [--cupti-pause disable|detach] [--delay S] [--duration S] [--capture-range cudaProfilerApi|nvtx]
 * [--nvtx-capture NAME] [--aggregate] -- CMD ARGS...`, recording a program (a launcher such as
 * torchrun or mpirun, or a shell script, and all their children) without writing LD_PRELOAD by
 * hand.
 *
 * It sets LD_PRELOAD (libsyncspy.so first, the caller's own preloads kept after it),
 * SYNCSPY_OUTPUT (absolute, so that a child that changes directory still writes there),
 * NVTX_INJECTION64_PATH (libsyncspy.so, so NVTX ranges are recorded: unless the caller set it
 * to another tool) and, with --cupti/--no-cupti, --cupti-sample and --cupti-pause, SYNCSPY_CUPTI,
 * SYNCSPY_CUPTI_SAMPLE and SYNCSPY_CUPTI_PAUSE, with the capture options (as nsys's) SYNCSPY_DELAY,
 * SYNCSPY_DURATION, SYNCSPY_CAPTURE_RANGE and SYNCSPY_NVTX_CAPTURE, with --aggregate
 * SYNCSPY_MODE=aggregate (runs of hours: docs/recording.md, "Aggregate mode"); every other variable
 * (NCCL_*, CUDA_*, the caller's SYNCSPY_*) reaches CMD unchanged. Then it runs CMD, waits, prints a
 * short summary of the databases written during the run on stderr and exits with CMD's status, as a
 * shell would: CMD's exit code, 128+N when a signal N ended it, 127 when CMD cannot be found.
 *
 * Signals (RUN-1): CMD stays in syncspy's process group, so a ^C on the terminal reaches both
 * directly. syncspy forwards to CMD only the SIGINT/SIGTERM/SIGHUP/SIGQUIT that someone sent to
 * syncspy itself with kill() (a batch scheduler, a CI runner's timeout); a signal the kernel
 * generated (the terminal's ^C) already reached CMD and is not sent twice. syncspy itself does
 * not die from them: it waits for CMD, whose database must be finished before the summary.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"

#include "commands.h"
#include "db.h"
#include "text_safe.h"
#include "syncspy/env.h"
#include "syncspy/mkdir_p.h"
#include "syncspy/sample.h"

#define SHIM_NAME	    "libsyncspy.so"
#define SHELL_NOT_FOUND	    127 /* what sh exits with when it cannot find a command */
#define SHELL_NOT_RUNNABLE  126 /* found, but not executable */
#define FILE_CLOCK_SLACK_NS 50000000L

/* The signals RUN-1 forwards. SIGCHLD is waited for with them, in one sigwaitinfo loop. */
static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/* ------------------------------------------------------------------ finding the shim */

static int is_readable_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
}

/*
 * $SYNCSPY_LIB, else next to the installed binary (PREFIX/bin/syncspy -> PREFIX/lib), else the
 * build tree (report/syncspy -> interpose/libsyncspy.so). Returns a malloc'd absolute path, or
 * NULL with the places tried in tried.
 */
static char *find_shim(char *tried, size_t triedlen)
{
	const char *env = getenv("SYNCSPY_LIB");
	static const char *const relative[] = {"/../lib/" SHIM_NAME, "/../interpose/" SHIM_NAME};
	char exe[PATH_MAX], *slash, *path, *resolved;
	ssize_t n;

	if (env && *env) {
		snprintf(tried, triedlen, "$SYNCSPY_LIB=%s", env);
		if (!is_readable_file(env))
			return NULL;
		/* Absolute, so that a child that changes directory still preloads it. */
		resolved = realpath(env, NULL);
		return resolved ? resolved : strdup(env);
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		snprintf(tried, triedlen, "/proc/self/exe (%s)", strerror(errno));
		return NULL;
	}
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	tried[0] = '\0';
	for (size_t i = 0; i < sizeof(relative) / sizeof(relative[0]); i++) {
		if (asprintf(&path, "%s%s", exe, relative[i]) < 0)
			return NULL;
		if (is_readable_file(path)) {
			resolved = realpath(path, NULL);
			if (resolved) {
				free(path);
				return resolved;
			}
			return path;
		}
		snprintf(tried + strlen(tried), triedlen - strlen(tried), "%s%s", i ? ", " : "",
			 path);
		free(path);
	}
	return NULL;
}

/* ------------------------------------------------------------------ the environment */

/* Whether the colon- or space-separated list (LD_PRELOAD's syntax) holds item. */
static int list_contains(const char *list, const char *item)
{
	size_t len = strlen(item);

	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ": ");

		if (n == len && strncmp(p, item, len) == 0)
			return 1;
		p += n;
		p += strspn(p, ": ");
	}
	return 0;
}

/* The shim first (it must see the calls before any other preload does), the caller's after. A
 * sanitizer build's shim (configure --enable-sanitizers) needs the sanitizer runtime loaded
 * before it in a program not built with it: that runtime goes first. */
static int set_preload(const char *shim)
{
	const char *old = getenv("LD_PRELOAD");
#ifdef SS_SANITIZER_PRELOAD
	const char *first = SS_SANITIZER_PRELOAD ":";
#else
	const char *first = "";
#endif
	char *value;
	int rc;

	if (old && *old && list_contains(old, shim))
		return 0;
	if (!old)
		old = "";
	if (asprintf(&value, "%s%s%s%s", first, shim, *old ? ":" : "", old) < 0)
		return -1;
	rc = setenv("LD_PRELOAD", value, 1);
	free(value);
	return rc;
}

/* The output directory, created and made absolute. Returns a malloc'd path, or NULL (errno). */
static char *prepare_output(const char *dir)
{
	char *absolute;

	if (ss_mkdir_p(dir) != 0)
		return NULL;
	absolute = realpath(dir, NULL);
	if (absolute && access(absolute, W_OK | X_OK) != 0) {
		free(absolute);
		return NULL;
	}
	return absolute;
}

/* ------------------------------------------------------------------ running CMD */

/*
 * Waits for child, forwarding the signals of RUN-1, and returns its wait status. All of
 * forwarded_signals and SIGCHLD are blocked in the caller, so none is lost between checks.
 */
static int wait_forwarding(pid_t child, const sigset_t *waited)
{
	for (;;) {
		siginfo_t info;
		int status, sig;
		pid_t done = waitpid(child, &status, WNOHANG);

		if (done == child)
			return status;
		if (done < 0 && errno != EINTR)
			return -1;
		sig = sigwaitinfo(waited, &info);
		if (sig < 0 || sig == SIGCHLD)
			continue;
		/* SI_USER/SI_QUEUE/SI_TKILL: sent by a process; anything else came from the kernel
		 * (the terminal's ^C), which delivered it to CMD's process group already. */
		if ((info.si_code == SI_USER || info.si_code == SI_QUEUE ||
		     info.si_code == SI_TKILL) &&
		    info.si_pid != child)
			kill(child, sig);
	}
}

/* The child side of fork: the caller's signal mask and dispositions back, then exec. */
static void exec_command(char **argv, const sigset_t *old_mask, const struct sigaction *old_sigchld,
			 int exec_pipe)
{
	int err;

	sigaction(SIGCHLD, old_sigchld, NULL);
	sigprocmask(SIG_SETMASK, old_mask, NULL);
	execvp(argv[0], argv);
	err = errno;
	if (err == ENOENT)
		fprintf(stderr, "syncspy: run: %s: command not found\n", argv[0]);
	else
		fprintf(stderr, "syncspy: run: %s: %s\n", argv[0], strerror(err));
	/* One byte on the close-on-exec pipe: the parent learns that CMD never started. */
	if (write(exec_pipe, "x", 1) < 0)
		_exit(SHELL_NOT_RUNNABLE);
	_exit(err == ENOENT ? SHELL_NOT_FOUND : SHELL_NOT_RUNNABLE);
}

/* After the child is gone: a byte on the pipe means exec failed; EOF means CMD ran. */
static int exec_failed(int exec_pipe)
{
	char byte;

	return read(exec_pipe, &byte, 1) == 1;
}

/* ------------------------------------------------------------------ the summary */

/* The command to read the recording with: `report` once that subcommand is built, else info. */
static const char *reading_command(void)
{
#define SS_HAS_REPORT(name, args, summary, options)                                                \
	if (strcmp(#name, "report") == 0)                                                          \
		return "report";
	SS_COMMANDS(SS_HAS_REPORT)
#undef SS_HAS_REPORT
	return "info";
}

/* The rank (or "-") and the sync points of one database: S1-S7 rows, as the shim counts them;
 * its calls: rows, and in aggregate mode the enqueues its aggregates counted (meta, so that the
 * query needs no table a trace-mode database lacks). */
#define SUMMARY_SQL                                                                                \
	"SELECT coalesce((SELECT value FROM meta WHERE key = 'rank'), '-'),"                       \
	" (SELECT count(*) FROM calls c JOIN classes k ON k.class = c.class WHERE k.sync_point),"  \
	" (SELECT count(*) FROM calls) + coalesce((SELECT value FROM meta WHERE key ="             \
	"  'aggregate_enqueues' AND typeof(value) = 'integer'), 0),"                               \
	" EXISTS (SELECT 1 FROM meta WHERE key = 'exit_reason'),"                                  \
	" EXISTS (SELECT 1 FROM meta WHERE key = 'mode' AND value = 'aggregate')"

/* Whether path was modified at or after start (the run's own databases, not older ones). */
static int written_since(const char *path, const struct timespec *start)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return 0;
	return st.st_mtim.tv_sec > start->tv_sec ||
	       (st.st_mtim.tv_sec == start->tv_sec && st.st_mtim.tv_nsec >= start->tv_nsec);
}

static void print_summary(const char *dir, const struct timespec *start)
{
	struct ss_db_list list = {0};
	char err[1024], *arg = (char *)dir;
	size_t written = 0;
	const char *next = reading_command();

	/* A run that recorded nothing (no CUDA, or SYNCSPY_DISABLE=1) leaves no database. */
	if (ss_db_expand(1, &arg, &list, err, sizeof(err)) != SS_EXIT_OK)
		list.count = 0;
	for (size_t i = 0; i < list.count; i++)
		written += written_since(list.paths[i], start);
	if (written == 0) {
		fprintf(stderr,
			"syncspy: run: no database written to %s (no CUDA or NCCL call seen)\n",
			dir);
		ss_db_list_free(&list);
		return;
	}
	fprintf(stderr, "syncspy: run: %zu database%s in %s:\n", written, written == 1 ? "" : "s",
		dir);
	for (size_t i = 0; i < list.count; i++) {
		const char *path = list.paths[i], *name = strrchr(path, '/');
		sqlite3 *db;
		sqlite3_stmt *stmt;

		if (!written_since(path, start))
			continue;
		name = name ? name + 1 : path;
		if (ss_db_open(path, &db, err, sizeof(err)) != SS_EXIT_OK) {
			ss_print_line(stderr, "  %s: %s", name, err);
			continue;
		}
		if (sqlite3_prepare_v2(db, SUMMARY_SQL, -1, &stmt, NULL) == SQLITE_OK &&
		    sqlite3_step(stmt) == SQLITE_ROW)
			ss_print_line(stderr, "  rank %s: %lld sync points, %lld calls%s: %s%s",
				      (const char *)sqlite3_column_text(stmt, 0),
				      (long long)sqlite3_column_int64(stmt, 1),
				      (long long)sqlite3_column_int64(stmt, 2),
				      sqlite3_column_int(stmt, 4) ? " (enqueues aggregated)" : "",
				      name, sqlite3_column_int(stmt, 3) ? "" : " (unfinished)");
		else
			ss_print_line(stderr, "  %s: %s", name, sqlite3_errmsg(db));
		sqlite3_finalize(stmt);
		sqlite3_close(db);
	}
	fprintf(stderr, "syncspy: run: next: syncspy %s %s\n", next, dir);
	ss_db_list_free(&list);
}

/* ------------------------------------------------------------------ the command */

enum {
	OPT_CUPTI = 256,
	OPT_NO_CUPTI,
	OPT_CUPTI_SAMPLE,
	OPT_DELAY,
	OPT_DURATION,
	OPT_CAPTURE_RANGE,
	OPT_NVTX_CAPTURE,
	OPT_AGGREGATE,
	OPT_CUPTI_PAUSE
};

/* --delay, --duration: seconds, a decimal >= 0 (the shim reads the same, capture.c). */
static int is_seconds(const char *text)
{
	char *end;
	double s;

	errno = 0;
	s = strtod(text, &end);
	return !errno && end != text && !*end && s >= 0 && s <= 1e9;
}

int cmd_run(int argc, char **argv)
{
	static const struct option options[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"cupti", no_argument, NULL, OPT_CUPTI},
	    {"no-cupti", no_argument, NULL, OPT_NO_CUPTI},
	    {"cupti-sample", required_argument, NULL, OPT_CUPTI_SAMPLE},
	    {"cupti-pause", required_argument, NULL, OPT_CUPTI_PAUSE},
	    {"delay", required_argument, NULL, OPT_DELAY},
	    {"duration", required_argument, NULL, OPT_DURATION},
	    {"capture-range", required_argument, NULL, OPT_CAPTURE_RANGE},
	    {"nvtx-capture", required_argument, NULL, OPT_NVTX_CAPTURE},
	    {"aggregate", no_argument, NULL, OPT_AGGREGATE},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *output = SS_DEFAULT_OUTPUT_DIR, *cupti = NULL, *sample = NULL, *mode = NULL,
		   *pause = NULL;
	/* capture ranges (docs/recording.md, "Capture ranges") */
	const char *delay = NULL, *duration = NULL, *capture_range = NULL, *nvtx_capture = NULL;
	unsigned long long on_ms, period_ms;
	char tried[2 * PATH_MAX + 64], *shim, *dir;
	struct sigaction dfl = {.sa_handler = SIG_DFL}, old_sigchld;
	struct timespec start;
	sigset_t waited, old_mask;
	pid_t child;
	int ch, status, exec_pipe[2];

	opterr = 0;
	optind = 0;
	/* '+': options end at CMD, so that CMD's own options are left to it (no `--` needed). */
	while ((ch = getopt_long(argc, argv, "+:o:h", options, NULL)) != -1) {
		switch (ch) {
		case 'o':
			output = optarg;
			break;
		case OPT_CUPTI:
			cupti = "1";
			break;
		case OPT_NO_CUPTI:
			cupti = "0";
			break;
		case OPT_CUPTI_SAMPLE:
			if (!ss_parse_sample(optarg, &on_ms, &period_ms))
				return ss_error(SS_EXIT_INPUT, "run: --cupti-sample %s: not %s",
						optarg, SS_SAMPLE_SYNTAX);
			sample = optarg;
			break;
		case OPT_CUPTI_PAUSE: /* CUPTI-8: the shim warns of others, run refuses them */
			if (strcmp(optarg, "disable") != 0 && strcmp(optarg, "detach") != 0)
				return ss_error(SS_EXIT_INPUT,
						"run: --cupti-pause %s: not disable or detach",
						optarg);
			pause = optarg;
			break;
		case OPT_DELAY:
		case OPT_DURATION:
			if (!is_seconds(optarg))
				return ss_error(SS_EXIT_INPUT,
						"run: --%s %s: not a number of seconds",
						ch == OPT_DELAY ? "delay" : "duration", optarg);
			*(ch == OPT_DELAY ? &delay : &duration) = optarg;
			break;
		case OPT_CAPTURE_RANGE:
			if (strcmp(optarg, "cudaProfilerApi") != 0 && strcmp(optarg, "nvtx") != 0)
				return ss_error(
				    SS_EXIT_INPUT,
				    "run: --capture-range %s: not cudaProfilerApi or nvtx", optarg);
			capture_range = optarg;
			break;
		case OPT_NVTX_CAPTURE:
			if (!*optarg)
				return ss_error(SS_EXIT_INPUT,
						"run: --nvtx-capture needs a range name");
			nvtx_capture = optarg;
			break;
		case OPT_AGGREGATE:
			mode = "aggregate";
			break;
		case 'h':
			ss_command_usage(stdout, "run");
			return SS_EXIT_OK;
		default:
			return ss_bad_option("run", ch, argv);
		}
	}
	if (optind >= argc)
		return ss_error(SS_EXIT_INPUT, "run: no command given (syncspy run [-o DIR] -- CMD "
					       "ARGS...)");
	if (!*output)
		return ss_error(SS_EXIT_INPUT, "run: -o needs a directory");
	/* --nvtx-capture NAME is --capture-range nvtx's name, and implies it */
	if (nvtx_capture && capture_range && strcmp(capture_range, "nvtx") != 0)
		return ss_error(SS_EXIT_INPUT,
				"run: --nvtx-capture goes with --capture-range nvtx");
	if (nvtx_capture)
		capture_range = "nvtx";
	if (capture_range && !strcmp(capture_range, "nvtx") && !nvtx_capture)
		return ss_error(SS_EXIT_INPUT,
				"run: --capture-range nvtx needs --nvtx-capture NAME");

	shim = find_shim(tried, sizeof(tried));
	if (!shim)
		return ss_error(SS_EXIT_INPUT,
				"run: cannot find %s (tried %s); set SYNCSPY_LIB to its path",
				SHIM_NAME, tried);
	dir = prepare_output(output);
	if (!dir) {
		ss_error(SS_EXIT_INPUT, "run: output directory %s: %s", output, strerror(errno));
		free(shim);
		return SS_EXIT_INPUT;
	}
	if (set_preload(shim) != 0 || setenv("SYNCSPY_OUTPUT", dir, 1) != 0 ||
	    setenv("NVTX_INJECTION64_PATH", shim, 0) != 0 ||
	    (cupti && setenv("SYNCSPY_CUPTI", cupti, 1) != 0) ||
	    (sample && setenv("SYNCSPY_CUPTI_SAMPLE", sample, 1) != 0) ||
	    (pause && setenv("SYNCSPY_CUPTI_PAUSE", pause, 1) != 0) ||
	    (delay && setenv("SYNCSPY_DELAY", delay, 1) != 0) ||
	    (duration && setenv("SYNCSPY_DURATION", duration, 1) != 0) ||
	    (capture_range && setenv("SYNCSPY_CAPTURE_RANGE", capture_range, 1) != 0) ||
	    (nvtx_capture && setenv("SYNCSPY_NVTX_CAPTURE", nvtx_capture, 1) != 0) ||
	    (mode && setenv("SYNCSPY_MODE", mode, 1) != 0)) {
		free(shim);
		free(dir);
		return ss_error(SS_EXIT_INTERNAL, "run: out of memory");
	}

	/* Blocked before fork, so that a signal sent right after cannot be lost (RUN-1). A
	 * SIGCHLD set to SIG_IGN would reap CMD behind our back: back to the default. */
	sigemptyset(&waited);
	for (size_t i = 0; i < sizeof(forwarded_signals) / sizeof(forwarded_signals[0]); i++)
		sigaddset(&waited, forwarded_signals[i]);
	sigaddset(&waited, SIGCHLD);
	sigaction(SIGCHLD, &dfl, &old_sigchld);
	sigprocmask(SIG_BLOCK, &waited, &old_mask);
	clock_gettime(CLOCK_REALTIME, &start);
	/* File times come from the kernel's coarse clock, up to a tick behind this one. */
	start.tv_nsec -= FILE_CLOCK_SLACK_NS;
	if (start.tv_nsec < 0) {
		start.tv_nsec += 1000000000L;
		start.tv_sec -= 1;
	}

	fflush(NULL);
	child = pipe2(exec_pipe, O_CLOEXEC) == 0 ? fork() : -1;
	if (child < 0) {
		int err = errno;

		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		free(shim);
		free(dir);
		return ss_error(SS_EXIT_INTERNAL, "run: fork: %s", strerror(err));
	}
	if (child == 0)
		exec_command(argv + optind, &old_mask, &old_sigchld, exec_pipe[1]);
	close(exec_pipe[1]);

	status = wait_forwarding(child, &waited);
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	sigaction(SIGCHLD, &old_sigchld, NULL);

	/* CMD that never ran wrote nothing: its one message is enough. */
	if (!exec_failed(exec_pipe[0]))
		print_summary(dir, &start);
	close(exec_pipe[0]);
	free(shim);
	free(dir);
	if (status == -1)
		return ss_error(SS_EXIT_INTERNAL, "run: waitpid: %s", strerror(errno));
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
