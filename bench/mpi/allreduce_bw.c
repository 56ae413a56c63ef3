/* bench/mpi/allreduce_bw.c — the time of one MPI_Allreduce (sum, fp32, in place) of N floats
 * between the ranks of a job: what data-parallel training pays per step for a gradient of N
 * values, without the waiting for a slower rank that a training step adds (docs/scaling.md).
 * Plain MPI and C, outside the CMake build:
 *   mpicc -O2 bench/mpi/allreduce_bw.c -o /tmp/allreduce_bw
 *   mpirun -np 2 --bind-to none /tmp/allreduce_bw 4386178     # bert-tiny's gradient
 * Prints the best and mean of 20 calls after 3 warm-up calls, each started after a barrier. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const long n = argc > 1 ? atol(argv[1]) : 4386178;
  float* buf = calloc((size_t)n, sizeof(float));
  for (int i = 0; i < 3; ++i)
    MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  const int reps = 20;
  double best = 1e9, sum = 0;
  for (int i = 0; i < reps; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    t = MPI_Wtime() - t;
    sum += t;
    if (t < best) best = t;
  }
  if (rank == 0)
    printf("allreduce %ld floats (%.1f MB): best %.2f ms, mean %.2f ms, %.2f GB/s (best)\n", n,
           n * 4 / 1e6, best * 1e3, sum / reps * 1e3, n * 4 / best / 1e9);
  free(buf);
  MPI_Finalize();
  return 0;
}
