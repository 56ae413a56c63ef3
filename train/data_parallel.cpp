// train/data_parallel.cpp — joining the job, slicing the batch, the bucketed gradient
// all-reduce, and the checks that keep ranks in step. Read train/data_parallel.h first.
#include "train/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "runtime/error.h"
#include "runtime/kernels/allreduce.h"

namespace mase::train {

namespace {

// FNV-1a: a config or a weight file compared across ranks by one number.
uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Whether each row of a (rows, cols) gradient holds anything but +0.0, by bit pattern: a -0.0
// counts, so a row left out of the sparse all-reduce is +0 on every rank, where the dense sum
// would give +0 too (the same bits either way). A used row usually stops at its first value.
void mark_rows(const Tensor& g, uint8_t* mask) {
  const int64_t rows = g.size(0), cols = g.numel() / std::max<int64_t>(rows, 1);
  const auto* bits = reinterpret_cast<const uint32_t*>(g.data<float>());
  for (int64_t r = 0; r < rows; ++r) {
    const uint32_t* row = bits + r * cols;
    mask[r] = std::any_of(row, row + cols, [](uint32_t b) { return b != 0; }) ? 1 : 0;
  }
}

RowSparsity row_sparsity_from_env() {  // MASE_DP_SPARSE=auto|on|off (auto when unset)
  const char* e = std::getenv("MASE_DP_SPARSE");
  const std::string v = e && *e ? e : "auto";
  MASE_CHECK(v == "auto" || v == "on" || v == "off", ConfigError,
             "[dist] MASE_DP_SPARSE expected auto, on or off, got '", v, "'");
  return v == "on" ? RowSparsity::on : v == "off" ? RowSparsity::off : RowSparsity::auto_;
}

// Rows [lo, hi) of a (B, ...) tensor, packed (the batch's tensors are CPU i32).
Tensor rows(const Tensor& t, int64_t lo, int64_t hi) {
  Shape shape = t.shape();
  shape[0] = hi - lo;
  return t.as_strided(shape, t.strides(), t.offset() + lo * t.strides()[0]).contiguous();
}

}  // namespace

DistBackend parse_dist(const std::string& s) {
  if (s == "none") return DistBackend::none;
  if (s == "mpi") return DistBackend::mpi;
  if (s == "nccl") return DistBackend::nccl;
  if (s == "auto") return cpu::mpi_launched() ? DistBackend::mpi : DistBackend::none;
  throw ConfigError(cat("[dist] expected --dist auto, none, mpi or nccl, got '", s, "'"));
}

bool quiet_rank(const std::string& line) {
  if (!cpu::mpi_launched()) return false;
  try {
    int rank = 0;
    const int agreed = cpu::mpi_agree(fnv1a(line.data(), line.size()), 2.0, &rank);
    if (agreed < 0) return false;
    cpu::mpi_stop();  // every rank is here
    return agreed == 1 && rank != 0;
  } catch (const std::exception&) {
    return false;
  }
}

void check_epoch_splits(int64_t reviews, int64_t batch_size, int world) {
  const int64_t last = batch_size > 0 ? reviews % batch_size : 0;  // 0: no shorter batch
  MASE_CHECK(last % world == 0, ConfigError, "[dist] expected every batch to split evenly over ",
             "the ", world, " ranks, got a last batch of ", last, " rows (", reviews,
             " training reviews in batches of ", batch_size, ": --train-subset ",
             reviews - last % world, ", or another --batch-size)");
}

uint64_t rank_seed(uint64_t seed, int rank) {
  return rank == 0 ? seed : seed ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(rank));
}

std::unique_ptr<DataParallel> DataParallel::start(DistBackend backend, Device device) {
  MASE_CHECK(backend != DistBackend::none, ConfigError, "[dist] start() needs mpi or nccl");
  MASE_CHECK(backend != DistBackend::nccl || device.is_cuda(), ConfigError,
             "[dist] --dist nccl expected --device cuda, got ", device.str(),
             " (on the CPU the ranks talk MPI: mpirun -np N mase-train --dist mpi)");
  MASE_CHECK(backend != DistBackend::mpi || !device.is_cuda(), ConfigError,
             "[dist] --dist mpi expected a CPU device, got ", device.str(),
             " (GPUs all-reduce with NCCL: --dist nccl)");
  std::unique_ptr<DataParallel> dp(new DataParallel());
  dp->backend_ = backend;
  dp->row_sparsity = row_sparsity_from_env();
  const bool mpi = backend == DistBackend::mpi || cpu::mpi_launched();
  if (mpi) {
    MASE_CHECK(cpu::mpi_built(), ConfigError, "[dist] ",
               backend == DistBackend::mpi ? "--dist mpi" : "mpirun",
               " expected a build with MPI, got one without (apt-get install libopenmpi-dev "
               "openmpi-bin, then reconfigure: scripts/setup.sh)");
    cpu::mpi_start(&dp->rank_, &dp->world_);
  }
  if (backend == DistBackend::nccl) {
    require_device(device);  // a GPU that is there, before NCCL says "unhandled cuda error"
    MASE_CHECK(cuda::nccl_built(), ConfigError, "[dist] --dist nccl expected a build with CUDA ",
               "and NCCL, got one without (reconfigure with -DMASE_CUDA=ON where nccl.h is)");
    char id[cuda::kNcclIdBytes] = {};
    if (dp->rank_ == 0) cuda::nccl_unique_id(id);
    if (dp->world_ > 1) cpu::mpi_broadcast(id, sizeof id, 0);
    cuda::nccl_start(id, dp->rank_, dp->world_);
    dp->nccl_ = true;
  }
  return dp;
}

DataParallel::~DataParallel() {
  if (abandoned_) return;
  if (nccl_) cuda::nccl_stop();
  cpu::mpi_stop();
}

std::pair<int64_t, int64_t> DataParallel::share(int64_t n) const {
  // every rank computes the same n, so every rank fails alike: rank 0 alone says it
  collective_failure_ = n % world_ != 0;
  MASE_CHECK(n % world_ == 0, ConfigError, "[dist] expected a batch size that divides by the ",
             world_, " ranks, got ", n, " (each rank trains on batch/ranks rows: try --batch-size ",
             (n / world_ + 1) * world_, ")");
  const int64_t per = n / world_;
  return {rank_ * per, (rank_ + 1) * per};
}

data::Batch DataParallel::slice(const data::Batch& b) const {
  const auto [lo, hi] = share(b.labels.size(0));
  data::Batch out;
  out.input_ids = rows(b.input_ids, lo, hi);
  out.attention_mask = rows(b.attention_mask, lo, hi);
  out.token_type_ids = rows(b.token_type_ids, lo, hi);
  out.labels = rows(b.labels, lo, hi);
  for (int32_t m : out.attention_mask.to_vector<int32_t>()) out.real_tokens += m;
  return out;
}

void DataParallel::average_gradients(const std::vector<Tensor>& params) {
  const auto t0 = std::chrono::steady_clock::now();
  const float scale = 1.0f / static_cast<float>(world_);
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    if (!p.grad().defined()) p.set_grad(Tensor::zeros_like(p));
    MASE_CHECK(p.grad().is_contiguous() && p.grad().dtype() == DType::f32, DTypeError,
               "[dist] expected contiguous f32 gradients, got ", p.grad().dtype(),
               p.grad().is_contiguous() ? "" : " (strided)");
    grads.push_back(p.grad());
  }
  if (nccl_) {  // one grouped launch over the gradients in place: NCCL buckets internally
    std::vector<float*> bufs;
    std::vector<int64_t> sizes;
    for (const Tensor& g : grads) {
      bufs.push_back(g.data<float>());
      sizes.push_back(g.numel());
    }
    cuda::nccl_allreduce_sum(bufs.data(), sizes.data(), static_cast<int>(bufs.size()), scale);
  } else {
    std::vector<Tensor> dense;
    std::vector<SparseGrad> sparse;
    split_by_rows(grads, dense, sparse);
    allreduce_buckets(dense, scale);
    allreduce_rows(sparse, scale);
  }
  last_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Which gradients go as rows (runtime/kernels/allreduce.h has the collectives): every rank marks
// the rows its gradient uses, one OR over the ranks gives the union (the same on every rank, so
// every rank makes the same choices and the same MPI calls), and a matrix whose union is at
// most half its rows (auto; every matrix with `on`) sends only those rows.
void DataParallel::split_by_rows(const std::vector<Tensor>& grads, std::vector<Tensor>& dense,
                                 std::vector<SparseGrad>& sparse) {
  std::vector<size_t> candidates;  // the matrices (a vector's rows are single values)
  int64_t mask_bytes = 0;
  if (row_sparsity != RowSparsity::off)
    for (size_t i = 0; i < grads.size(); ++i)
      if (grads[i].ndim() == 2 && grads[i].size(0) > 1) {
        candidates.push_back(i);
        mask_bytes += grads[i].size(0);
      }
  mask_.assign(static_cast<size_t>(mask_bytes), 0);
  int64_t at = 0;
  for (size_t i : candidates) {
    mark_rows(grads[i], mask_.data() + at);
    at += grads[i].size(0);
  }
  if (mask_bytes > 0) cpu::mpi_allreduce_or(mask_.data(), mask_bytes);
  sent_values_ = 0;
  at = 0;
  size_t next = 0;  // the next candidate, in grads' order
  for (size_t i = 0; i < grads.size(); ++i) {
    if (next == candidates.size() || candidates[next] != i) {
      dense.push_back(grads[i]);
      sent_values_ += grads[i].numel();
      continue;
    }
    ++next;
    const int64_t rows = grads[i].size(0);
    SparseGrad sg{grads[i], {}};
    for (int64_t r = 0; r < rows; ++r)
      if (mask_[static_cast<size_t>(at + r)]) sg.rows.push_back(r);
    at += rows;
    if (row_sparsity == RowSparsity::on || 2 * int64_t(sg.rows.size()) <= rows) {
      sent_values_ += int64_t(sg.rows.size()) * grads[i].size(1);
      sparse.push_back(std::move(sg));
    } else {
      dense.push_back(grads[i]);
      sent_values_ += grads[i].numel();
    }
  }
}

// Gradients packed into buckets of ~bucket_mb, one MPI_Allreduce each, unpacked scaled.
void DataParallel::allreduce_buckets(const std::vector<Tensor>& grads, float scale) {
  const auto cap = static_cast<int64_t>(bucket_mb * 1e6 / sizeof(float));
  size_t first = 0;
  while (first < grads.size()) {
    size_t last = first;
    int64_t n = 0;
    while (last < grads.size() && (n == 0 || n + grads[last].numel() <= cap))
      n += grads[last++].numel();
    bucket_.resize(static_cast<size_t>(n));
    int64_t at = 0;
    for (size_t i = first; i < last; ++i) {
      std::memcpy(bucket_.data() + at, grads[i].data<float>(), grads[i].nbytes());
      at += grads[i].numel();
    }
    cpu::mpi_allreduce_sum(bucket_.data(), n);
    at = 0;
    for (size_t i = first; i < last; ++i) {
      float* g = grads[i].data<float>();
      for (int64_t j = 0; j < grads[i].numel(); ++j) g[j] = bucket_[at + j] * scale;
      at += grads[i].numel();
    }
    first = last;
  }
}

// The union's rows of every sparse gradient in one buffer, one all-reduce, written back scaled.
// The other rows are +0 on every rank (mark_rows) and stay so: +0 · scale.
void DataParallel::allreduce_rows(const std::vector<SparseGrad>& sparse, float scale) {
  int64_t n = 0;
  for (const SparseGrad& s : sparse) n += int64_t(s.rows.size()) * s.grad.size(1);
  if (n == 0) return;
  bucket_.resize(static_cast<size_t>(n));
  float* at = bucket_.data();
  for (const SparseGrad& s : sparse) {
    const int64_t cols = s.grad.size(1);
    const float* g = s.grad.data<float>();
    for (int64_t r : s.rows) at = std::copy(g + r * cols, g + (r + 1) * cols, at);
  }
  cpu::mpi_allreduce_sum(bucket_.data(), n);
  const float* from = bucket_.data();
  for (const SparseGrad& s : sparse) {
    const int64_t cols = s.grad.size(1);
    float* g = s.grad.data<float>();
    for (int64_t r : s.rows)
      for (int64_t j = 0; j < cols; ++j) g[r * cols + j] = *from++ * scale;
  }
}

void DataParallel::sum(std::vector<double>& v) const {
  if (world_ > 1) cpu::mpi_allreduce_sum(v.data(), static_cast<int64_t>(v.size()));
}

std::string DataParallel::broadcast(const std::string& s) const {
  if (world_ == 1) return s;
  uint64_t n = s.size();
  cpu::mpi_broadcast(&n, sizeof n, 0);
  std::string out = rank_ == 0 ? s : std::string(n, '\0');
  cpu::mpi_broadcast(out.data(), static_cast<int64_t>(n), 0);
  return out;
}

void DataParallel::check_same(const std::string& what, const std::string& text) const {
  if (world_ == 1) return;
  uint64_t lo = 0, hi = 0;
  cpu::mpi_allreduce_min_max(fnv1a(text.data(), text.size()), &lo, &hi);
  collective_failure_ = lo != hi;
  MASE_CHECK(lo == hi, ConfigError, "[dist] expected every rank to have the same ", what,
             ", got ranks that differ (start every rank with the same flags and files)");
}

void DataParallel::check_same_bytes(
    const std::string& what, const std::vector<std::pair<const void*, size_t>>& parts) const {
  if (world_ == 1) return;
  uint64_t h = 1469598103934665603ull;
  for (const auto& [p, n] : parts) h = fnv1a(p, n, h);
  check_same(what, std::to_string(h));
}

void DataParallel::check_same_values(const std::string& what,
                                     const std::vector<Tensor>& tensors) const {
  if (world_ == 1) return;
  uint64_t h = 1469598103934665603ull;
  for (const Tensor& t : tensors) {
    const std::vector<float> v = t.to_vector<float>();
    h = fnv1a(v.data(), v.size() * sizeof(float), h);
  }
  check_same(what, std::to_string(h));
}

}  // namespace mase::train
