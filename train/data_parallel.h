// train/data_parallel.h — data-parallel training: N processes (ranks) train one model, each
// on its share of every global batch, and sum their gradients before the optimizer step.
//
//   mpirun -np 2 mase-train --model bert-tiny --batch-size 32 ...     # CPU: MPI
//   mase-train --device cuda --dist nccl ...                          # GPU: NCCL (1 GPU/rank)
//
// One step (Trainer::train_step with a DataParallel):
//   rows    = rank r's rows [r·B/N, (r+1)·B/N) of the global batch of B (B % N == 0, the
//             epoch's last, shorter batch too: check_epoch_splits)
//   loss_r  = mean cross-entropy over its rows;  backward  -> each rank's gradients
//   grads   = (1/N) Σ_r grads_r     all-reduce, in buckets of ~bucket_mb (MPI_Allreduce on
//                                   the CPU; one grouped ncclAllReduce with ncclAvg on GPUs);
//                                   on the CPU a matrix most of whose rows no rank used (the
//                                   word embedding's) sends only the used rows (RowSparsity)
//   loss    = (1/N) Σ_r loss_r      with the tokens and a stop flag: one small fp64 all-reduce
// Equal row counts make (1/N) Σ_r mean_r the global batch's mean, so the step is a single
// process's on the whole batch up to the order of fp32 sums (tests/train/test_data_parallel.cpp,
// and `ctest -R mpirun`: 2 ranks' loss curve against 1 process's). Every rank then takes the
// same AdamW step on the same gradients: the weights stay equal without being sent again.
// The all-reduce runs after the backward, not overlapped with it: on the CPU a shared-memory
// all-reduce is copies done by the ranks' own cores, so there is nothing to overlap it with
// (bert-tiny on a Zen 5: 17.5 MB whole, 12-13 ms against a 37 ms rank step; as rows in use,
// 2.4 MB and 2.2 ms); on NVLink GPUs it is < 1% of a step (docs/scaling.md). Overlap would
// need gradient-ready hooks in autograd/.
//
// Rank 0 does everything that writes or prints (logs, evaluations, checkpoints, the final
// model); the others compute. At the start the ranks compare their configs (a hash: a rank
// started with other flags is refused with one line) and their initial weights (a hash of
// every value: all ranks seed and initialise, or load a checkpoint, the same way); dropout
// draws a different stream on every rank (seed mixed with the rank), as N single processes
// on different data would. A checkpoint records the world size; resume needs the same.
// Read next: runtime/kernels/allreduce.h (the collectives), train/trainer.h.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/batch.h"
#include "runtime/device.h"
#include "runtime/tensor.h"

namespace mase::train {

enum class DistBackend { none, mpi, nccl };

// Which gradients the MPI all-reduce sends as rows (DataParallel::average_gradients):
//   auto  a matrix whose rows in use on any rank are at most half of its rows — the word
//         embedding's, of which a batch touches a few thousand of 30,522 — sends those rows
//   on    every matrix sends its rows in use (for the tests); off: every gradient whole
// MASE_DP_SPARSE=auto|on|off sets it (auto by default). The sums are the dense ones' values.
enum class RowSparsity { auto_, on, off };
// "none", "mpi", "nccl"; "auto": mpi under mpirun, else none. ConfigError otherwise.
DistBackend parse_dist(const std::string& s);

class DataParallel {
 public:
  // Joins the job: MPI under mpirun (world and rank from MPI), and for nccl a NCCL
  // communicator on `device` (its id broadcast by MPI when world > 1; world 1 needs no MPI).
  // ConfigError if the build lacks MPI / NCCL or nccl is asked for a CPU device.
  static std::unique_ptr<DataParallel> start(DistBackend backend, Device device);
  ~DataParallel();  // NCCL's communicator, then MPI_Finalize
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  int rank() const { return rank_; }
  int world() const { return world_; }
  bool root() const { return rank_ == 0; }
  DistBackend backend() const { return backend_; }

  // This rank's rows of a global batch of `rows`: [first, second). ConfigError unless rows
  // divides by the world size (equal shares: see the step above).
  std::pair<int64_t, int64_t> share(int64_t rows) const;
  // Rank r's part of `batch` (rows first..second of each tensor, real_tokens recounted).
  data::Batch slice(const data::Batch& batch) const;

  // The mean of every rank's gradients, in place, over the trainable parameters in order.
  // A parameter that backward did not reach gets a zero gradient first (same buckets on
  // every rank). `seconds` of the last call, for the measurement: last_seconds().
  void average_gradients(const std::vector<Tensor>& params);
  double last_seconds() const { return last_seconds_; }
  // Gradient values the last call sent (of the rows in use, where sent as rows).
  int64_t last_sent_values() const { return sent_values_; }
  // Sums of a few host numbers over the ranks, in place.
  void sum(std::vector<double>& v) const;
  std::string broadcast(const std::string& s) const;  // rank 0's string
  // ConfigError (`what`, hint) on every rank unless every rank passed the same text / values.
  void check_same(const std::string& what, const std::string& text) const;
  void check_same_values(const std::string& what, const std::vector<Tensor>& tensors) const;
  // The same for byte ranges (the token ids and labels each rank loaded: its data folder and
  // cache may come from the environment, which the config does not record).
  void check_same_bytes(const std::string& what,
                        const std::vector<std::pair<const void*, size_t>>& parts) const;
  // Whether the last error was one every rank raised together (check_same): then rank 0
  // alone prints it.
  bool collective_failure() const { return collective_failure_; }
  // After an error of this rank alone: exit without MPI_Finalize (which would wait for ranks
  // blocked in a collective); mpirun then ends the others.
  void abandon() { abandoned_ = true; }

  double bucket_mb = 25;  // PyTorch DDP's default bucket size
  RowSparsity row_sparsity = RowSparsity::auto_;  // MASE_DP_SPARSE, read by start()

 private:
  struct SparseGrad {
    Tensor grad;                // (rows, cols)
    std::vector<int64_t> rows;  // the rows in use on some rank, ascending
  };
  void split_by_rows(const std::vector<Tensor>& grads, std::vector<Tensor>& dense,
                     std::vector<SparseGrad>& sparse);
  void allreduce_buckets(const std::vector<Tensor>& grads, float scale);
  void allreduce_rows(const std::vector<SparseGrad>& sparse, float scale);

  DataParallel() = default;
  DistBackend backend_ = DistBackend::none;
  bool nccl_ = false;
  int rank_ = 0, world_ = 1;
  double last_seconds_ = 0;
  mutable bool collective_failure_ = false;
  bool abandoned_ = false;
  std::vector<float> bucket_;  // host staging of one bucket (MPI)
  std::vector<uint8_t> mask_;  // the rows in use of every matrix, then their union (MPI)
  int64_t sent_values_ = 0;
};

// ConfigError unless every batch of an epoch of `reviews` splits evenly over `world` ranks: the
// full ones (batch_size rows: DataParallel::share) and the last, shorter one (reviews %
// batch_size rows), which bucketing may put anywhere in the epoch. Checked before the first
// step: the step that meets a last batch of 5 rows on 2 ranks cannot split it.
void check_epoch_splits(int64_t reviews, int64_t batch_size, int world);

// The dropout seed of rank r: rank 0 keeps `seed` (what checkpoints record); the others mix it.
uint64_t rank_seed(uint64_t seed, int rank);

// For the error line of a process under mpirun: true when it is not to print it. Every rank
// runs with the same flags and files, so most errors are every rank's alike: those are printed
// once, by rank 0. The ranks compare the line (a hash) on a communicator of their own
// (cpu::mpi_agree) and then end the job cleanly; a line of one rank's own, or one that the
// other ranks do not reach within 2 s (they went on), is printed by the rank that has it.
// Outside mpirun: false. For tools/cli.h's quiet_error.
bool quiet_rank(const std::string& line);

}  // namespace mase::train
