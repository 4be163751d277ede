/*
 * interpose/nccl_table.h: every NCCL entry point of the sync model (N1, N2), declared once.
 *
 * SS_NCCL(name, class, (params), (args), pre, post)
 *   pre   STREAM(s)                        the stream the operation is enqueued on
 *         OP(comm, count, datatype, peer)  an operation: communicator, bytes, peer or root
 *         COMM(comm)                       a communicator being finalized/destroyed/aborted
 *   post  INIT(comm, nranks, rank, id)     a communicator created from a unique id
 *         SPLIT(parent, newcomm, salt)     a communicator derived from another one
 *         INIT_ALL(comms, ndev)            ncclCommInitAll's communicators
 *
 * The real functions are found through dlopen("libnccl.so.2", RTLD_NOLOAD) and their pnccl*
 * names first (docs/architecture.md F5: under Python, NCCL is loaded RTLD_LOCAL). Generated from
 * this table: ids, names, wrappers (nccl.c).
 */
#ifndef SYNCSPY_NCCL_TABLE_H
#define SYNCSPY_NCCL_TABLE_H

#define SS_NO_PEER (-1)

#define SS_NCCL_FUNCS(X)                                                                           \
	/* N1: communicator lifecycle */                                                           \
	X(ncclCommInitRank, N1, (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank),    \
	  (comm, nranks, commId, rank), , INIT(*comm, nranks, rank, &commId))                      \
	X(ncclCommInitRankConfig, N1,                                                              \
	  (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config),    \
	  (comm, nranks, commId, rank, config), , INIT(*comm, nranks, rank, &commId))              \
	X(ncclCommInitRankScalable, N1,                                                            \
	  (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds,           \
	   ncclConfig_t *config),                                                                  \
	  (newcomm, nranks, myrank, nId, commIds, config), ,                                       \
	  INIT(*newcomm, nranks, myrank, nId > 0 ? &commIds[0] : NULL))                            \
	X(ncclCommInitAll, N1, (ncclComm_t * comm, int ndev, const int *devlist),                  \
	  (comm, ndev, devlist), , INIT_ALL(comm, ndev))                                           \
	X(ncclCommSplit, N1,                                                                       \
	  (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config),        \
	  (comm, color, key, newcomm, config), COMM(comm), SPLIT(comm, *newcomm, color))           \
	X(ncclCommShrink, N1,                                                                      \
	  (ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm,     \
	   ncclConfig_t *config, int shrinkFlags),                                                 \
	  (comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags), COMM(comm),   \
	  SPLIT(comm, *newcomm, 0x5348524bu))                                                      \
	X(ncclCommFinalize, N1, (ncclComm_t comm), (comm), COMM(comm), )                           \
	X(ncclCommDestroy, N1, (ncclComm_t comm), (comm), COMM(comm), )                            \
	X(ncclCommAbort, N1, (ncclComm_t comm), (comm), COMM(comm), )                              \
	/* N2: operations */                                                                       \
	X(ncclAllReduce, N2,                                                                       \
	  (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,            \
	   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream),                                  \
	  (sendbuff, recvbuff, count, datatype, op, comm, stream),                                 \
	  STREAM(stream) OP(comm, count, datatype, SS_NO_PEER), )                                  \
	X(ncclBroadcast, N2,                                                                       \
	  (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,  \
	   ncclComm_t comm, cudaStream_t stream),                                                  \
	  (sendbuff, recvbuff, count, datatype, root, comm, stream),                               \
	  STREAM(stream) OP(comm, count, datatype, root), )                                        \
	X(ncclBcast, N2,                                                                           \
	  (void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,           \
	   cudaStream_t stream),                                                                   \
	  (buff, count, datatype, root, comm, stream),                                             \
	  STREAM(stream) OP(comm, count, datatype, root), )                                        \
	X(ncclReduce, N2,                                                                          \
	  (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,            \
	   ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream),                        \
	  (sendbuff, recvbuff, count, datatype, op, root, comm, stream),                           \
	  STREAM(stream) OP(comm, count, datatype, root), )                                        \
	X(ncclAllGather, N2,                                                                       \
	  (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,        \
	   ncclComm_t comm, cudaStream_t stream),                                                  \
	  (sendbuff, recvbuff, sendcount, datatype, comm, stream),                                 \
	  STREAM(stream) OP(comm, sendcount, datatype, SS_NO_PEER), )                              \
	X(ncclReduceScatter, N2,                                                                   \
	  (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,        \
	   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream),                                  \
	  (sendbuff, recvbuff, recvcount, datatype, op, comm, stream),                             \
	  STREAM(stream) OP(comm, recvcount, datatype, SS_NO_PEER), )                              \
	X(ncclAlltoAll, N2,                                                                        \
	  (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,            \
	   ncclComm_t comm, cudaStream_t stream),                                                  \
	  (sendbuff, recvbuff, count, datatype, comm, stream),                                     \
	  STREAM(stream) OP(comm, count, datatype, SS_NO_PEER), )                                  \
	X(ncclGather, N2,                                                                          \
	  (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,  \
	   ncclComm_t comm, cudaStream_t stream),                                                  \
	  (sendbuff, recvbuff, count, datatype, root, comm, stream),                               \
	  STREAM(stream) OP(comm, count, datatype, root), )                                        \
	X(ncclScatter, N2,                                                                         \
	  (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,  \
	   ncclComm_t comm, cudaStream_t stream),                                                  \
	  (sendbuff, recvbuff, count, datatype, root, comm, stream),                               \
	  STREAM(stream) OP(comm, count, datatype, root), )                                        \
	X(ncclSend, N2,                                                                            \
	  (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, \
	   cudaStream_t stream),                                                                   \
	  (sendbuff, count, datatype, peer, comm, stream),                                         \
	  STREAM(stream) OP(comm, count, datatype, peer), )                                        \
	X(ncclRecv, N2,                                                                            \
	  (void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,       \
	   cudaStream_t stream),                                                                   \
	  (recvbuff, count, datatype, peer, comm, stream),                                         \
	  STREAM(stream) OP(comm, count, datatype, peer), )                                        \
	X(ncclGroupStart, N2, (void), (), , )                                                      \
	X(ncclGroupEnd, N2, (void), (), , )

#endif
