/*
 * examples/corpus/d48_pii_tokenizer_shared_dma_queue.c: corpus workload (CUDA driver API). The
 * tokenization step of a data-lake export: card-transaction records (64 bytes each) stream from
 * the storage engine's buffer pool, a malloc'd 128 MB page cache page-locked once with
 * cuMemHostRegister, to the GPU in 32 MB pages; a kernel replaces the middle six digits of each
 * card number and the social security number with format-preserving tokens (FF1's Feistel
 * structure, ten rounds per field, an ARX function standing in for its AES), and the tokenized
 * page comes back into a pinned three-page output ring that the writer ships one page behind.
 * Device buffers are double-buffered and ordered by events so that page n+1 uploads while page n
 * is tokenized and page n-1 downloads. The transfers go through the export's DMA module, which
 * takes its queue count from a config whose default, 1, was copied from the storage layer: with
 * one queue dma_download() puts the download on the same stream as the uploads. The CUDA
 * programming guide (concurrent data transfers): devices with two copy engines "can overlap
 * copies to and from the device", but operations in one stream run in issue order. Each page's
 * download waits for its tokenization and the next page's upload waits behind that download, so
 * upload, kernel and download of consecutive pages run one after another, about 3 ms a page where
 * the pipeline needs the longest of the three (about 1.2 ms); two queues (downloads on their own
 * stream) remove it.
 * Planted: the cuMemcpyDtoHAsync in dma_download(), queued on the upload stream, every page.
 * The cuMemcpyHtoDAsync in dma_upload() carries no marker: its delay, queued behind the previous
 * page's download, is a consequence of that choice.
 * Clean: the page cache's registration, the setup allocations, the reader's cuEventSynchronize on
 * a page's previous upload (four pages back) before refreshing it, the writer's
 * cuEventSynchronize on the page one behind, the final wait, teardown.
 *   d48_pii_tokenizer_shared_dma_queue driver_kernels.cubin
 */
#include "driver.h"

#include <stdint.h>
#include <string.h>

enum { PAGES = 60, CACHE_PAGES = 4, RECORDS = 524288, REFRESH = 8192, PRF_ROUNDS = 128, THREADS = 256, RING = 3, SETS = 2, SAMPLES = 8 };
#define PAGE_BYTES ((size_t)RECORDS * 64)

struct record { /* the export's row layout, 64 bytes */
	uint64_t customer;
	char pan[16], ssn[9], pad[3];
	uint32_t amount_cents, timestamp, merchant;
	char country[2];
	uint16_t mcc;
	uint32_t flags, batch, seq;
};
_Static_assert(sizeof(struct record) == 64, "record layout");

static const uint32_t KEY[4] = {0x6b8b4567u, 0x327b23c6u, 0x643c9869u, 0x66334873u}; /* from the key service */

static uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* --- the DMA module ------------------------------------------------------------------------------ */

struct dma_config { int queues; };
static const struct dma_config DMA_DEFAULTS = {1}; /* the storage layer's setting: one queue pair */

struct dma { CUstream s[2]; int queues; };

static void dma_open(struct dma *d, const struct dma_config *cfg)
{
	d->queues = cfg->queues;
	for (int q = 0; q < d->queues; q++)
		DCHECK(cuStreamCreate(&d->s[q], CU_STREAM_NON_BLOCKING));
}

static CUstream dma_up(struct dma *d) { return d->s[0]; }
static CUstream dma_down(struct dma *d) { return d->s[d->queues - 1]; }

static void dma_upload(struct dma *d, CUdeviceptr dst, const void *src, size_t n, CUevent after, CUevent done)
{
	if (after)
		DCHECK(cuStreamWaitEvent(dma_up(d), after, 0));
	DCHECK(cuMemcpyHtoDAsync(dst, src, n, dma_up(d))); /* no marker: it waits behind the previous page's download, a consequence of dma_download()'s queue */
	DCHECK(cuEventRecord(done, dma_up(d)));
}

static void dma_download(struct dma *d, void *dst, CUdeviceptr src, size_t n, CUevent after, CUevent done)
{
	DCHECK(cuStreamWaitEvent(dma_down(d), after, 0));
	DCHECK(cuMemcpyDtoHAsync(dst, src, n, dma_down(d))); // SYNCSPY-PROBLEM: with the default single queue the download shares the upload stream: it waits for the page's kernel and the next upload waits for it
	DCHECK(cuEventRecord(done, dma_down(d)));
}

static void dma_close(struct dma *d)
{
	for (int q = 0; q < d->queues; q++)
		DCHECK(cuStreamDestroy(d->s[q]));
}

/* --- the table: records and the buffer pool's refresh ------------------------------------------ */

static void make_record(uint32_t seq, struct record *r)
{
	static const char *bins[4] = {"453201", "552134", "601100", "491761"};
	uint32_t h = mix32(seq * 0x9e3779b9u + 0x1234567u);
	int sum = 0;
	memset(r, 0, sizeof *r);
	r->customer = (uint64_t)mix32(h) << 32 | mix32(h + 1u);
	memcpy(r->pan, bins[h & 3u], 6);
	for (int i = 6; i < 15; i++)
		r->pan[i] = (char)('0' + mix32(h + 7u * (uint32_t)i) % 10u);
	for (int i = 14; i >= 0; i--) { /* the Luhn check digit */
		int v = r->pan[i] - '0';
		if ((14 - i) % 2 == 0)
			v = v * 2 > 9 ? v * 2 - 9 : v * 2;
		sum += v;
	}
	r->pan[15] = (char)('0' + (10 - sum % 10) % 10);
	for (int i = 0; i < 9; i++)
		r->ssn[i] = (char)('0' + mix32(h + 101u * (uint32_t)i + 3u) % 10u);
	r->amount_cents = mix32(h + 5u) % 500000u;
	r->timestamp = 1700000000u + seq;
	r->merchant = mix32(h + 9u) % 100000u;
	memcpy(r->country, (h >> 8) & 1u ? "US" : "CA", 2);
	r->mcc = (uint16_t)(5000u + (h >> 12) % 1000u);
	r->seq = seq;
}

static uint32_t refresh_page(struct record *page, int n, uint32_t next_seq)
{
	int at = (n / CACHE_PAGES) * REFRESH % RECORDS; /* the oldest rows of the page, overwritten by new ones */
	for (int i = 0; i < REFRESH; i++)
		make_record(next_seq++, &page[at + i]);
	return next_seq;
}

/* --- the writer's checks: sampled rows detokenized on the host ---------------------------------- */

static uint32_t rotl32(uint32_t v, int s) { return (v << s) | (v >> (32 - s)); }

static uint32_t prf(uint32_t tweak, uint32_t round, uint32_t x)
{
	uint32_t a = KEY[0] ^ x, b = KEY[1] ^ tweak, c = KEY[2] ^ (round * 0x9e3779b9u), d = KEY[3] ^ 0x3c6ef372u;
	for (int i = 0; i < PRF_ROUNDS; i++) {
		a += b;
		d = rotl32(d ^ a, 16);
		c += d;
		b = rotl32(b ^ c, 12);
		a += b;
		d = rotl32(d ^ a, 8);
		c += d;
		b = rotl32(b ^ c, 7);
		a ^= (uint32_t)i * 0x85ebca6bu;
	}
	return a ^ c;
}

static uint32_t digits(const char *s, int n)
{
	uint32_t v = 0;
	for (int i = 0; i < n; i++)
		v = v * 10u + (uint32_t)(s[i] - '0');
	return v;
}

static void fpe_decrypt(uint32_t *a, uint32_t *b, uint32_t ma, uint32_t mb, uint32_t tweak)
{
	for (int i = 9; i >= 0; i--) {
		if (i & 1)
			*b = (*b + mb - prf(tweak, (uint32_t)i, *a) % mb) % mb;
		else
			*a = (*a + ma - prf(tweak, (uint32_t)i, *b) % ma) % ma;
	}
}

static unsigned long long writer_ship(int n, const struct record *plain, const struct record *tok)
{
	unsigned long long digest = 0;
	uint32_t export_id = 1000u + (uint32_t)n;
	for (int k = 0; k < SAMPLES; k++) {
		int i = (int)(mix32((uint32_t)n * 0x632be5abu + (uint32_t)k) % RECORDS);
		const struct record *p = &plain[i], *t = &tok[i];
		uint32_t hi = digits(t->pan + 6, 3), lo = digits(t->pan + 9, 3), shi = digits(t->ssn, 4), slo = digits(t->ssn + 4, 5);
		fpe_decrypt(&hi, &lo, 1000u, 1000u, export_id * 4u);
		fpe_decrypt(&shi, &slo, 10000u, 100000u, export_id * 4u + 1u);
		if (memcmp(p, t, 14) || memcmp(p->pan + 12, t->pan + 12, 4) || memcmp((const char *)p + 33, (const char *)t + 33, 64 - 33) ||
		    hi * 1000u + lo != digits(p->pan + 6, 6) || shi * 100000u + slo != digits(p->ssn, 9)) {
			fprintf(stderr, "d48: page %d record %d does not detokenize to the source row\n", n, i);
			exit(1);
		}
		digest = digest * 1000003u + digits(t->pan + 6, 6) * 1000000000ull + digits(t->ssn, 9);
	}
	return digest;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule module = driver_setup(argc, argv, &ctx);
	CUfunction tokenize;
	CUstream comp;
	CUevent page_uploaded[CACHE_PAGES], tokenized[SETS], downloaded[RING];
	CUdeviceptr d_in[SETS], d_out[SETS];
	struct dma dma;
	struct record *cache, *out_ring;
	unsigned long long digest = 0;
	uint32_t next_seq = 0;
	int records = RECORDS, prf_rounds = PRF_ROUNDS;

	DCHECK(cuModuleGetFunction(&tokenize, module, "pii_tokenize"));
	dma_open(&dma, &DMA_DEFAULTS);
	DCHECK(cuStreamCreate(&comp, CU_STREAM_NON_BLOCKING));
	for (int k = 0; k < CACHE_PAGES; k++)
		DCHECK(cuEventCreate(&page_uploaded[k], CU_EVENT_DISABLE_TIMING));
	for (int k = 0; k < RING; k++)
		DCHECK(cuEventCreate(&downloaded[k], CU_EVENT_DISABLE_TIMING));
	for (int k = 0; k < SETS; k++) {
		DCHECK(cuEventCreate(&tokenized[k], CU_EVENT_DISABLE_TIMING));
		DCHECK(cuMemAlloc(&d_in[k], PAGE_BYTES)); // SYNCSPY-CLEAN: setup allocation
		DCHECK(cuMemAlloc(&d_out[k], PAGE_BYTES)); // SYNCSPY-CLEAN: setup allocation
	}
	cache = (struct record *)aligned_alloc(4096, CACHE_PAGES * PAGE_BYTES);
	for (int i = 0; i < CACHE_PAGES * RECORDS; i++)
		make_record(next_seq++, &cache[i]);
	DCHECK(cuMemHostRegister(cache, CACHE_PAGES * PAGE_BYTES, 0)); // SYNCSPY-CLEAN: setup, the buffer pool page-locked once
	DCHECK(cuMemAllocHost((void **)&out_ring, RING * PAGE_BYTES)); // SYNCSPY-CLEAN: setup, the writer's pinned output ring

	for (int n = 0; n < PAGES; n++) {
		int p = n % CACHE_PAGES, k = n % SETS, r = n % RING;
		struct record *page = cache + (size_t)p * RECORDS;
		unsigned int k0 = KEY[0], k1 = KEY[1], k2 = KEY[2], k3 = KEY[3], export_id = 1000u + (unsigned int)n;
		if (n >= CACHE_PAGES) {
			DCHECK(cuEventSynchronize(page_uploaded[p])); // SYNCSPY-CLEAN: the reader's wait before refreshing a page, on its upload four pages back
			next_seq = refresh_page(page, n, next_seq);
		}
		dma_upload(&dma, d_in[k], page, PAGE_BYTES, n >= SETS ? tokenized[k] : NULL, page_uploaded[p]);
		DCHECK(cuStreamWaitEvent(comp, page_uploaded[p], 0));
		if (n >= SETS)
			DCHECK(cuStreamWaitEvent(comp, downloaded[(n - SETS) % RING], 0));
		void *args[] = {&d_in[k], &d_out[k], &records, &k0, &k1, &k2, &k3, &export_id, &prf_rounds};
		DCHECK(cuLaunchKernel(tokenize, RECORDS / THREADS, 1, 1, THREADS, 1, 1, 0, comp, args, NULL));
		DCHECK(cuEventRecord(tokenized[k], comp));
		dma_download(&dma, out_ring + (size_t)r * RECORDS, d_out[k], PAGE_BYTES, tokenized[k], downloaded[r]);
		if (n >= 1) {
			int m = n - 1;
			DCHECK(cuEventSynchronize(downloaded[m % RING])); // SYNCSPY-CLEAN: the writer's wait, on the page one behind
			digest = digest * 31u + writer_ship(m, cache + (size_t)(m % CACHE_PAGES) * RECORDS, out_ring + (size_t)(m % RING) * RECORDS);
		}
	}
	DCHECK(cuStreamSynchronize(dma_down(&dma))); // SYNCSPY-CLEAN: the final wait, after the last page
	digest = digest * 31u + writer_ship(PAGES - 1, cache + (size_t)((PAGES - 1) % CACHE_PAGES) * RECORDS, out_ring + (size_t)((PAGES - 1) % RING) * RECORDS);

	for (int k = 0; k < SETS; k++) {
		DCHECK(cuMemFree(d_in[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuMemFree(d_out[k])); // SYNCSPY-CLEAN: teardown
		DCHECK(cuEventDestroy(tokenized[k]));
	}
	for (int k = 0; k < CACHE_PAGES; k++)
		DCHECK(cuEventDestroy(page_uploaded[k]));
	for (int k = 0; k < RING; k++)
		DCHECK(cuEventDestroy(downloaded[k]));
	DCHECK(cuMemHostUnregister(cache)); // SYNCSPY-CLEAN: teardown
	DCHECK(cuMemFreeHost(out_ring)); // SYNCSPY-CLEAN: teardown
	free(cache);
	DCHECK(cuStreamDestroy(comp));
	dma_close(&dma);
	driver_teardown(module);
	printf("d48_pii_tokenizer_shared_dma_queue: pages=%d rows=%u digest=%llu result=OK\n", PAGES, next_seq, digest);
	return 0;
}
