/*
 * examples/corpus/d55_clean_packet_ids_completion_thread_batch_event.c: corpus workload (CUDA
 * driver API, pthreads), CLEAN. The intrusion detector of d52 with its completion thread fixed:
 * every batch the capture thread copies 16384 packets of 1 KB from its capture buffer into one of
 * two pinned batch slots, and queues the upload, an Aho-Corasick match of 32 signatures over every
 * payload (dpi_match, one packet a thread) and the download of each packet's match mask into the
 * slot on one non-blocking stream, then records the batch's event (done[slot]). Right after
 * queueing batch b it hands batch b-1 to the completion thread, one behind. That thread now waits
 * with cuEventSynchronize on batch b-1's own event (the fix of d52, whose cuStreamSynchronize also
 * waited for batch b, queued just before the hand-off). It writes batch b-1's alert lines and
 * checks sampled packets while batch b runs on the GPU, then releases b-1's slot, which the
 * capture thread fills for batch b+1.
 * Clean: the completion thread's cuEventSynchronize on the batch it reports (that slot's upload,
 * match and download, nothing queued after them), the setup allocations and the automaton's
 * upload, the per-batch async upload from the pinned slot and download into it, the final wait,
 * teardown.
 * The automaton and the masks are integers, and the completion thread reports the batches in
 * order: the alert log's hash and the counts are the same on every run (d52 prints the same).
 *   d55_clean_packet_ids_completion_thread_batch_event driver_kernels.cubin
 */
#include "driver.h"

#include <pthread.h> // CORPUS-LDLIBS: -lpthread
#include <stdint.h>
#include <string.h>

enum { BATCHES = 48, PKTS = 16384, LEN = 1024, PATTERNS = 32, PLEN = 8, SLOTS = 2 };
enum { STATES = PATTERNS * PLEN + 1, POOL = 1 << 25, THREADS = 128, SAMPLES = 8 };

#define BATCH_BYTES ((size_t)PKTS * LEN)
#define FLAG_BYTES ((size_t)PKTS * sizeof(unsigned long long))

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* --- the signatures and their automaton ----------------------------------------------------- */

static unsigned char patterns[PATTERNS][PLEN];

struct automaton {
	unsigned short delta[STATES][256];
	unsigned long long accept[STATES];
	int states;
};

static void make_patterns(void)
{
	for (int p = 0; p < PATTERNS; p++)
		for (int i = 0; i < PLEN; i++)
			patterns[p][i] = (unsigned char)('A' + mix32((uint32_t)(p * 8 + i)) % 26u);
}

/* Aho-Corasick: the trie, failure links in breadth-first order, the complete transition table */
static void build_automaton(struct automaton *a)
{
	static int go[STATES][256], fail[STATES], queue[STATES];
	memset(go, 0xff, sizeof go);
	memset(a->accept, 0, sizeof a->accept);
	a->states = 1;
	for (int p = 0; p < PATTERNS; p++) {
		int s = 0;
		for (int i = 0; i < PLEN; i++) {
			if (go[s][patterns[p][i]] < 0)
				go[s][patterns[p][i]] = a->states++;
			s = go[s][patterns[p][i]];
		}
		a->accept[s] |= 1ull << p;
	}
	int head = 0, tail = 0;
	for (int c = 0; c < 256; c++) {
		if (go[0][c] < 0) {
			go[0][c] = 0;
		} else {
			fail[go[0][c]] = 0;
			queue[tail++] = go[0][c];
		}
	}
	while (head < tail) {
		int s = queue[head++];
		a->accept[s] |= a->accept[fail[s]];
		for (int c = 0; c < 256; c++) {
			int t = go[s][c];
			if (t < 0) {
				go[s][c] = go[fail[s]][c];
			} else {
				fail[t] = go[fail[s]][c];
				queue[tail++] = t;
			}
		}
	}
	for (int s = 0; s < a->states; s++)
		for (int c = 0; c < 256; c++)
			a->delta[s][c] = (unsigned short)go[s][c];
}

/* the capture buffer: random bytes with a signature planted every 8 KB or so */
static unsigned char *make_pool(void)
{
	unsigned char *pool = (unsigned char *)malloc(POOL);
	uint32_t *w = (uint32_t *)pool, x = 0x2545f491u;
	for (int i = 0; i < POOL / 4; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		w[i] = x;
	}
	for (int k = 0; k < POOL / 8192; k++) {
		uint32_t h = mix32((uint32_t)k + 0x51edu);
		unsigned char *at = pool + (size_t)k * 8192 + h % (8192 - PLEN);
		memcpy(at, patterns[(h >> 16) % PATTERNS], PLEN);
	}
	return pool;
}

/* batch b's packets: a stretch of the capture buffer, each packet's first 16 bytes a header with
 * the batch and the packet's index */
static void fill_batch(int b, const unsigned char *pool, unsigned char *slot)
{
	size_t off = (size_t)(mix32((uint32_t)b) % (POOL / LEN - PKTS)) * LEN;
	memcpy(slot, pool + off, BATCH_BYTES);
	for (int p = 0; p < PKTS; p++) {
		uint32_t hdr[4] = {0x45000400u, (uint32_t)b, (uint32_t)p, mix32((uint32_t)p)};
		memcpy(slot + (size_t)p * LEN, hdr, sizeof hdr);
	}
}

/* --- the hand-off between the capture thread and the completion thread ---------------------- */

struct pipeline {
	CUcontext ctx;
	CUstream s;
	CUevent done[SLOTS];
	unsigned char *in[SLOTS];        /* pinned batch slots */
	unsigned long long *flags[SLOTS]; /* pinned match masks */
	pthread_mutex_t lock;
	pthread_cond_t changed;
	int slot_free[SLOTS];
	int queue[BATCHES + 1], head, tail;
	/* the completion thread's results */
	unsigned long long log_hash, alerts[PATTERNS];
	int bad;
};

static void slot_acquire(struct pipeline *pl, int k)
{
	pthread_mutex_lock(&pl->lock);
	while (!pl->slot_free[k])
		pthread_cond_wait(&pl->changed, &pl->lock);
	pl->slot_free[k] = 0;
	pthread_mutex_unlock(&pl->lock);
}

static void slot_release(struct pipeline *pl, int k)
{
	pthread_mutex_lock(&pl->lock);
	pl->slot_free[k] = 1;
	pthread_cond_broadcast(&pl->changed);
	pthread_mutex_unlock(&pl->lock);
}

static void hand_off(struct pipeline *pl, int b)
{
	pthread_mutex_lock(&pl->lock);
	pl->queue[pl->tail++] = b;
	pthread_cond_broadcast(&pl->changed);
	pthread_mutex_unlock(&pl->lock);
}

static int take(struct pipeline *pl)
{
	pthread_mutex_lock(&pl->lock);
	while (pl->head == pl->tail)
		pthread_cond_wait(&pl->changed, &pl->lock);
	int b = pl->queue[pl->head++];
	pthread_mutex_unlock(&pl->lock);
	return b;
}

/* the naive search of one packet, for the sampled checks */
static unsigned long long naive_match(const unsigned char *pkt)
{
	unsigned long long m = 0;
	for (int p = 0; p < PATTERNS; p++)
		for (int i = 0; i + PLEN <= LEN && !(m >> p & 1); i++)
			if (memcmp(pkt + i, patterns[p], PLEN) == 0)
				m |= 1ull << p;
	return m;
}

/* batch b's alerts: a log line per flagged packet, counts per signature, sampled checks */
static void report(struct pipeline *pl, int b, const unsigned char *in,
		   const unsigned long long *flags)
{
	char line[160];
	for (int p = 0; p < PKTS; p++) {
		if (!flags[p])
			continue;
		const unsigned char *h = in + (size_t)p * LEN;
		int n = snprintf(line, sizeof line, "alert batch=%d pkt=%d sig=%016llx len=%d "
				 "head=%02x%02x%02x%02x\n", b, p, flags[p], LEN, h[16], h[17],
				 h[18], h[19]);
		for (int i = 0; i < n; i++)
			pl->log_hash = (pl->log_hash ^ (unsigned char)line[i]) * 1099511628211ull;
		for (int s = 0; s < PATTERNS; s++)
			pl->alerts[s] += flags[p] >> s & 1;
	}
	for (int k = 0; k < SAMPLES; k++) {
		int p = (int)(mix32((uint32_t)(b * SAMPLES + k) + 99u) % PKTS);
		pl->bad |= naive_match(in + (size_t)p * LEN) != flags[p];
	}
}

struct matcher {
	CUfunction match;
	CUdeviceptr d_pkts, d_flags, d_delta, d_accept;
};

/* batch slot k: upload, match, download of the masks, and the batch's event */
static void submit(struct pipeline *pl, struct matcher *m, int k)
{
	int npkts = PKTS, len = LEN;
	CUstream s = pl->s;
	void *args[] = {&m->d_pkts, &npkts, &len, &m->d_delta, &m->d_accept, &m->d_flags};
	DCHECK(cuMemcpyHtoDAsync(m->d_pkts, pl->in[k], BATCH_BYTES, s)); // SYNCSPY-CLEAN: pinned
	DCHECK(cuLaunchKernel(m->match, PKTS / THREADS, 1, 1, THREADS, 1, 1, 0, s, args, NULL));
	DCHECK(cuMemcpyDtoHAsync(pl->flags[k], m->d_flags, FLAG_BYTES, s)); // SYNCSPY-CLEAN: pinned
	DCHECK(cuEventRecord(pl->done[k], s));
}

static void *completion_main(void *arg)
{
	struct pipeline *pl = (struct pipeline *)arg;
	DCHECK(cuCtxSetCurrent(pl->ctx));
	for (;;) {
		int b = take(pl);
		if (b < 0)
			break;
		int k = b % SLOTS;
		DCHECK(cuEventSynchronize(pl->done[k])); // SYNCSPY-CLEAN: this batch's own event
		report(pl, b, pl->in[k], pl->flags[k]);
		slot_release(pl, k);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	static struct automaton ac;
	static struct pipeline pl;
	struct matcher m;
	pthread_t completion;

	make_patterns();
	build_automaton(&ac);
	unsigned char *pool = make_pool();
	DCHECK(cuModuleGetFunction(&m.match, module, "dpi_match"));
	DCHECK(cuStreamCreate(&pl.s, CU_STREAM_NON_BLOCKING));
	DCHECK(cuMemAlloc(&m.d_pkts, BATCH_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&m.d_flags, FLAG_BYTES)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&m.d_delta, sizeof ac.delta)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemAlloc(&m.d_accept, sizeof ac.accept)); // SYNCSPY-CLEAN: setup allocation
	DCHECK(cuMemcpyHtoD(m.d_delta, ac.delta, sizeof ac.delta)); // SYNCSPY-CLEAN: setup upload
	DCHECK(cuMemcpyHtoD(m.d_accept, ac.accept, sizeof ac.accept)); // SYNCSPY-CLEAN: setup
	for (int k = 0; k < SLOTS; k++) {
		void **in = (void **)&pl.in[k], **flags = (void **)&pl.flags[k];
		DCHECK(cuMemAllocHost(in, BATCH_BYTES)); // SYNCSPY-CLEAN: setup, pinned
		DCHECK(cuMemAllocHost(flags, FLAG_BYTES)); // SYNCSPY-CLEAN: setup, pinned
		DCHECK(cuEventCreate(&pl.done[k], CU_EVENT_DISABLE_TIMING));
		pl.slot_free[k] = 1;
	}
	pl.ctx = ctx;
	pl.log_hash = 14695981039346656037ull;
	pthread_mutex_init(&pl.lock, NULL);
	pthread_cond_init(&pl.changed, NULL);
	pthread_create(&completion, NULL, completion_main, &pl);

	for (int b = 0; b < BATCHES; b++) {
		int k = b % SLOTS;
		slot_acquire(&pl, k);
		fill_batch(b, pool, pl.in[k]);
		submit(&pl, &m, k);
		if (b >= 1)
			hand_off(&pl, b - 1); /* one behind: its results should be in by now */
	}
	hand_off(&pl, BATCHES - 1);
	hand_off(&pl, -1);
	pthread_join(completion, NULL);
	DCHECK(cuStreamSynchronize(pl.s)); // SYNCSPY-CLEAN: the final wait (all reported already)

	unsigned long long total = 0, checksum = pl.log_hash;
	for (int s = 0; s < PATTERNS; s++) {
		total += pl.alerts[s];
		checksum = checksum * 1000003u + pl.alerts[s];
	}
	if (pl.bad || total == 0) {
		fprintf(stderr, "d55: a sampled packet's mask differs from the naive search\n");
		return 1;
	}

	for (int k = 0; k < SLOTS; k++) {
		DCHECK(cuMemFreeHost(pl.in[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFreeHost(pl.flags[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(pl.done[k]));
	}
	DCHECK(cuMemFree(m.d_pkts)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(m.d_flags)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(m.d_delta)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFree(m.d_accept)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuStreamDestroy(pl.s));
	pthread_mutex_destroy(&pl.lock);
	pthread_cond_destroy(&pl.changed);
	free(pool);
	driver_teardown(module);
	printf("d55_clean_packet_ids_completion_thread_batch_event: batches=%d alerts=%llu "
	       "checksum=%llu result=OK\n", BATCHES, total, checksum);
	return 0;
}
