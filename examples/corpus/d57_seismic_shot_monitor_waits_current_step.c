/*
 * examples/corpus/d57_seismic_shot_monitor_waits_current_step.c: corpus workload (CUDA driver
 * API). Seismic forward modelling of one shot: the 2D acoustic wave equation on a 4096 x 4096
 * grid in fixed point (wave_step, a leapfrog step with an absorbing sponge at the edges, the
 * source a Ricker wavelet injected near the surface), 8 substeps a step on one stream. After
 * each step the step's energy terms (wave_energy) and the receiver line (the 4096 cells of row
 * REC_Y) are downloaded into one slot of a pinned double buffer, and the step's event is
 * recorded. The host's shot monitor then logs the energy, runs an STA/LTA trigger over the
 * receivers to pick first arrivals and appends the line to the shot record.
 * What is wrong: monitor_step() waits with cuEventSynchronize on ready[t % SLOTS], the event
 * recorded at the end of step t, the step just queued, instead of step t - 1's. cuEventSynchronize
 * "waits until the completion of all work currently captured in hEvent" (driver API reference):
 * all of step t, its 8 substeps, the energy pass and both downloads. So every step the host waits
 * for the whole step before it runs the monitor and queues step t + 1, and the GPU idles while
 * the monitor runs and the next step is queued: host and GPU take turns. The double buffer is
 * there to let the monitor read step t - 1 while step t runs (waiting on ready[(t - 1) % SLOTS]
 * after queueing step t), and nothing in step t + 1 depends on the monitor.
 * Planted: the cuEventSynchronize in monitor_step(), every step (one line).
 * Clean: the setup allocations, the synchronous cuMemsetD32 of the three fields and the setup
 * sync, the per-step async downloads into the pinned double buffer, the checkpoint of the final
 * field once after the step loop (a stream sync and two blocking copies into pinned memory),
 * teardown.
 * The field is integer: the energy log, the picks and the checksum are the same on every run. The
 * monitor checks each step's record is that step's, and the checkpoint's energy and receiver line
 * against the last step's record.
 *   d57_seismic_shot_monitor_waits_current_step driver_kernels.cubin
 */
#include "driver.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

enum { NX = 4096, NY = 4096, STEPS = 60, SUBSTEPS = 8, SPONGE = 32, C_Q8 = 96, BAND = 256 };
enum { REC_Y = SPONGE + 2, SRC_X = NX / 2, SRC_Y = SPONGE + 6, SLOTS = 2, THREADS = 256 };
enum { D_TAG, D_POT, D_KIN, DIAG_WORDS };

#define FIELD_BYTES ((size_t)NX * NY * sizeof(int))
#define LINE_BYTES ((size_t)NX * sizeof(int))
#define DIAG_BYTES (DIAG_WORDS * sizeof(unsigned long long))

/* the source: a 12-substep-period Ricker wavelet in fixed point, peak 16384 */
static void make_wavelet(int *amp)
{
	const double pi = 3.14159265358979323846, f = 1.0 / 12.0;
	for (int n = 0; n < STEPS * SUBSTEPS; n++) {
		double a = pi * f * (n - 18);
		a *= a;
		amp[n] = (int)lrint(16384.0 * (1.0 - 2.0 * a) * exp(-a));
	}
}

struct sim {
	CUstream s;
	CUfunction step, energy;
	CUdeviceptr u[3], d_diag;      /* prev, current, next, rotated every substep */
	int prev, cur;
	unsigned long long *diag[SLOTS]; /* pinned: the step's energy record */
	int *line[SLOTS];                /* pinned: the step's receiver line */
	CUevent ready[SLOTS];
};

/* the host side of the shot: energy log, STA/LTA first-arrival picks */
struct monitor {
	long long sta[NX], lta[NX];
	int pick[NX];
	short gather[STEPS][NX]; /* the shot record: one trace a receiver, a sample a step */
	unsigned long long log_hash, last_pot, last_kin;
	int bad;
};

/* queue step t: SUBSTEPS leapfrog steps, the energy terms, the two downloads, the step's event */
static void queue_step(struct sim *sm, int t, const int *amp)
{
	int nx = NX, ny = NY, c = C_Q8, sponge = SPONGE, src = SRC_Y * NX + SRC_X, band = BAND;
	for (int j = 0; j < SUBSTEPS; j++) {
		int next = 3 - sm->prev - sm->cur, a = amp[t * SUBSTEPS + j];
		void *args[] = {&sm->u[sm->cur], &sm->u[sm->prev], &sm->u[next], &nx, &ny, &c, &sponge,
				&src, &a};
		DCHECK(cuLaunchKernel(sm->step, NX * NY / THREADS, 1, 1, THREADS, 1, 1, 0, sm->s, args, NULL));
		sm->prev = sm->cur;
		sm->cur = next;
	}
	int k = t % SLOTS;
	void *eargs[] = {&sm->u[sm->cur], &sm->u[sm->prev], &nx, &ny, &band, &t, &sm->d_diag};
	DCHECK(cuMemsetD32Async(sm->d_diag, 0, DIAG_WORDS * 2, sm->s));
	DCHECK(cuLaunchKernel(sm->energy, NX * (NY / BAND) / THREADS, 1, 1, THREADS, 1, 1, 0, sm->s, eargs, NULL));
	DCHECK(cuMemcpyDtoHAsync(sm->diag[k], sm->d_diag, DIAG_BYTES, sm->s)); // SYNCSPY-CLEAN: pinned double buffer
	DCHECK(cuMemcpyDtoHAsync(sm->line[k], sm->u[sm->cur] + (size_t)REC_Y * LINE_BYTES, LINE_BYTES, sm->s)); // SYNCSPY-CLEAN: pinned double buffer
	DCHECK(cuEventRecord(sm->ready[k], sm->s));
}

/* the shot record's sample of step t: each receiver's value, clipped to 16 bits (an 8x gain) */
static void gather_append(struct monitor *mo, int t, const int *rec)
{
	for (int x = 0; x < NX; x++) {
		int v = rec[x] * 8;
		mo->gather[t][x] = (short)(v > 32767 ? 32767 : v < -32768 ? -32768 : v);
	}
}

/* the shot record's hash, trace by trace (receiver-major, as it is written out) */
static unsigned long long gather_hash(const struct monitor *mo)
{
	unsigned long long h = 14695981039346656037ull;
	for (int x = 0; x < NX; x++)
		for (int t = 0; t < STEPS; t++)
			h = (h ^ (unsigned short)mo->gather[t][x]) * 1099511628211ull;
	return h;
}

/* the monitor's look at step t: energy line, STA/LTA over the receivers */
static void monitor_step(struct sim *sm, struct monitor *mo, int t)
{
	int k = t % SLOTS;
	char line[128];
	DCHECK(cuEventSynchronize(sm->ready[k])); // SYNCSPY-PROBLEM: waits on the step just queued, not the one behind
	const unsigned long long *d = sm->diag[k];
	const int *rec = sm->line[k];
	mo->bad |= d[D_TAG] != (unsigned long long)t;
	mo->last_pot = d[D_POT];
	mo->last_kin = d[D_KIN];
	int n = snprintf(line, sizeof line, "step=%d pot=%llu kin=%llu\n", t, d[D_POT], d[D_KIN]);
	for (int i = 0; i < n; i++)
		mo->log_hash = (mo->log_hash ^ (unsigned char)line[i]) * 1099511628211ull;
	for (int x = SPONGE; x < NX - SPONGE; x++) {
		long long e = ((long long)rec[x] * rec[x]) >> 4;
		mo->sta[x] += (e - mo->sta[x]) / 2;
		mo->lta[x] += (e - mo->lta[x]) / 16;
		if (mo->pick[x] < 0 && mo->sta[x] > 3 * mo->lta[x] + 64)
			mo->pick[x] = t;
	}
	gather_append(mo, t, rec);
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	static struct sim sm;
	static struct monitor mo;
	static int amp[STEPS * SUBSTEPS];
	int *ck_cur, *ck_prev;

	make_wavelet(amp);
	DCHECK(cuModuleGetFunction(&sm.step, module, "wave_step"));
	DCHECK(cuModuleGetFunction(&sm.energy, module, "wave_energy"));
	DCHECK(cuStreamCreate(&sm.s, CU_STREAM_NON_BLOCKING));
	for (int i = 0; i < 3; i++) {
		DCHECK(cuMemAlloc(&sm.u[i], FIELD_BYTES)); // SYNCSPY-CLEAN: setup allocation
		DCHECK(cuMemsetD32(sm.u[i], 0, (size_t)NX * NY)); // SYNCSPY-CLEAN: setup, the quiet medium
	}
	DCHECK(cuMemAlloc(&sm.d_diag, DIAG_BYTES)); // SYNCSPY-CLEAN: setup allocation
	for (int k = 0; k < SLOTS; k++) {
		DCHECK(cuMemHostAlloc((void **)&sm.diag[k], DIAG_BYTES, 0)); // SYNCSPY-CLEAN: setup, pinned
		DCHECK(cuMemHostAlloc((void **)&sm.line[k], LINE_BYTES, 0)); // SYNCSPY-CLEAN: setup, pinned
		DCHECK(cuEventCreate(&sm.ready[k], CU_EVENT_DISABLE_TIMING));
	}
	DCHECK(cuMemHostAlloc((void **)&ck_cur, FIELD_BYTES, 0)); // SYNCSPY-CLEAN: setup, pinned checkpoint
	DCHECK(cuMemHostAlloc((void **)&ck_prev, FIELD_BYTES, 0)); // SYNCSPY-CLEAN: setup, pinned checkpoint
	DCHECK(cuCtxSynchronize()); // SYNCSPY-CLEAN: setup done (the fields zeroed) before the shot
	sm.prev = 0;
	sm.cur = 1;
	for (int x = 0; x < NX; x++)
		mo.pick[x] = -1;
	mo.log_hash = 14695981039346656037ull;

	for (int t = 0; t < STEPS; t++) {
		queue_step(&sm, t, amp);
		monitor_step(&sm, &mo, t);
	}

	/* the shot's checkpoint, once: the last two fields, for a restart or the next shot's init */
	DCHECK(cuStreamSynchronize(sm.s)); // SYNCSPY-CLEAN: the checkpoint after the step loop
	DCHECK(cuMemcpyDtoH(ck_cur, sm.u[sm.cur], FIELD_BYTES)); // SYNCSPY-CLEAN: checkpoint, once, pinned
	DCHECK(cuMemcpyDtoH(ck_prev, sm.u[sm.prev], FIELD_BYTES)); // SYNCSPY-CLEAN: checkpoint, once, pinned
	unsigned long long pot = 0, kin = 0;
	for (size_t i = 0; i < (size_t)NX * NY; i++) {
		long long v = ck_cur[i], dv = v - ck_prev[i];
		pot += (unsigned long long)(v * v);
		kin += (unsigned long long)(dv * dv);
	}
	int picks = 0;
	unsigned long long checksum = mo.log_hash ^ gather_hash(&mo);
	for (int x = 0; x < NX; x++) {
		picks += mo.pick[x] >= 0;
		checksum = checksum * 1000003u + (unsigned long long)(mo.pick[x] + 1);
	}
	int last = (STEPS - 1) % SLOTS;
	if (mo.bad || pot != mo.last_pot || kin != mo.last_kin || pot == 0 || picks == 0 ||
	    memcmp(ck_cur + (size_t)REC_Y * NX, sm.line[last], LINE_BYTES) != 0) {
		fprintf(stderr, "d57: a step's record is stale or differs from the checkpoint\n");
		return 1;
	}

	for (int k = 0; k < SLOTS; k++) {
		DCHECK(cuMemFreeHost(sm.diag[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFreeHost(sm.line[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(sm.ready[k]));
	}
	DCHECK(cuMemFreeHost(ck_cur)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(ck_prev)); // SYNCSPY-CLEAN: teardown
	for (int i = 0; i < 3; i++)
		DCHECK(cuMemFree(sm.u[i])); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(sm.d_diag)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(sm.s));
	driver_teardown(module);
	printf("d57_seismic_shot_monitor_waits_current_step: steps=%d picks=%d energy=%llu checksum=%llu "
	       "result=OK\n", STEPS, picks, pot + kin, checksum);
	return 0;
}
