// runtime/cpu/allreduce.cpp — MPI's collectives over host memory (twin of cuda/allreduce.cu,
// which does the all-reduce with NCCL on the GPU; contract: runtime/kernels/allreduce.h).
// Compiled with MPI where CMake found it (MASE_HAS_MPI, runtime/CMakeLists.txt); otherwise
// every call but mpi_built / mpi_launched throws a ConfigError saying what to install.
#include <cstdlib>

#include "runtime/kernels/allreduce.h"

#ifdef MASE_HAS_MPI
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <thread>
#endif

namespace mase::cpu {

bool mpi_launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

#ifdef MASE_HAS_MPI

namespace {

bool g_started = false;
MPI_Comm g_agree = MPI_COMM_NULL;  // mpi_agree's own communicator

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw IoError(cat("[mpi] ", what, " failed: ", msg, " (did a rank die? see mpirun's message)"));
}

// MPI counts are int: a buffer larger than INT_MAX elements goes in pieces.
template <class T, class F>
void in_chunks(T* buf, int64_t n, F&& f) {
  for (int64_t done = 0; done < n;) {
    const int c = static_cast<int>(std::min<int64_t>(n - done, INT_MAX / 2));
    f(buf + done, c);
    done += c;
  }
}

}  // namespace

bool mpi_built() { return true; }

void mpi_start(int* rank, int* world) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    // Errors come back as codes (turned into exceptions above), not as an abort of the job.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    g_started = true;
  }
  check(MPI_Comm_rank(MPI_COMM_WORLD, rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, world), "MPI_Comm_size");
  // every rank's first collective after MPI_Init (wherever it starts MPI): they all match
  if (g_agree == MPI_COMM_NULL) check(MPI_Comm_dup(MPI_COMM_WORLD, &g_agree), "MPI_Comm_dup");
}

void mpi_stop() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (g_started && !finalized) {
    if (g_agree != MPI_COMM_NULL) MPI_Comm_free(&g_agree);
    MPI_Finalize();
  }
  g_started = false;
}

int mpi_agree(uint64_t value, double timeout_s, int* rank) {
  *rank = 0;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return -1;
  int world = 1;
  mpi_start(rank, &world);  // started already: reads rank and world
  // min over the ranks of (v, ~v): min(v) == v and min(~v) == ~v mean every v is the same
  uint64_t in[2] = {value, ~value}, out[2] = {0, 0};
  MPI_Request req;
  check(MPI_Iallreduce(in, out, 2, MPI_UINT64_T, MPI_MIN, g_agree, &req), "MPI_Iallreduce");
  const double deadline = MPI_Wtime() + timeout_s;
  for (int done = 0; !done;) {
    check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) break;
    if (MPI_Wtime() > deadline) return -1;  // left pending: the process is about to exit
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return out[0] == value && out[1] == ~value ? 1 : 0;
}

void mpi_allreduce_sum(float* buf, int64_t n) {
  in_chunks(buf, n, [](float* p, int c) {
    check(MPI_Allreduce(MPI_IN_PLACE, p, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  });
}

void mpi_allreduce_sum(double* buf, int64_t n) {
  in_chunks(buf, n, [](double* p, int c) {
    check(MPI_Allreduce(MPI_IN_PLACE, p, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  });
}

void mpi_allreduce_min_max(uint64_t v, uint64_t* min, uint64_t* max) {
  check(MPI_Allreduce(&v, min, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  check(MPI_Allreduce(&v, max, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
}

void mpi_allreduce_or(uint8_t* buf, int64_t n) {
  in_chunks(buf, n, [](uint8_t* p, int c) {
    check(MPI_Allreduce(MPI_IN_PLACE, p, c, MPI_UINT8_T, MPI_BOR, MPI_COMM_WORLD), "MPI_Allreduce");
  });
}

void mpi_broadcast(void* buf, int64_t bytes, int root) {
  in_chunks(static_cast<char*>(buf), bytes, [root](char* p, int c) {
    check(MPI_Bcast(p, c, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  });
}

void mpi_barrier() { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

#else  // built without MPI

namespace {
[[noreturn]] void no_mpi(const char* what) {
  throw ConfigError(cat("[", what, "] built without MPI (apt-get install libopenmpi-dev "
                        "openmpi-bin, then reconfigure: scripts/setup.sh)"));
}
}  // namespace

bool mpi_built() { return false; }
void mpi_start(int*, int*) { no_mpi("mpi_start"); }
void mpi_stop() {}
void mpi_allreduce_sum(float*, int64_t) { no_mpi("mpi_allreduce_sum"); }
void mpi_allreduce_sum(double*, int64_t) { no_mpi("mpi_allreduce_sum"); }
void mpi_allreduce_min_max(uint64_t, uint64_t*, uint64_t*) { no_mpi("mpi_allreduce_min_max"); }
void mpi_allreduce_or(uint8_t*, int64_t) { no_mpi("mpi_allreduce_or"); }
int mpi_agree(uint64_t, double, int* rank) {
  *rank = 0;
  return -1;
}
void mpi_broadcast(void*, int64_t, int) { no_mpi("mpi_broadcast"); }
void mpi_barrier() { no_mpi("mpi_barrier"); }

#endif

}  // namespace mase::cpu
