// runtime/kernels/allreduce.h — the contract of data-parallel training's collectives: every
// process (rank) of a job sums a buffer with all the others, in place.
//
//   CPU  runtime/cpu/allreduce.cpp   MPI (OpenMPI from Debian) over host memory; the ranks
//                                    are mpirun's processes (MPI_Comm_rank / MPI_Comm_size)
//   GPU  cuda/allreduce.cu           NCCL over device memory, one GPU per rank; its communicator
//                                    is bootstrapped from an id that rank 0 makes and MPI
//                                    broadcasts (at world size 1 nothing needs broadcasting)
// Both are optional at build time: without MPI (or NCCL) the functions throw a ConfigError
// (DeviceError for CUDA) saying what to install, and mpi_built() / nccl_built() say so up front.
// Who calls these: train/data_parallel.cpp only (the gradient all-reduce is a step of the
// optimizer). Sums are in fp32 for gradients (the reduction order is the library's: results
// equal a single process's within fp32 reassociation), fp64 for the few scalars of a step.
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"

namespace mase::cpu {

bool mpi_built();
// Under mpirun (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK set): true. MPI need not be built.
bool mpi_launched();
// MPI_Init_thread once per process (MPI_THREAD_FUNNELED: only the calling thread talks MPI);
// sets this process's rank and the job's world size.
void mpi_start(int* rank, int* world);
void mpi_stop();  // MPI_Finalize, if mpi_start ran
void mpi_allreduce_sum(float* buf, int64_t n);
void mpi_allreduce_sum(double* buf, int64_t n);
// Both the minimum and the maximum of v over the ranks (MPI_MIN, MPI_MAX).
void mpi_allreduce_min_max(uint64_t v, uint64_t* min, uint64_t* max);
// The bitwise OR of n bytes over the ranks, in place (MPI_BOR): a union of row masks.
void mpi_allreduce_or(uint8_t* buf, int64_t n);
// Whether every rank calls this with the same value within timeout_s: 1 (every rank called,
// all values equal), 0 (every rank called, values differ), -1 (not every rank called in time,
// or MPI is finalized or not built). Starts MPI when it has not started (an error can come
// before the job's start); *rank is this process's rank (0 on -1). Runs on a communicator of
// its own (duplicated at mpi_start), so a rank that never calls it never mismatches another
// collective: tools use it to print an error that every rank raised alike once, from rank 0.
int mpi_agree(uint64_t value, double timeout_s, int* rank);
void mpi_broadcast(void* buf, int64_t bytes, int root);
void mpi_barrier();

}  // namespace mase::cpu

namespace mase::cuda {

// NCCL's unique id is 128 bytes (NCCL_UNIQUE_ID_BYTES).
constexpr int kNcclIdBytes = 128;

#ifdef MASE_HAS_CUDA
bool nccl_built();
#else
inline bool nccl_built() { return false; }
#endif
// Rank 0 makes the id, every rank gets it (MPI at world > 1), then every rank starts with it.
MASE_CUDA_FN(void, nccl_unique_id, (char* id))
// ncclCommInitRank on the current device (set with cudaSetDevice first: one GPU per rank).
MASE_CUDA_FN(void, nccl_start, (const char* id, int rank, int world))
MASE_CUDA_FN(void, nccl_stop, ())
// Sums each of `count` device buffers over the ranks, in place, then multiplies it by `scale`
// (1 / world for the mean of the ranks' gradients: ncclAvg where scale is exactly that). The
// buffers go in one ncclGroupStart/End, i.e. one launch; waits for the result (stream sync).
MASE_CUDA_FN(void, nccl_allreduce_sum, (float* const* bufs, const int64_t* sizes, int count,
                                        float scale))

}  // namespace mase::cuda
