/*
 * interpose/nccl.c: the NCCL module. Generates one wrapper per line of nccl_table.h, keeps the
 * communicators this process created (to name a split's parent), and gives the process its rank
 * once a communicator exists (the largest one wins: the world, not a sub-group).
 *
 * N1 records carry, besides the call: obj = the new communicator, bytes = its id hash (a hash
 * of the ncclUniqueId, identical on every rank of the communicator), aux = nranks << 32 | rank,
 * stream = the parent communicator of a split or shrink. The writer moves these into the
 * comms table (writer.c, insert_call). Communicator calls are collectives that take milliseconds,
 * so the registry's mutex is not on the hot path that SHIM-1 protects.
 *
 * The wrappers have the body of every other layer (SS_WRAPPER, wrapper.h). Its fast path sets no
 * errno; the describe_* helpers below call into NCCL and allocate, so each keeps errno itself
 * (SHIM-2).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "nccl_shim.h"
#include "wrapper.h"

/* ------------------------------------------------------------------ communicators */

struct comm_entry {
	ncclComm_t comm;
	uint64_t id_hash;
};

static pthread_mutex_t comms_lock = PTHREAD_MUTEX_INITIALIZER;
static struct comm_entry *comms;
static size_t comm_count, comm_capacity;

static void remember_comm(ncclComm_t comm, uint64_t id_hash)
{
	pthread_mutex_lock(&comms_lock);
	if (comm_count == comm_capacity) {
		size_t capacity = comm_capacity ? comm_capacity * 2 : 16;
		struct comm_entry *grown = realloc(comms, capacity * sizeof(*comms));
		if (grown) {
			comms = grown;
			comm_capacity = capacity;
		}
	}
	if (comm_count < comm_capacity)
		comms[comm_count++] = (struct comm_entry){comm, id_hash};
	pthread_mutex_unlock(&comms_lock);
}

static uint64_t comm_id_hash(ncclComm_t comm)
{
	uint64_t hash = 0;
	pthread_mutex_lock(&comms_lock);
	for (size_t i = comm_count; i-- > 0;)
		if (comms[i].comm == comm) {
			hash = comms[i].id_hash;
			break;
		}
	pthread_mutex_unlock(&comms_lock);
	return hash;
}

void ss_nccl_fork_child(void)
{
	pthread_mutex_init(&comms_lock, NULL);
	comm_count = 0;
}

static void query_rank(ncclComm_t comm, int *nranks, int *rank)
{
	static ncclResult_t (*_Atomic count_fn)(const ncclComm_t, int *);
	static ncclResult_t (*_Atomic rank_fn)(const ncclComm_t, int *);
	if (!count_fn) {
		rank_fn = ss_resolve_helper(SS_LAYER_NCCL, "ncclCommUserRank");
		count_fn = ss_resolve_helper(SS_LAYER_NCCL, "ncclCommCount");
	}
	*nranks = *rank = -1;
	if (count_fn && rank_fn && comm) {
		if (count_fn(comm, nranks) != ncclSuccess)
			*nranks = -1;
		if (rank_fn(comm, rank) != ncclSuccess)
			*rank = -1;
	}
}

static void describe_created(struct ss_rec *rec, ncclComm_t comm, int nranks, int rank,
			     uint64_t id_hash, ncclComm_t parent)
{
	int saved_errno = errno; /* SHIM-2: the registry allocates */
	rec->obj = (uintptr_t)comm;
	rec->bytes = id_hash;
	rec->aux = ((uint64_t)(uint32_t)nranks << 32) | (uint32_t)rank;
	rec->stream = (uintptr_t)parent;
	remember_comm(comm, id_hash);
	if (rank >= 0 && nranks > 0)
		ss_rank_from_comm(rank, nranks);
	errno = saved_errno;
}

static void describe_init_all(struct ss_rec *rec, ncclComm_t *comm, int ndev)
{
	/* One process, ndev communicators, no unique id: hash the pid and the time. */
	int saved_errno = errno; /* SHIM-2: the registry allocates */
	uint64_t seed[2] = {(uint64_t)getpid(), ss_mono_ns()};
	uint64_t id_hash = ss_hash64(seed, sizeof(seed));
	for (int i = 0; comm && i < ndev; i++)
		remember_comm(comm[i], id_hash);
	rec->obj = comm && ndev > 0 ? (uintptr_t)comm[0] : 0;
	rec->bytes = id_hash;
	rec->aux = (uint64_t)(uint32_t)ndev << 32;
	errno = saved_errno;
}

static void describe_split(struct ss_rec *rec, ncclComm_t parent, ncclComm_t comm, uint32_t salt)
{
	if (comm == NULL) /* NCCL_SPLIT_NOCOLOR: this rank is in no new communicator */
		return;
	int saved_errno = errno; /* SHIM-2: NCCL is asked the new communicator's rank */
	uint64_t seed[2] = {comm_id_hash(parent), salt};
	int nranks, rank;
	query_rank(comm, &nranks, &rank);
	describe_created(rec, comm, nranks, rank, ss_hash64(seed, sizeof(seed)), parent);
	errno = saved_errno;
}

static uint64_t unique_id_hash(const ncclUniqueId *id)
{
	return id ? ss_hash64(id, sizeof(*id)) : 0;
}

static size_t datatype_size(ncclDataType_t datatype)
{
	switch ((int)datatype) {
	case ncclInt8:
	case ncclUint8:
	case 10: /* ncclFloat8e4m3 */
	case 11: /* ncclFloat8e5m2 */
		return 1;
	case ncclFloat16:
	case 9: /* ncclBfloat16 */
		return 2;
	case ncclInt32:
	case ncclUint32:
	case ncclFloat32:
		return 4;
	case ncclInt64:
	case ncclUint64:
	case ncclFloat64:
		return 8;
	}
	return 0;
}

/* ------------------------------------------------------------------ the table's vocabulary */

/* STREAM(s) is wrapper.h's: stream 0 is the legacy stream (NCCL has no per-thread variants). */
#define OP(comm, count, datatype, peer)                                                            \
	rec.obj = (uintptr_t)(comm);                                                               \
	rec.bytes = (uint64_t)(count)*datatype_size(datatype);                                     \
	if ((peer) != SS_NO_PEER)                                                                  \
		rec.aux = (uint64_t)(uint32_t)(peer);
#define COMM(comm) rec.obj = (uintptr_t)(comm);
#define INIT(comm, nranks, rank, id)                                                               \
	if (ret == ncclSuccess)                                                                    \
		describe_created(&rec, (comm), (nranks), (rank), unique_id_hash(id), NULL);
#define INIT_ALL(comms, ndev)                                                                      \
	if (ret == ncclSuccess)                                                                    \
		describe_init_all(&rec, (comms), (ndev));
#define SPLIT(parent, newcomm, salt)                                                               \
	if (ret == ncclSuccess)                                                                    \
		describe_split(&rec, (parent), (newcomm), (uint32_t)(salt));

/* ------------------------------------------------------------------ the wrappers */

#define DEFINE_WRAPPER(name, cls, params, args, pre, post)                                         \
	SS_WRAPPER(ncclResult_t, ncclSystemError, name, SS_API_##name, cls, 0, params, args, pre,  \
		   post)

SS_NCCL_FUNCS(DEFINE_WRAPPER)
