/*
 * examples/corpus/c77_kmer_pinned_allocator_vector.cu: corpus workload (CUDA C++). The counting
 * stage of a k-mer based genome assembler: batches of 64K sequencing reads (160 bases each)
 * are 2-bit packed on the host and uploaded, and a kernel counts every canonical 21-mer of every
 * read into a 4M-bucket device hash table and adds the batch's k-mer fingerprint to a
 * per-batch slot. So that the upload really is asynchronous, the author packs each batch into
 * a std::vector with a page-locked allocator, pinned_allocator<T> (allocate() calls
 * cudaMallocHost, deallocate() cudaFreeHost), and uploads it with cudaMemcpyAsync. But the
 * vector is a local of count_batch(): every batch allocates 2.5 MB of page-locked memory when the
 * vector reserves its storage and frees it when the function returns. The runtime API reference
 * (cudaMallocHost) says page-locking is expensive and the call is "best used sparingly to
 * allocate staging areas for data exchange between host and device", and the programming guide
 * lists a page-locked host memory allocation among the operations between which commands of
 * different streams cannot run concurrently; the free waits for the batch's upload and kernel,
 * so the host never packs the next batch while the GPU counts this one. Two pinned staging
 * buffers allocated once (or the vector kept across batches) would remove both calls.
 * Planted: the cudaMallocHost in pinned_allocator::allocate() and the cudaFreeHost in
 * pinned_allocator::deallocate(), every batch (one problem, two lines).
 * Clean: the setup allocations, the upload from the (pinned) vector, the final wait and read,
 * teardown.
 */
#include "corpus.h"

#include <vector>

enum { BATCHES = 40, READS = 1 << 16, READ_LEN = 160, WORDS = READ_LEN / 16, K = 21, TABLE_BITS = 22, THREADS = 256 };

#define KMER_MASK ((1ull << (2 * K)) - 1ull)

/* --- a page-locked allocator for the STL --------------------------------------------------- */

template <typename T> struct pinned_allocator {
	typedef T value_type;
	pinned_allocator() {}
	template <typename U> pinned_allocator(const pinned_allocator<U> &) {}
	T *allocate(size_t n)
	{
		void *p = NULL;
		CHECK(cudaMallocHost(&p, n * sizeof(T))); // SYNCSPY-PROBLEM: page-locks a new staging buffer for every batch's vector
		return static_cast<T *>(p);
	}
	void deallocate(T *p, size_t)
	{
		CHECK(cudaFreeHost(p)); // SYNCSPY-PROBLEM: frees it when the batch's vector goes out of scope, waiting for the device, every batch
	}
};
template <typename T, typename U> bool operator==(const pinned_allocator<T> &, const pinned_allocator<U> &) { return true; }
template <typename T, typename U> bool operator!=(const pinned_allocator<T> &, const pinned_allocator<U> &) { return false; }

template <typename T> using pinned_vector = std::vector<T, pinned_allocator<T>>;

__host__ __device__ static inline uint64_t mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

/* the sequencer's output, 2-bit packed, 16 bases a word (base j of a word in bits 2j..2j+1):
 * reads start at random places of a 1M-base genome, so their k-mers repeat across reads */
static uint64_t read_origin(int batch, int read) { return mix64((uint64_t)batch * 1000003ull + (uint64_t)read) % (1u << 20); }

static uint32_t read_word(uint64_t origin, int w)
{
	uint32_t g = (uint32_t)mix64(origin / 16u + (uint64_t)w);
	return (origin + (uint64_t)w) % 13u == 0 ? g ^ 0x10u : g; /* a sequencing error now and then */
}

__host__ __device__ static inline uint64_t canonical_hash(uint64_t fwd, uint64_t rev) { return mix64(fwd < rev ? fwd : rev); }

/* every canonical k-mer of a read: count it, and add it to the batch's fingerprint */
__host__ __device__ static inline uint64_t read_kmers(const uint32_t *words, uint32_t *table)
{
	uint64_t fwd = 0, rev = 0, fp = 0;
	for (int j = 0; j < READ_LEN; j++) {
		uint64_t base = (words[j / 16] >> (2 * (j % 16))) & 3u;
		fwd = ((fwd << 2) | base) & KMER_MASK;
		rev = (rev >> 2) | ((3u - base) << (2 * (K - 1)));
		if (j >= K - 1) {
			uint64_t h = canonical_hash(fwd, rev);
			if (table) {
#ifdef __CUDA_ARCH__
				atomicAdd(&table[h >> (64 - TABLE_BITS)], 1u);
#else
				table[h >> (64 - TABLE_BITS)]++;
#endif
			}
			fp += h >> 24;
		}
	}
	return fp;
}

__global__ void count_kmers(const uint32_t *reads, uint32_t *table, unsigned long long *fingerprint)
{
	__shared__ unsigned long long sh[THREADS];
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	sh[threadIdx.x] = r < READS ? read_kmers(reads + (size_t)r * WORDS, table) : 0;
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned long long t = 0;
		for (int k = 0; k < THREADS; k++)
			t += sh[k];
		atomicAdd(fingerprint, t);
	}
}

struct counter {
	cudaStream_t s;
	uint32_t *d_reads, *d_table;
	unsigned long long *d_fp;
};

static void count_batch(struct counter *c, int b)
{
	pinned_vector<uint32_t> packed;
	packed.reserve((size_t)READS * WORDS);
	for (int r = 0; r < READS; r++) {
		uint64_t origin = read_origin(b, r);
		for (int w = 0; w < WORDS; w++)
			packed.push_back(read_word(origin, w));
	}
	CHECK(cudaMemcpyAsync(c->d_reads, packed.data(), packed.size() * sizeof(uint32_t), cudaMemcpyHostToDevice, c->s)); // SYNCSPY-CLEAN: async upload from the vector's page-locked storage
	count_kmers<<<READS / THREADS, THREADS, 0, c->s>>>(c->d_reads, c->d_table, c->d_fp + b);
	CHECK_LAUNCH();
}

int main(void)
{
	const char *name = "c77_kmer_pinned_allocator_vector";
	struct counter c;
	unsigned long long h_fp[BATCHES];
	const size_t table_bytes = ((size_t)1 << TABLE_BITS) * sizeof(uint32_t);

	CHECK(cudaStreamCreateWithFlags(&c.s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&c.d_reads, (size_t)READS * WORDS * sizeof(uint32_t))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&c.d_table, table_bytes)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&c.d_fp, sizeof h_fp)); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemsetAsync(c.d_table, 0, table_bytes, c.s));
	CHECK(cudaMemsetAsync(c.d_fp, 0, sizeof h_fp, c.s));

	for (int b = 0; b < BATCHES; b++)
		count_batch(&c, b);

	uint32_t *table = (uint32_t *)malloc(table_bytes);
	CHECK(cudaStreamSynchronize(c.s)); // SYNCSPY-CLEAN: the one wait, after the last batch
	CHECK(cudaMemcpy(h_fp, c.d_fp, sizeof h_fp, cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read
	CHECK(cudaMemcpy(table, c.d_table, table_bytes, cudaMemcpyDeviceToHost)); // SYNCSPY-CLEAN: final read of the table

	unsigned long long total = 0, distinct = 0;
	for (size_t i = 0; i < ((size_t)1 << TABLE_BITS); i++) {
		total += table[i];
		distinct += table[i] != 0;
	}
	corpus_expect(name, "k-mers counted", (long long)total, (long long)BATCHES * READS * (READ_LEN - K + 1));
	for (int b = 0; b < BATCHES; b += 29) {
		uint32_t words[WORDS];
		unsigned long long fp = 0;
		for (int r = 0; r < READS; r++) {
			uint64_t origin = read_origin(b, r);
			for (int w = 0; w < WORDS; w++)
				words[w] = read_word(origin, w);
			fp += read_kmers(words, NULL);
		}
		corpus_expect(name, "batch fingerprint", (long long)h_fp[b], (long long)fp);
	}
	unsigned long long checksum = distinct;
	for (int b = 0; b < BATCHES; b++)
		checksum = checksum * 1000003u + h_fp[b];
	free(table);

	CHECK(cudaFree(c.d_reads)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(c.d_table)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(c.d_fp)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(c.s));
	corpus_result(name, BATCHES, checksum);
	return 0;
}
