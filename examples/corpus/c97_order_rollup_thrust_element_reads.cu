/*
 * examples/corpus/c97_order_rollup_thrust_element_reads.cu: corpus workload (CUDA C++ + Thrust).
 * The roll-up stage of an order-analytics service: every batch the feed decoder writes 1M order
 * lines (customer, price, quantity, region x product-line group, four attribute bytes) into a
 * pinned staging slot, a non-blocking copy stream uploads them, and the roll-up kernel (on the
 * legacy default stream, where this Thrust-based code base runs its device work) scores each line
 * with a 256-tree fraud forest and adds its revenue, and its revenue again if flagged, to the
 * group's totals in thrust::device_vectors. The dashboard shows 48 watched groups of the 4096.
 * The dashboard's helper watch_column() is a template over the column's type that reads the
 * watched groups with col[g], one element at a time. Thrust's Quick Start Guide: individual
 * elements of a device_vector can be accessed with the bracket notation, "however, because each
 * of these accesses requires a call to cudaMemcpy, they should be used sparingly" (CCCL: a
 * cudaMemcpyAsync into the host's variable on the default stream and a cudaStreamSynchronize, per
 * element). So every batch makes 96 blocking reads: the first waits for the batch's upload and
 * roll-up, the other 95 each make a round trip, and the GPU idles while the host decodes the next
 * batch, which it would otherwise do while the roll-up runs. One cudaMemcpyAsync of each column
 * into a pinned ring on the copy stream, read a batch later after an event wait, lets the host
 * decode the next batch while the roll-up runs.
 * Planted: the element read col[g] in watch_column(), every batch (one line, 96 reads a batch).
 * Clean: the setup allocations (the device_vectors' storage, a fill and a sync each) and the
 * forest's one upload, the pinned staging slot reused after a cudaEventSynchronize on its upload
 * two batches back, the async upload from it on the copy stream, the final read of the cumulative
 * columns into host_vectors, teardown (the device_vectors freed at the end of their scope).
 * Totals are integer sums: the CPU reference checks the watched groups of two batches and every
 * group's cumulative revenue and line count.
 */
#include "corpus.h"

#include <string.h>
#include <thrust/device_vector.h>
#include <thrust/host_vector.h>
#include <vector>

enum { BATCHES = 40, LINES = 1 << 20, GROUPS = 4096, TREES = 256, DEPTH = 8, INNER = (1 << DEPTH) - 1, LEAVES = 1 << DEPTH, FEEDS = 4, WATCHED = 48, THREADS = 256, SLOTS = 2, FLAG_SCORE = -28 };

static const int checked_batches[2] = {BATCHES / 8, BATCHES * 3 / 4};

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

struct order_line {
	uint32_t customer, cents;
	uint16_t qty, group;
	uint8_t attr[4];
};

/* the eight features, one byte each, in one register */
__host__ __device__ static inline uint64_t features(const struct order_line &l)
{
	uint64_t f = (uint64_t)(l.customer & 255u) | (uint64_t)((l.customer >> 8) & 255u) << 8 | (uint64_t)((l.cents >> 6) & 255u) << 16 | (uint64_t)(l.qty & 255u) << 24;
	for (int k = 0; k < 4; k++)
		f |= (uint64_t)l.attr[k] << (32 + 8 * k);
	return f;
}

/* nodes: TREES x INNER x {feature, threshold}; leaves: TREES x LEAVES scores */
__host__ __device__ static inline int forest_score(uint64_t f, const uint8_t *nodes, const int8_t *leaves)
{
	int score = 0;
	for (int t = 0; t < TREES; t++) {
		const uint8_t *tn = nodes + t * INNER * 2;
		int i = 0;
		for (int d = 0; d < DEPTH; d++)
			i = 2 * i + 1 + ((int)((f >> (8 * tn[2 * i])) & 255u) > tn[2 * i + 1]);
		score += leaves[t * LEAVES + i - INNER];
	}
	return score;
}

__global__ void rollup(const struct order_line *lines, const uint8_t *nodes, const int8_t *leaves, unsigned long long *revenue, unsigned long long *flagged, unsigned long long *cum_revenue, unsigned int *cum_lines)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= LINES)
		return;
	struct order_line l = lines[i];
	unsigned long long r = (unsigned long long)l.qty * l.cents;
	atomicAdd(&revenue[l.group], r);
	atomicAdd(&cum_revenue[l.group], r);
	atomicAdd(&cum_lines[l.group], 1u);
	if (forest_score(features(l), nodes, leaves) > FLAG_SCORE)
		atomicAdd(&flagged[l.group], r);
}

/* --- the feed: four recorded days of order lines, replayed with a price drift per batch ------------ */

static struct order_line feed_line(int feed, int i)
{
	uint32_t h = mix32((uint32_t)(feed * LINES + i) * 2654435761u + 17u);
	struct order_line l;
	l.customer = mix32(h) % 200000u;
	l.cents = 100u + mix32(h + 1u) % 20000u;
	l.qty = (uint16_t)(1u + (h >> 3) % 64u);
	l.group = (uint16_t)(mix32(h + 2u) % GROUPS);
	uint32_t a = mix32(h + 3u);
	memcpy(l.attr, &a, 4);
	return l;
}

static inline uint32_t drift(int batch, int i) { return (uint32_t)((batch * 37 + i) % 50); }

static void decode_batch(struct order_line *const *feeds, int batch, struct order_line *out)
{
	const struct order_line *src = feeds[batch % FEEDS];
	for (int i = 0; i < LINES; i++) {
		out[i] = src[i];
		out[i].cents += drift(batch, i);
	}
}

/* --- the dashboard ----------------------------------------------------------------------------------- */

template <typename T>
static void watch_column(const thrust::device_vector<T> &col, const std::vector<int> &watched, std::vector<unsigned long long> &row)
{
	row.clear();
	for (int g : watched)
		row.push_back((unsigned long long)col[g]); // SYNCSPY-PROBLEM: a device_vector element read on the host: a cudaMemcpy and a stream sync per element, 96 a batch, the first behind the batch's roll-up
}

struct dashboard {
	std::vector<int> watched;
	std::vector<unsigned long long> revenue_row, flagged_row, kept[2][2];
	unsigned long long checksum;
};

static void publish(struct dashboard *db, int batch, const thrust::device_vector<unsigned long long> &revenue, const thrust::device_vector<unsigned long long> &flagged)
{
	watch_column(revenue, db->watched, db->revenue_row);
	watch_column(flagged, db->watched, db->flagged_row);
	for (int k = 0; k < WATCHED; k++)
		db->checksum = (db->checksum * 1000003u + db->revenue_row[k]) * 31u + db->flagged_row[k];
	for (int c = 0; c < 2; c++)
		if (batch == checked_batches[c]) {
			db->kept[c][0] = db->revenue_row;
			db->kept[c][1] = db->flagged_row;
		}
}

int main(void)
{
	const char *name = "c97_order_rollup_thrust_element_reads";
	struct dashboard db;
	db.checksum = 0;
	std::vector<int> slot_of(GROUPS, -1);
	for (int k = 0; k < WATCHED; k++) {
		db.watched.push_back((k * 85 + 11) % GROUPS);
		slot_of[(k * 85 + 11) % GROUPS] = k;
	}
	std::vector<uint8_t> h_nodes((size_t)TREES * INNER * 2);
	std::vector<int8_t> h_leaves((size_t)TREES * LEAVES);
	for (int t = 0; t < TREES; t++) {
		for (int i = 0; i < INNER; i++) {
			uint32_t h = mix32((uint32_t)(t * 4096 + i) + 0x51ed27u);
			h_nodes[(size_t)(t * INNER + i) * 2] = (uint8_t)(h % 8u);
			h_nodes[(size_t)(t * INNER + i) * 2 + 1] = (uint8_t)(32u + (h >> 8) % 192u);
		}
		for (int j = 0; j < LEAVES; j++)
			h_leaves[(size_t)t * LEAVES + j] = (int8_t)((int)(mix32((uint32_t)(t * 4096 + j) + 0xbeefu) % 16u) - 8);
	}
	struct order_line *feeds[FEEDS];
	for (int f = 0; f < FEEDS; f++) {
		feeds[f] = (struct order_line *)malloc((size_t)LINES * sizeof(struct order_line));
		for (int i = 0; i < LINES; i++)
			feeds[f][i] = feed_line(f, i);
	}

	cudaStream_t up;
	struct order_line *d_lines[SLOTS], *h_lines[SLOTS];
	cudaEvent_t uploaded[SLOTS], rolled[SLOTS];
	uint8_t *d_nodes;
	int8_t *d_leaves;
	CHECK(cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d_nodes, h_nodes.size())); // SYNCSPY-CLEAN: setup allocation, the forest
	CHECK(cudaMalloc(&d_leaves, h_leaves.size())); // SYNCSPY-CLEAN: setup allocation, the leaves
	CHECK(cudaMemcpy(d_nodes, h_nodes.data(), h_nodes.size(), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup, the forest once
	CHECK(cudaMemcpy(d_leaves, h_leaves.data(), h_leaves.size(), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup, the leaves once
	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaMalloc(&d_lines[s], (size_t)LINES * sizeof(struct order_line))); // SYNCSPY-CLEAN: setup allocation, a batch slot
		CHECK(cudaMallocHost(&h_lines[s], (size_t)LINES * sizeof(struct order_line))); // SYNCSPY-CLEAN: setup pinned allocation, a staging slot
		CHECK(cudaEventCreateWithFlags(&uploaded[s], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&rolled[s], cudaEventDisableTiming));
	}

	std::vector<unsigned long long> cum_revenue_host;
	std::vector<unsigned int> cum_lines_host;
	{
		thrust::device_vector<unsigned long long> revenue(GROUPS); // SYNCSPY-CLEAN: setup, a device_vector (cudaMalloc, a fill kernel, a sync)
		thrust::device_vector<unsigned long long> flagged(GROUPS); // SYNCSPY-CLEAN: setup, a device_vector (cudaMalloc, a fill kernel, a sync)
		thrust::device_vector<unsigned long long> cum_revenue(GROUPS); // SYNCSPY-CLEAN: setup, a device_vector (cudaMalloc, a fill kernel, a sync)
		thrust::device_vector<unsigned int> cum_lines(GROUPS); // SYNCSPY-CLEAN: setup, a device_vector (cudaMalloc, a fill kernel, a sync)

		for (int batch = 0; batch < BATCHES; batch++) {
			int s = batch % SLOTS;
			if (batch >= SLOTS)
				CHECK(cudaEventSynchronize(uploaded[s])); // SYNCSPY-CLEAN: the pinned double buffer: this slot's upload two batches back, long done
			decode_batch(feeds, batch, h_lines[s]);
			if (batch >= SLOTS)
				CHECK(cudaStreamWaitEvent(up, rolled[s], 0));
			CHECK(cudaMemcpyAsync(d_lines[s], h_lines[s], (size_t)LINES * sizeof(struct order_line), cudaMemcpyHostToDevice, up)); // SYNCSPY-CLEAN: async from the pinned slot on the copy stream
			CHECK(cudaEventRecord(uploaded[s], up));
			CHECK(cudaStreamWaitEvent(0, uploaded[s], 0));
			CHECK(cudaMemsetAsync(thrust::raw_pointer_cast(revenue.data()), 0, GROUPS * sizeof(unsigned long long), 0));
			CHECK(cudaMemsetAsync(thrust::raw_pointer_cast(flagged.data()), 0, GROUPS * sizeof(unsigned long long), 0));
			rollup<<<LINES / THREADS, THREADS>>>(d_lines[s], d_nodes, d_leaves, thrust::raw_pointer_cast(revenue.data()), thrust::raw_pointer_cast(flagged.data()), thrust::raw_pointer_cast(cum_revenue.data()), thrust::raw_pointer_cast(cum_lines.data()));
			CHECK_LAUNCH();
			CHECK(cudaEventRecord(rolled[s], 0));
			publish(&db, batch, revenue, flagged);
		}

		thrust::host_vector<unsigned long long> h_cum_revenue = cum_revenue; // SYNCSPY-CLEAN: final read of the cumulative revenue
		thrust::host_vector<unsigned int> h_cum_lines = cum_lines; // SYNCSPY-CLEAN: final read of the cumulative line counts
		cum_revenue_host.assign(h_cum_revenue.begin(), h_cum_revenue.end());
		cum_lines_host.assign(h_cum_lines.begin(), h_cum_lines.end());
	} // SYNCSPY-CLEAN: teardown: the device_vectors' destructors free their storage here

	/* the CPU reference: every group's cumulative totals, the watched groups of two batches */
	std::vector<unsigned long long> want_revenue(GROUPS, 0);
	std::vector<unsigned int> want_lines(GROUPS, 0);
	unsigned long long want[2][2][WATCHED] = {};
	for (int batch = 0; batch < BATCHES; batch++) {
		const struct order_line *src = feeds[batch % FEEDS];
		int c = batch == checked_batches[0] ? 0 : (batch == checked_batches[1] ? 1 : -1);
		for (int i = 0; i < LINES; i++) {
			struct order_line l = src[i];
			l.cents += drift(batch, i);
			unsigned long long r = (unsigned long long)l.qty * l.cents;
			want_revenue[l.group] += r;
			want_lines[l.group]++;
			int k = slot_of[l.group];
			if (c >= 0 && k >= 0) {
				want[c][0][k] += r;
				if (forest_score(features(l), h_nodes.data(), h_leaves.data()) > FLAG_SCORE)
					want[c][1][k] += r;
			}
		}
	}
	unsigned long long flagged_total = 0;
	for (int c = 0; c < 2; c++)
		for (int k = 0; k < WATCHED; k++) {
			corpus_expect(name, "watched revenue", (long long)db.kept[c][0][k], (long long)want[c][0][k]);
			corpus_expect(name, "watched flagged revenue", (long long)db.kept[c][1][k], (long long)want[c][1][k]);
			flagged_total += want[c][1][k];
		}
	corpus_expect(name, "some flagged revenue", flagged_total > 0, 1);
	for (int g = 0; g < GROUPS; g++) {
		corpus_expect(name, "cumulative revenue", (long long)cum_revenue_host[g], (long long)want_revenue[g]);
		corpus_expect(name, "cumulative lines", cum_lines_host[g], want_lines[g]);
		db.checksum = db.checksum * 1000003u + cum_revenue_host[g];
	}

	for (int s = 0; s < SLOTS; s++) {
		CHECK(cudaFree(d_lines[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaFreeHost(h_lines[s])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(uploaded[s]));
		CHECK(cudaEventDestroy(rolled[s]));
	}
	CHECK(cudaFree(d_nodes)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_leaves)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(up));
	for (int f = 0; f < FEEDS; f++)
		free(feeds[f]);
	corpus_result(name, BATCHES, db.checksum);
	return 0;
}
