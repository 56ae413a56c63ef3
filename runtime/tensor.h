// runtime/tensor.h — the Tensor: a typed, shaped view of a Storage.
//
// A Tensor is a cheap handle (a shared pointer to a TensorImpl): copying it copies the handle,
// as in PyTorch, so `Tensor b = a;` names the same tensor. The TensorImpl holds
//   storage  — the memory (shared by all views of it),
//   shape, strides (in elements), offset (in elements from the storage's start), dtype,
// and three slots used by autograd/ (which runtime/ itself never reads): requires_grad,
// grad, grad_fn. Element (i, j, k) lives at data + offset + i*strides[0] + j*strides[1] + ...
//
// Views — transpose, slice, reshape of contiguous data, expand — are new TensorImpls over
// the same Storage with other strides/offset: no copy. Their differentiable versions live in
// autograd/ops/view.cpp; the raw `as_strided` here is what they are built from.
//
// Read next: autograd/engine.h (how grad_fn is used), autograd/ops.h (every op).
#pragma once
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/device.h"
#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/shape.h"
#include "runtime/storage.h"

namespace mase {

struct Node;        // autograd/engine.h: the backward function that produced a tensor
struct TensorImpl;  // below

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor (like a null pointer); defined() is false

  // ---- factories (all raw: no autograd) -------------------------------------------------
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  static Tensor ones(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f32,
                     Device device = Device::cpu());
  static Tensor scalar(double value, DType dtype = DType::f32, Device device = Device::cpu());
  // A CPU tensor holding a copy of `values`, e.g. Tensor::from({1, 2, 3, 4}, {2, 2}).
  template <class T>
  static Tensor from(const std::vector<T>& values, const Shape& shape);
  static Tensor from(std::initializer_list<float> values, const Shape& shape) {
    return from(std::vector<float>(values), shape);
  }
  // A view over an existing Storage — e.g. borrowed memory (a memory-mapped checkpoint). No
  // copy; the view must lie inside the storage (ShapeError otherwise).
  static Tensor from_storage(std::shared_ptr<Storage> storage, const Shape& shape,
                             const Strides& strides, int64_t offset, DType dtype);
  static Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.dtype(), t.device()); }
  static Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype(), t.device()); }

  // ---- what it is -----------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  const Strides& strides() const;
  int64_t offset() const;
  int64_t ndim() const { return static_cast<int64_t>(shape().size()); }
  int64_t size(int64_t dim) const;  // negative dims count from the end
  int64_t numel() const;
  DType dtype() const;
  Device device() const;
  bool is_cpu() const { return device().is_cpu(); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * itemsize(dtype()); }

  // Pointer to element 0 of this view. Checks that T matches the dtype (DTypeError).
  template <class T>
  T* data() const;
  void* raw_data() const;  // untyped pointer to element 0

  // ---- raw views and copies (no autograd; ops in autograd/ wrap these) -------------------
  // The rule: a raw copy never carries gradient history, so contiguous(), clone() and to() of a
  // tensor that requires grad, in grad mode, throw (they would drop its history silently): use
  // the differentiable op (contiguous(x), to_dtype(x), ...) or say so with x.detach().clone().
  Tensor as_strided(const Shape& shape, const Strides& strides, int64_t offset) const;
  Tensor contiguous() const;       // this tensor if already contiguous, else a packed copy
  Tensor clone() const;            // always a packed copy, same device
  Tensor to(Device device) const;  // a copy on `device` (this tensor if already there)
  Tensor to(DType dtype) const;    // a converted copy (this tensor if already that dtype)
  Tensor detach() const;           // same storage and view, but no autograd history

  // Element values, copied to the host (works from any device, any strides).
  template <class T>
  std::vector<T> to_vector() const;
  double item() const;  // the value of a 1-element tensor, as double

  // ---- autograd slots (meaning given by autograd/engine.h) -------------------------------
  bool requires_grad() const;
  Tensor& set_requires_grad(bool on);
  const Tensor& grad() const;              // undefined until a backward reached this leaf
  void set_grad(const Tensor& g) const;
  const std::shared_ptr<Node>& grad_fn() const;
  void set_grad_fn(std::shared_ptr<Node> fn) const;
  bool is_leaf() const { return grad_fn() == nullptr; }

  // Same TensorImpl (the same handle target), not equal values.
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  TensorImpl* impl() const { return impl_.get(); }
  // A reference that does not keep the tensor alive, expired once every handle is gone (the
  // tracer, graph/trace.cpp, follows values by impl() and must not keep them alive).
  std::weak_ptr<const TensorImpl> weak() const { return impl_; }

  std::string str() const;  // "tensor((2, 2), f32, cpu)\n[[1, 2],\n [3, 4]]"

 private:
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  TensorImpl& checked_impl() const;
  void check_raw_copy(const char* what) const;  // the rule above
  std::shared_ptr<TensorImpl> impl_;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Strides strides;
  int64_t offset = 0;
  DType dtype = DType::f32;
  // autograd slots
  bool requires_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- grad mode: whether ops record history. Thread-local, on by default; autograd's
// NoGradGuard (autograd/engine.h) switches it. It lives here because the raw copies obey it.
bool grad_enabled();
void set_grad_enabled(bool on);

// ---- raw in-place helpers (no autograd) used by optimizers, init and kernels' callers -----
void fill_(const Tensor& t, double value);         // every element = value
// same shape; any strides; one device, or CPU <-> GPU (not GPU to GPU); converts dtype
void copy_(const Tensor& dst, const Tensor& src);

// ---- template definitions ---------------------------------------------------------------
template <class T>
T* Tensor::data() const {
  MASE_CHECK(dtype() == dtype_of<T>(), DTypeError, "[data] tensor is ", dtype(), ", accessed as ",
             dtype_of<T>());
  return static_cast<T*>(raw_data());
}

}  // namespace mase
