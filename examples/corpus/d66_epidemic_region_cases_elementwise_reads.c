/*
 * examples/corpus/d66_epidemic_region_cases_elementwise_reads.c: corpus workload (CUDA driver
 * API). A public-health agency's agent-based SEIR model for scenario planning: 8,388,608 agents
 * in 128 regions (households of four, 1024 workplaces and 1024 venues a region; an agent's venue
 * is drawn every day), 60 simulated days. Each day two kernels run on the model's stream (a
 * blocking stream): epi_count counts the infectious agents of every household, workplace and
 * venue, and epi_update infects susceptible agents (escape probabilities from tables, the
 * workplace and venue terms cut by the region's lockdown level), moves exposed agents to
 * infectious (a new case, counted per region) and infectious agents to recovered. The lockdown
 * policy follows each region's reported cases with a two-day reporting lag: day d's cases set
 * the level of day d + 2, uploaded from pinned staging.
 * What is wrong: read_region_cases() reads the day's 128 counters one region at a time, one
 * cuMemcpyDtoH of 4 bytes each, every day. A synchronous device-to-host copy "returns only once
 * the copy has completed" (API synchronization behavior), and on the legacy NULL stream it is
 * ordered after the model's blocking stream: the first read waits for the whole day's kernels,
 * and the other 127 are a round trip each, while the GPU has nothing queued (the next day is
 * queued only after the policy is computed). With the two-day lag nothing needs day d's counts
 * before day d + 2 is queued: one cuMemcpyDtoHAsync of all 128 counters into a pinned ring,
 * read one day behind after an event, would keep a day queued ahead and make one transfer of
 * the 128.
 * Planted: the per-region cuMemcpyDtoH in read_region_cases(), 128 times a day (one line).
 * Clean: the setup allocations, the uploads of the population and the tables, the setup sync,
 * the per-day upload of the lockdown levels from pinned staging, the final wait and the final
 * read of the agents' states, teardown. The per-day cuMemsetD32Async of the counters is an
 * enqueue (unmarked).
 * Per day (estimates, H100): two passes over 8.4M agents (random reads of the household,
 * workplace and venue counters, atomics for the infectious), about 0.3-0.5 ms; 128 reads of
 * about 10 us each. The checks: every agent infectious or recovered at the end was a seed or a
 * counted case; three sampled regions, re-simulated on the host with the same policy, report the
 * same cases every day and end with the same states.
 *   d66_epidemic_region_cases_elementwise_reads driver_kernels.cubin
 */
#include "driver.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

enum { NR = 128, RSIZE = 65536, WPS = 1024, VPS = 1024, DAYS = 60, SEEDS = 16, THREADS = 256, SAMPLED = 3 };
enum { NA = NR * RSIZE, HH = NA / 4, NCOUNT = HH + NR * WPS + NR * VPS + NR, ESC = 4 + 2 * 3 * 64 };

static const double BETA_H = 0.06, BETA_W = 0.002, BETA_V = 0.003, CUT[3] = {1.0, 0.5, 0.15};

/* the same hash and contact structure as the kernels (driver_kernels.cu, epi_*) */
static unsigned int epi_hash(unsigned int h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	return h ^ (h >> 16);
}

static int epi_work(int a)
{
	return a / RSIZE * WPS + (int)(epi_hash((unsigned int)a * 2u + 1u) % (unsigned int)WPS);
}

static int epi_venue(int a, int day)
{
	return a / RSIZE * VPS + (int)(epi_hash((unsigned int)a ^ ((unsigned int)day * 0x9e3779b9u)) % (unsigned int)VPS);
}

/* the lockdown level that day d's reported cases call for, on day d + 2 */
static unsigned char policy(int cases)
{
	return (unsigned char)(cases > 400 ? 2 : cases > 100 ? 1 : 0);
}

/* the host's mirror of one region (its agents only: households, workplaces and venues are the
 * region's own), one day of epi_count and epi_update; returns the day's new cases */
static int region_day(int r, int day, unsigned char lv, unsigned char *state, unsigned char *days, const unsigned int *esc,
		      int *hh, int *work, int *venue)
{
	int base = r * RSIZE, cases = 0;
	memset(hh, 0, RSIZE / 4 * sizeof(int));
	memset(work, 0, WPS * sizeof(int));
	memset(venue, 0, VPS * sizeof(int));
	for (int a = base; a < base + RSIZE; a++)
		if (state[a - base] == 2) {
			hh[(a - base) / 4]++;
			work[epi_work(a) - r * WPS]++;
			venue[epi_venue(a, day) - r * VPS]++;
		}
	for (int a = base; a < base + RSIZE; a++) {
		int j = a - base, s = state[j];
		unsigned int h = epi_hash((unsigned int)a * 7919u + (unsigned int)day * 104729u);
		if (s == 0) {
			int nh = hh[j / 4] < 3 ? hh[j / 4] : 3, nw = work[epi_work(a) - r * WPS], nv = venue[epi_venue(a, day) - r * VPS];
			nw = nw < 63 ? nw : 63, nv = nv < 63 ? nv : 63;
			unsigned long long e = (unsigned long long)esc[nh] * esc[4 + 64 * lv + nw] * esc[196 + 64 * lv + nv] >> 32;
			if ((h & 0xffffu) >= e) {
				state[j] = 1;
				days[j] = (unsigned char)(2 + (h >> 16) % 4);
			}
		} else if (s == 1 || s == 2) {
			int d = days[j] - 1;
			if (d > 0) {
				days[j] = (unsigned char)d;
			} else if (s == 1) {
				state[j] = 2;
				days[j] = (unsigned char)(4 + (h >> 16) % 6);
				cases++;
			} else {
				state[j] = 3;
			}
		}
	}
	return cases;
}

/* the population on day 0: SEEDS infectious agents a region (a draw may repeat), the rest
 * susceptible */
static void seed(unsigned char *state, unsigned char *days, int r)
{
	memset(state, 0, RSIZE);
	memset(days, 0, RSIZE);
	for (int k = 0; k < SEEDS; k++) {
		unsigned int h = epi_hash((unsigned int)(r * SEEDS + k) ^ 0x2545f491u);
		state[h % RSIZE] = 2;
		days[h % RSIZE] = (unsigned char)(4 + (h >> 20) % 6);
	}
}

/* the day's new cases of every region, for the policy */
static void read_region_cases(CUdeviceptr d_region_new, int *cases)
{
	for (int r = 0; r < NR; r++)
		DCHECK(cuMemcpyDtoH(&cases[r], d_region_new + r * sizeof(int), sizeof(int))); // SYNCSPY-PROBLEM: one blocking 4-byte read a region, 128 a day, the first behind the whole day
}

int main(int argc, char **argv)
{
	const char *name = "d66_epidemic_region_cases_elementwise_reads";
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction count, update;
	CUstream s;
	CUdeviceptr d_state, d_days, d_counts, d_level, d_esc;
	unsigned char *state = (unsigned char *)malloc(NA), *days = (unsigned char *)malloc(NA), *levels[2];
	static unsigned char plan[DAYS + 2][NR];
	static int cases[DAYS][NR];
	static unsigned int esc[ESC];

	for (int h = 0; h < 4; h++)
		esc[h] = (unsigned int)lround(65536.0 * pow(1.0 - BETA_H, h));
	for (int lv = 0; lv < 3; lv++)
		for (int c = 0; c < 64; c++) {
			esc[4 + 64 * lv + c] = (unsigned int)lround(65536.0 * pow(1.0 - BETA_W * CUT[lv], c));
			esc[196 + 64 * lv + c] = (unsigned int)lround(65536.0 * pow(1.0 - BETA_V * CUT[lv], c));
		}
	int seeds = 0;
	for (int r = 0; r < NR; r++)
		seed(state + (size_t)r * RSIZE, days + (size_t)r * RSIZE, r);
	for (int a = 0; a < NA; a++)
		seeds += state[a] == 2;

	DCHECK(cuModuleGetFunction(&count, module, "epi_count"));
	DCHECK(cuModuleGetFunction(&update, module, "epi_update"));
	DCHECK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
	DCHECK(cuMemAlloc(&d_state, NA)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_days, NA)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_counts, NCOUNT * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_level, NR)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&d_esc, sizeof esc)); // SYNCSPY-CLEAN: setup allocation
	for (int k = 0; k < 2; k++)
		DCHECK(cuMemAllocHost((void **)&levels[k], NR)); // SYNCSPY-CLEAN: setup, pinned staging for the levels
	DCHECK(cuMemcpyHtoD(d_state, state, NA)); // SYNCSPY-CLEAN: setup upload of the population
	DCHECK(cuMemcpyHtoD(d_days, days, NA)); // SYNCSPY-CLEAN: setup upload of the population
	DCHECK(cuMemcpyHtoD(d_esc, esc, sizeof esc)); // SYNCSPY-CLEAN: setup upload of the escape tables
	DCHECK(cuCtxSynchronize()); // SYNCSPY-CLEAN: setup done before the model's stream starts

	CUdeviceptr d_hh = d_counts, d_work = d_hh + HH * sizeof(int), d_venue = d_work + NR * WPS * sizeof(int);
	CUdeviceptr d_region_new = d_venue + NR * VPS * sizeof(int);
	int n = NA, rsize = RSIZE, wps = WPS, vps = VPS, blocks = (NA + THREADS - 1) / THREADS;
	for (int d = 0; d < DAYS; d++) {
		memcpy(levels[d % 2], plan[d], NR);
		DCHECK(cuMemcpyHtoDAsync(d_level, levels[d % 2], NR, s)); // SYNCSPY-CLEAN: the day's levels from pinned staging
		DCHECK(cuMemsetD32Async(d_counts, 0, NCOUNT, s));
		void *ca[] = {&d_state, &n, &rsize, &wps, &vps, &d, &d_hh, &d_work, &d_venue};
		DCHECK(cuLaunchKernel(count, blocks, 1, 1, THREADS, 1, 1, 0, s, ca, NULL));
		void *ua[] = {&d_state, &d_days, &n, &rsize, &wps, &vps, &d, &d_hh, &d_work, &d_venue, &d_level, &d_esc, &d_region_new};
		DCHECK(cuLaunchKernel(update, blocks, 1, 1, THREADS, 1, 1, 0, s, ua, NULL));
		read_region_cases(d_region_new, cases[d]);
		for (int r = 0; r < NR; r++)
			plan[d + 2][r] = policy(cases[d][r]);
	}
	DCHECK(cuStreamSynchronize(s)); // SYNCSPY-CLEAN: the final wait, before the final read
	DCHECK(cuMemcpyDtoH(state, d_state, NA)); // SYNCSPY-CLEAN: the final read of the agents' states

	/* the checks: the case count, sampled regions on the host */
	long long total = 0, infected = 0, lockdown_days = 0;
	int peak = 0;
	unsigned long long checksum = 14695981039346656037ull;
	for (int d = 0; d < DAYS; d++) {
		int day_total = 0;
		for (int r = 0; r < NR; r++) {
			day_total += cases[d][r];
			lockdown_days += plan[d][r] > 0;
			checksum = (checksum ^ (unsigned)cases[d][r]) * 1099511628211ull;
		}
		total += day_total;
		peak = day_total > peak ? day_total : peak;
	}
	for (int a = 0; a < NA; a++)
		infected += state[a] == 2 || state[a] == 3;
	if (infected != seeds + total) {
		fprintf(stderr, "%s: %lld agents infectious or recovered, want %d seeds + %lld cases\n", name, infected, seeds, total);
		return 1;
	}
	unsigned char *rs = (unsigned char *)malloc(RSIZE), *rd = (unsigned char *)malloc(RSIZE);
	int *hh = (int *)malloc(RSIZE / 4 * sizeof(int)), work[WPS], venue[VPS];
	for (int q = 0; q < SAMPLED; q++) {
		int r = (int)(epi_hash((unsigned int)q + 2024u) % NR);
		unsigned char lv[DAYS + 2] = {0};
		seed(rs, rd, r);
		for (int d = 0; d < DAYS; d++) {
			int c = region_day(r, d, lv[d], rs, rd, esc, hh, work, venue);
			if (c != cases[d][r]) {
				fprintf(stderr, "%s: region %d day %d: %d cases, the host's model %d\n", name, r, d, cases[d][r], c);
				return 1;
			}
			lv[d + 2] = policy(c);
		}
		if (memcmp(rs, state + (size_t)r * RSIZE, RSIZE) != 0) {
			fprintf(stderr, "%s: region %d ends in other states than the host's model\n", name, r);
			return 1;
		}
	}

	for (int k = 0; k < 2; k++)
		DCHECK(cuMemFreeHost(levels[k])); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_state)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_days)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_counts)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_level)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(d_esc)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(s));
	driver_teardown(module);
	free(state);
	free(days);
	free(rs);
	free(rd);
	free(hh);
	printf("%s: days=%d cases=%lld peak=%d lockdown_region_days=%lld checksum=%016llx result=OK\n", name, DAYS, total,
	       peak, lockdown_days, checksum);
	return 0;
}
