/*
 * examples/corpus/c132_geofence_mapped_reply_hostalloc_per_request.cu: corpus workload (CUDA C,
 * mapped pinned memory). A fleet-telematics geofencing service: 8192 fences (star-shaped
 * polygons of 24 vertices, 150-900 m across, over a 20 km city, in decimetres), a 64 x 64 grid
 * of cells listing the fences whose bounding box touches each cell (built and uploaded once),
 * and 48 requests of 524,288 vehicle pings each. For every ping the kernel finds its cell and
 * tests all the cell's fences (crossing number, exact integer arithmetic) and answers how many
 * fences contain it and the first of them by id (0: none). The pings come from the ingest queue into a pinned
 * staging double buffer and are uploaded asynchronously; the service answers request r-1 while
 * request r runs on the GPU. The answers are written by the kernel straight into host memory
 * ("zero-copy"): reply_alloc() takes a fresh 2 MB reply buffer for every request with
 * cudaHostAlloc(cudaHostAllocMapped), and reply_free() gives it back with cudaFreeHost once the
 * reply has been sent. Page-locking is a heavyweight call (the Best Practices Guide: pinned
 * memory is "a scarce resource" whose allocation should not be repeated; the programming guide
 * lists "a page-locked host memory allocation" among the operations that keep commands of
 * different streams from running concurrently), and cudaFreeHost of mapped memory waits for the
 * device: the free of request r-1's buffer waits for request r, just queued, so the host prepares
 * request r+1 only after the GPU is done, and the double buffer overlaps nothing (one problem,
 * two lines). A ring of two reply buffers allocated once would do.
 * Planted: the cudaHostAlloc in reply_alloc() and the cudaFreeHost in reply_free(), every
 * request (one problem, two lines).
 * Clean: the setup allocations and uploads (fences, cell lists), the setup sync, the pinned
 * staging double buffer, its cudaEventSynchronize two requests back and the cudaMemcpyAsync
 * uploads from it, the reply's cudaEventSynchronize one request behind (the reply needs it),
 * teardown.
 * Per request (estimates, H100): a 4 MB upload (about 0.2 ms), about 160M edge tests (13 fences
 * of 24 edges a ping on average, about 0.2-0.4 ms), 2 MB of answers written over PCIe; the host
 * copies the next request's pings in about 0.5 ms and sends a reply in about 0.5-1 ms; the
 * 2 MB page-locking and unlocking costs about 0.5-1 ms a request besides the wait. The checks:
 * every answer's count and fence are consistent, and 4 sampled pings a request, tested on the
 * host against all 8192 fences, get the same answer.
 */
#include "corpus.h"

#include <math.h>
#include <string.h>

enum { FENCES = 8192, VERTS = 24, CITY = 204800, GRID = 64, CELL = CITY / GRID, CELL_CAP = 128 };
enum { PINGS = 524288, POOL = 4 * PINGS, REQUESTS = 48, SAMPLES = 4 };

struct fence_set {
	int *vx, *vy;          /* FENCES x VERTS vertices, decimetres */
	int *cell_count;       /* GRID x GRID */
	unsigned short *cells; /* GRID x GRID x CELL_CAP fence ids, ascending */
};

__host__ __device__ static inline uint32_t mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

/* crossing number of the ray to +x from (px, py) against fence f's edges */
__host__ __device__ static inline int inside(const int *vx, const int *vy, int f, int px, int py)
{
	int in = 0;
	for (int a = 0, b = VERTS - 1; a < VERTS; b = a++) {
		int xa = vx[f * VERTS + a], ya = vy[f * VERTS + a], xb = vx[f * VERTS + b], yb = vy[f * VERTS + b];
		if ((ya > py) != (yb > py)) {
			long long lhs = (long long)(px - xa) * (yb - ya), rhs = (long long)(xb - xa) * (py - ya);
			if (yb > ya ? lhs < rhs : lhs > rhs)
				in ^= 1;
		}
	}
	return in;
}

__global__ void geofence(struct fence_set fs, const int2 *pings, int *answer)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= PINGS)
		return;
	int2 p = pings[i];
	int cell = min(max(p.y / CELL, 0), GRID - 1) * GRID + min(max(p.x / CELL, 0), GRID - 1), first = -1, count = 0;
	for (int k = 0; k < fs.cell_count[cell]; k++) {
		int f = fs.cells[cell * CELL_CAP + k];
		if (inside(fs.vx, fs.vy, f, p.x, p.y))
			first = count++ ? first : f;
	}
	answer[i] = count << 16 | (first + 1); /* fence ids are below 2^16 - 1 */
}

/* --- the service --------------------------------------------------------------------------- */

static int *reply_alloc(int **device_view)
{
	int *reply;
	CHECK(cudaHostAlloc(&reply, PINGS * sizeof(int), cudaHostAllocMapped)); // SYNCSPY-PROBLEM: page-locks a fresh 2 MB reply buffer every request
	CHECK(cudaHostGetDevicePointer(device_view, reply, 0));
	return reply;
}

static void reply_free(int *reply)
{
	CHECK(cudaFreeHost(reply)); // SYNCSPY-PROBLEM: unpins it again every request, waiting for the device (the request just queued)
}

static void fail(const char *name, const char *what, long long got, long long want)
{
	printf("%s: %s = %lld, want %lld result=FAIL\n", name, what, got, want);
	exit(1);
}

/* sends request r's reply: checks it and folds its hits into the tally */
static unsigned long long send_reply(const char *name, int r, const int *reply, const int2 *pings, const int *vx, const int *vy,
				     unsigned long long checksum, unsigned long long *hits)
{
	unsigned long long h = 0;
	for (int i = 0; i < PINGS; i++) {
		int count = reply[i] >> 16, first = (reply[i] & 0xffff) - 1;
		if (count < 0 || count > CELL_CAP || first >= FENCES || (count == 0) != (first < 0))
			fail(name, "answer's count against its fence", count, first + 1);
		h += (unsigned)count;
		checksum = (checksum ^ (unsigned)reply[i]) * 1099511628211ull;
	}
	for (int q = 0; q < SAMPLES; q++) {
		int i = (int)(mix32((uint32_t)(r * SAMPLES + q) * 2246822519u) % PINGS), first = -1, count = 0;
		for (int f = 0; f < FENCES; f++)
			if (inside(vx, vy, f, pings[i].x, pings[i].y))
				first = count++ ? first : f;
		if (reply[i] != (count << 16 | (first + 1)))
			fail(name, "sampled ping's answer", reply[i], count << 16 | (first + 1));
	}
	*hits += h;
	return checksum;
}

int main(void)
{
	const char *name = "c132_geofence_mapped_reply_hostalloc_per_request";
	int *vx = (int *)malloc(FENCES * VERTS * sizeof(int)), *vy = (int *)malloc(FENCES * VERTS * sizeof(int));
	int *cell_count = (int *)calloc(GRID * GRID, sizeof(int));
	unsigned short *cells = (unsigned short *)malloc(GRID * GRID * CELL_CAP * sizeof(unsigned short));
	for (int f = 0; f < FENCES; f++) {
		int cx = 5000 + (int)(mix32((uint32_t)f * 3u + 1u) % (CITY - 10000)), cy = 5000 + (int)(mix32((uint32_t)f * 3u + 2u) % (CITY - 10000));
		int r = 750 + (int)(mix32((uint32_t)f * 3u + 3u) % 3751u), x0 = CITY, x1 = 0, y0 = CITY, y1 = 0;
		for (int k = 0; k < VERTS; k++) {
			double a = 6.283185307179586 * k / VERTS, rr = r * (0.6 + 0.4 * (mix32((uint32_t)(f * VERTS + k) ^ 0xfe11ceu) % 1000u) / 1000.0);
			int x = cx + (int)lround(rr * cos(a)), y = cy + (int)lround(rr * sin(a));
			vx[f * VERTS + k] = x, vy[f * VERTS + k] = y;
			x0 = x < x0 ? x : x0, x1 = x > x1 ? x : x1, y0 = y < y0 ? y : y0, y1 = y > y1 ? y : y1;
		}
		for (int gy = y0 / CELL; gy <= y1 / CELL; gy++)
			for (int gx = x0 / CELL; gx <= x1 / CELL; gx++) {
				int c = gy * GRID + gx;
				if (cell_count[c] == CELL_CAP)
					fail(name, "fences in a cell", CELL_CAP + 1, CELL_CAP);
				cells[c * CELL_CAP + cell_count[c]++] = (unsigned short)f;
			}
	}
	/* the ingest queue: pings around the fences (depots, sites) and anywhere in the city */
	int2 *pool = (int2 *)malloc(POOL * sizeof(int2));
	for (int i = 0; i < POOL; i++) {
		uint32_t h = mix32((uint32_t)i * 2654435761u + 7u);
		if (h % 10u < 7u) {
			int f = (int)(mix32(h) % FENCES);
			pool[i].x = vx[f * VERTS] - 1500 + (int)(mix32(h + 1u) % 3000u);
			pool[i].y = vy[f * VERTS + VERTS / 4] - 3000 + (int)(mix32(h + 2u) % 3000u);
		} else {
			pool[i].x = (int)(mix32(h + 3u) % CITY), pool[i].y = (int)(mix32(h + 4u) % CITY);
		}
	}

	struct fence_set fs;
	int2 *staging[2], *d_pings;
	int *reply[2] = {NULL, NULL}, *d_reply;
	cudaStream_t svc;
	cudaEvent_t uploaded[2], answered[2];
	CHECK(cudaStreamCreateWithFlags(&svc, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&fs.vx, FENCES * VERTS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&fs.vy, FENCES * VERTS * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&fs.cell_count, GRID * GRID * sizeof(int))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&fs.cells, GRID * GRID * CELL_CAP * sizeof(unsigned short))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMalloc(&d_pings, PINGS * sizeof(int2))); // SYNCSPY-CLEAN: setup allocation
	CHECK(cudaMemcpy(fs.vx, vx, FENCES * VERTS * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the fences
	CHECK(cudaMemcpy(fs.vy, vy, FENCES * VERTS * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the fences
	CHECK(cudaMemcpy(fs.cell_count, cell_count, GRID * GRID * sizeof(int), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the grid
	CHECK(cudaMemcpy(fs.cells, cells, GRID * GRID * CELL_CAP * sizeof(unsigned short), cudaMemcpyHostToDevice)); // SYNCSPY-CLEAN: setup upload of the grid
	for (int k = 0; k < 2; k++) {
		CHECK(cudaMallocHost(&staging[k], PINGS * sizeof(int2))); // SYNCSPY-CLEAN: setup, pinned staging double buffer
		CHECK(cudaEventCreateWithFlags(&uploaded[k], cudaEventDisableTiming));
		CHECK(cudaEventCreateWithFlags(&answered[k], cudaEventDisableTiming));
	}
	CHECK(cudaDeviceSynchronize()); // SYNCSPY-CLEAN: setup done before the service starts

	unsigned long long checksum = 14695981039346656037ull, hits = 0;
	for (int r = 0; r <= REQUESTS; r++) {
		int k = r % 2;
		if (r < REQUESTS) {
			if (r >= 2)
				CHECK(cudaEventSynchronize(uploaded[k])); // SYNCSPY-CLEAN: the staging slot's upload two requests back, before it is written again
			memcpy(staging[k], pool + (size_t)(r * 393241) % (POOL - PINGS), PINGS * sizeof(int2));
			CHECK(cudaMemcpyAsync(d_pings, staging[k], PINGS * sizeof(int2), cudaMemcpyHostToDevice, svc)); // SYNCSPY-CLEAN: from pinned staging
			CHECK(cudaEventRecord(uploaded[k], svc));
			reply[k] = reply_alloc(&d_reply);
			geofence<<<PINGS / 256, 256, 0, svc>>>(fs, d_pings, d_reply);
			CHECK_LAUNCH();
			CHECK(cudaEventRecord(answered[k], svc));
		}
		if (r > 0) { /* request r-1's reply */
			int p = k ^ 1;
			CHECK(cudaEventSynchronize(answered[p])); // SYNCSPY-CLEAN: the reply's wait, one request behind
			checksum = send_reply(name, r - 1, reply[p], staging[p], vx, vy, checksum, &hits);
			reply_free(reply[p]);
			reply[p] = NULL;
		}
	}

	for (int k = 0; k < 2; k++) {
		CHECK(cudaFreeHost(staging[k])); // SYNCSPY-CLEAN: teardown
		CHECK(cudaEventDestroy(uploaded[k]));
		CHECK(cudaEventDestroy(answered[k]));
	}
	CHECK(cudaFree(fs.vx)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(fs.vy)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(fs.cell_count)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(fs.cells)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaFree(d_pings)); // SYNCSPY-CLEAN: teardown
	CHECK(cudaStreamDestroy(svc));
	printf("%s: requests=%d pings=%d hits=%llu checksum=%016llx result=OK\n", name, REQUESTS, PINGS, hits, checksum);
	free(vx);
	free(vy);
	free(cell_count);
	free(cells);
	free(pool);
	return 0;
}
