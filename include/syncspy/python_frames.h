/*
 * syncspy/python_frames.h: which Python frames are the frameworks', shared by the shim (the
 * writer picks a stack's site by it, interpose/sites.c; python.c's guard finds the user's frame)
 * and the command (report/rules/host_sync.c walks a recorded stack to the line that calls a
 * model), so that both draw the line between user code and the frameworks at the same place
 * (docs/attribution.md, "The user call site").
 *
 * Inline and libc-only (glibc's memmem: both halves build with _GNU_SOURCE), as sample.h: the two
 * halves share no library, and the shim calls it on its writer thread without allocating.
 */
#ifndef SYNCSPY_PYTHON_FRAMES_H
#define SYNCSPY_PYTHON_FRAMES_H

#include <stdio.h>
#include <string.h>

/* A Python file of the frameworks, the libraries or the interpreter: site-packages,
 * dist-packages, the standard library, or a frozen module ("<frozen ...>"). FILE is a frame's
 * file, or a frame line "file:line in function" (which starts with it), ended by its NUL. */
static inline int ss_framework_python_file(const char *file)
{
	return file[0] == '<' || strstr(file, "/site-packages/") != NULL ||
	       strstr(file, "/dist-packages/") != NULL || strstr(file, "/lib/python3.") != NULL ||
	       strstr(file, "/lib64/python3.") != NULL;
}

/* The frame through which a module of torch.nn is called (nn.Module.__call__). */
#define SS_MODULE_CALL_FILE "/torch/nn/modules/module.py:"

/* The line that calls the model in a Python stack's frames (innermost first, one per line): the
 * first user frame outside the outermost nn.Module call, copied into line (size bytes); 0 when
 * the stack has no module call or no user frame outside it. */
static inline int ss_python_model_call_line(const char *frames, char *line, size_t size)
{
	const char *outermost_module = NULL, *p;

	for (p = frames; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (memmem(p, strcspn(p, "\n"), SS_MODULE_CALL_FILE, strlen(SS_MODULE_CALL_FILE)))
			outermost_module = p;
	if (!outermost_module)
		return 0;
	for (p = strchr(outermost_module, '\n'); p && *++p; p = strchr(p, '\n')) {
		size_t length = strcspn(p, "\n");
		char frame[1024];

		snprintf(frame, sizeof(frame), "%.*s", (int)length, p);
		if (!ss_framework_python_file(frame) && strstr(frame, " in ")) {
			snprintf(line, size, "%s", frame);
			return 1;
		}
	}
	return 0;
}

/* SITE-1 (docs/attribution.md): whether a Python stack's frames inside its first user frame
 * (innermost first, one per line) hold a framework's hook, which runs for every saved tensor or
 * module call wherever the program switched it on: a framework's hook function (torch's module
 * hooks, its quantization's observer hook), torch/autograd/graph.py's saved-tensor hooks
 * (save_on_cpu) or torch.ao's quantization modules, which prepare_qat put in place of the
 * program's layers. */
static inline int ss_python_hook_stack(const char *frames)
{
	for (const char *p = frames; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		size_t length = strcspn(p, "\n");
		char frame[1024];

		snprintf(frame, sizeof(frame), "%.*s", (int)length, p);
		if (!ss_framework_python_file(frame))
			return 0; /* the first user frame: no hook inside it */
		const char *in = strstr(frame, " in ");
		if (!in)
			continue;
		if (strstr(frame, "/torch/autograd/graph.py:"))
			return strcmp(in + 4, "_engine_run_backward") != 0; /* PYTHON-1's waiter */
		if (strstr(in + 4, "hook") || strstr(frame, "/torch/ao/"))
			return 1;
	}
	return 0;
}

#endif
