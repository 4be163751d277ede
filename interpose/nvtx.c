/*
 * interpose/nvtx.c: syncspy as an NVTX injection library, so sync points can be counted per
 * NVTX range (`torch.cuda.nvtx.range("step")`, nvtxRangePushA/Pop, nvtxRangeStartA/End), and a
 * way to mark steps without NVTX (syncspy_step).
 *
 * NVTX (header-only, compiled into the program) loads the library named by
 * NVTX_INJECTION64_PATH and calls its InitializeInjectionNvtx2, which fills NVTX's function
 * tables with the functions below. `syncspy run` sets the variable to libsyncspy.so; with plain
 * LD_PRELOAD, set it to the same path (docs/attribution.md).
 *
 * Each push, pop, start, end and step becomes a record in the calling thread's ring (a range's
 * name is copied: the writer frees it), and the writer pairs them into the `ranges` table.
 * NVTX calls are the program's own markers, a few per step: the copy is not on the hot path of
 * CUDA calls that SHIM-1 protects.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>

#include "aggregate.h" /* ss_stepping_tid */
#include "capture.h"
#include "clock.h"
#include "env.h"
#include "lifecycle.h"
#include "ring.h"
#include "shim.h"
#include "cupti/cupti.h"
#include "syncspy/syncspy.h" /* the exported functions below, as the program sees them */

static __thread int push_depth __attribute__((tls_model("initial-exec")));
/* In SYNCSPY_CAPTURE_RANGE=nvtx mode: bit L, the push at level L opened a capture range (its
 * pop closes it); deeper levels are not capture ranges. */
static __thread uint64_t capture_levels __attribute__((tls_model("initial-exec")));
/* start/end capture ranges open now (their ids), over all threads; past the table's size a
 * range is not a capture range */
#define CAPTURE_IDS 64
static _Atomic uint64_t capture_ids[CAPTURE_IDS];
static _Atomic uint64_t next_range_id = 1;

/* A marker record: api is one of SS_REC_NVTX_*, obj a malloc'd name (or NULL), aux the range
 * id (start/end) or the push depth. */
static void emit_marker(int kind, const char *name, uint64_t aux)
{
	struct ss_tls *tls = &ss_tls;
	if (!ss_should_record(tls))
		return;
	int capture_bits = atomic_load_explicit(&ss_hot.capture, memory_order_relaxed);
	if (ss_unlikely(capture_bits != 0) && !ss_capture_slow(tls, NULL, capture_bits))
		return; /* outside a capture range: no ranges row either (SHIM-6) */
	struct ss_rec rec = {.api = (uint16_t)kind, .aux = aux, .t_start = ss_now()};
	rec.t_end = rec.t_start;
	char *copy = name ? strdup(name) : NULL;
	rec.obj = (uintptr_t)copy;
	tls->depth++;
	struct ss_ring *ring = tls->ring;
	if (!ring || tls->generation != atomic_load(&ss_hot.generation))
		ring = ss_ring_attach(tls);
	/* the process's stepping thread (aggregate mode's step figures), known before the writer
	 * can read its first mark */
	pid_t none = 0;
	if (kind == SS_REC_STEP && ring &&
	    !atomic_load_explicit(&ss_stepping_tid, memory_order_relaxed))
		atomic_compare_exchange_strong(&ss_stepping_tid, &none, ring->tid);
	if (!ring || (ss_ring_close_poll(ring), !ss_ring_push(ring, &rec)))
		free(copy);
	tls->depth--;
}

static const char *attribute_name(const nvtxEventAttributes_t *attributes)
{
	if (attributes && attributes->messageType == NVTX_MESSAGE_TYPE_ASCII &&
	    attributes->message.ascii)
		return attributes->message.ascii;
	return "(unnamed)"; /* unicode and registered strings are not decoded */
}

static int NVTX_API range_push_a(const char *message)
{
	int level = push_depth++;
	/* a capture range opens before its push is emitted, so that the range has its row */
	if (level >= 0 && level < 64 && ss_capture_nvtx_open(message))
		capture_levels |= 1ull << level;
	emit_marker(SS_REC_NVTX_PUSH, message ? message : "(unnamed)", (uint64_t)level);
	return level;
}

static int NVTX_API range_push_ex(const nvtxEventAttributes_t *attributes)
{
	return range_push_a(attribute_name(attributes));
}

static int NVTX_API range_pop(void)
{
	if (push_depth == 0)
		return -1; /* NVTX's answer to a pop without a push */
	int level = --push_depth;
	emit_marker(SS_REC_NVTX_POP, NULL, (uint64_t)level);
	if (level < 64 && (capture_levels & (1ull << level))) { /* after its pop's row */
		capture_levels &= ~(1ull << level);
		ss_capture_nvtx_close();
	}
	return level;
}

static nvtxRangeId_t NVTX_API range_start_a(const char *message)
{
	uint64_t id = atomic_fetch_add(&next_range_id, 1);
	if (ss_capture_nvtx_open(message)) { /* before its start is emitted, as a push */
		int kept = 0;
		for (int i = 0; i < CAPTURE_IDS && !kept; i++) {
			uint64_t free_slot = 0;
			kept = atomic_compare_exchange_strong(&capture_ids[i], &free_slot, id);
		}
		if (!kept)
			ss_capture_nvtx_close();
	}
	emit_marker(SS_REC_NVTX_START, message ? message : "(unnamed)", id);
	return id;
}

static nvtxRangeId_t NVTX_API range_start_ex(const nvtxEventAttributes_t *attributes)
{
	return range_start_a(attribute_name(attributes));
}

static void NVTX_API range_end(nvtxRangeId_t id)
{
	emit_marker(SS_REC_NVTX_END, NULL, id);
	for (int i = 0; id && i < CAPTURE_IDS; i++) {
		uint64_t expected = id;
		if (atomic_compare_exchange_strong(&capture_ids[i], &expected, 0)) {
			ss_capture_nvtx_close();
			break;
		}
	}
}

static int NVTX_API domain_range_push_ex(nvtxDomainHandle_t domain,
					 const nvtxEventAttributes_t *attributes)
{
	return range_push_ex(attributes);
}

static int NVTX_API domain_range_pop(nvtxDomainHandle_t domain)
{
	return range_pop();
}

static nvtxRangeId_t NVTX_API domain_range_start_ex(nvtxDomainHandle_t domain,
						    const nvtxEventAttributes_t *attributes)
{
	return range_start_ex(attributes);
}

static void NVTX_API domain_range_end(nvtxDomainHandle_t domain, nvtxRangeId_t id)
{
	range_end(id);
}

/* Marks the start of a step on the calling thread; a step lasts until the thread's next call
 * (or the end of the recording). For programs without NVTX: from C, call it through dlsym; from
 * Python, ctypes.CDLL(None).syncspy_step(b"train"). */
SS_EXPORT void syncspy_step(const char *name)
{
	emit_marker(SS_REC_STEP, name ? name : "step", 0);
}

/* Pauses (0) or resumes (1) the GPU timeline (cupti/cupti.c, CUPTI-3), so that a program can
 * trace some steps and spare the others CUPTI's cost; host-side recording goes on. Returns 1
 * when the GPU timeline records after the call, 0 when it does not (paused, SYNCSPY_CUPTI=0,
 * CUPTI unavailable or held by another client). From Python:
 * ctypes.CDLL(None).syncspy_gpu_trace(0). */
SS_EXPORT int syncspy_gpu_trace(int on)
{
	ss_load();
	if (ss_config.SYNCSPY_DISABLE || !ss_config.SYNCSPY_CUPTI)
		return 0;
	return ss_cupti_trace(on); /* 0 built without CUPTI (cupti/stub.c) */
}

/* Capture ranges from the program (capture.h, SHIM-6): syncspy_start() records from now on,
 * syncspy_stop() records nothing until the next start, in every SYNCSPY_CAPTURE_RANGE mode.
 * Return 1 when calls are recorded after the call, 0 when not (or SYNCSPY_DISABLE=1). From
 * Python: ctypes.CDLL(None).syncspy_start(). */
SS_EXPORT int syncspy_start(void)
{
	ss_capture_trigger(1, "syncspy_start");
	return !ss_config.SYNCSPY_DISABLE && ss_capturing();
}

SS_EXPORT int syncspy_stop(void)
{
	ss_capture_trigger(0, "syncspy_stop");
	return !ss_config.SYNCSPY_DISABLE && ss_capturing();
}

static int fill(const NvtxExportTableCallbacks *callbacks, NvtxCallbackModule module,
		const int *ids, NvtxFunctionPointer const *functions, size_t n)
{
	NvtxFunctionTable table = NULL;
	unsigned int size = 0;
	if (!callbacks->GetModuleFunctionTable(module, &table, &size) || !table)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned int)ids[i] < size && table[ids[i]])
			*table[ids[i]] = functions[i];
	return 1;
}

SS_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
	ss_load();
	if (ss_config.SYNCSPY_DISABLE || !get_export_table)
		return 0;
	const NvtxExportTableCallbacks *callbacks = get_export_table(NVTX_ETID_CALLBACKS);
	if (!callbacks || callbacks->struct_size < sizeof(NvtxExportTableCallbacks))
		return 0;
	static const int core_ids[] = {NVTX_CBID_CORE_RangePushA,   NVTX_CBID_CORE_RangePushEx,
				       NVTX_CBID_CORE_RangePop,	    NVTX_CBID_CORE_RangeStartA,
				       NVTX_CBID_CORE_RangeStartEx, NVTX_CBID_CORE_RangeEnd};
	NvtxFunctionPointer const core[] = {
	    (NvtxFunctionPointer)range_push_a,	 (NvtxFunctionPointer)range_push_ex,
	    (NvtxFunctionPointer)range_pop,	 (NvtxFunctionPointer)range_start_a,
	    (NvtxFunctionPointer)range_start_ex, (NvtxFunctionPointer)range_end};
	static const int core2_ids[] = {
	    NVTX_CBID_CORE2_DomainRangePushEx, NVTX_CBID_CORE2_DomainRangePop,
	    NVTX_CBID_CORE2_DomainRangeStartEx, NVTX_CBID_CORE2_DomainRangeEnd};
	NvtxFunctionPointer const core2[] = {
	    (NvtxFunctionPointer)domain_range_push_ex, (NvtxFunctionPointer)domain_range_pop,
	    (NvtxFunctionPointer)domain_range_start_ex, (NvtxFunctionPointer)domain_range_end};
	int ok = fill(callbacks, NVTX_CB_MODULE_CORE, core_ids, core, 6);
	fill(callbacks, NVTX_CB_MODULE_CORE2, core2_ids, core2, 4);
	return ok;
}
