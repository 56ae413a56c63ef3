// runtime/tensor.cpp — Tensor factories, views, copies, device moves (see tensor.h).
#include "runtime/tensor.h"

#include <cstring>

#include "runtime/kernels/copy.h"
#include "cuda/memory.h"

namespace mase {

namespace {
std::shared_ptr<TensorImpl> make_impl(std::shared_ptr<Storage> storage, const Shape& shape,
                                      const Strides& strides, int64_t offset, DType dtype) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->shape = shape;
  impl->strides = strides;
  impl->offset = offset;
  impl->dtype = dtype;
  return impl;
}

void check_shape(const Shape& shape, const char* op) {
  for (int64_t d : shape)
    MASE_CHECK(d >= 0, ShapeError, "[", op, "] sizes must be >= 0, got ", shape);
}
}  // namespace

// ---- factories ----------------------------------------------------------------------------
Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  check_shape(shape, "empty");
  if (device.is_cuda()) {
    if (!cuda::built) cuda::throw_not_built("to");
    MASE_CHECK(device.index < cuda::device_count(), DeviceError, "[empty] expected a GPU index < ",
               cuda::device_count(), ", got ", device, " (no such GPU)");
  }
  auto storage = std::make_shared<Storage>(mase::numel(shape) * itemsize(dtype), device);
  return Tensor(make_impl(std::move(storage), shape, contiguous_strides(shape), 0, dtype));
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  fill_(t, value);
  return t;
}
Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0.0, dtype, device);
}
Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1.0, dtype, device);
}
Tensor Tensor::scalar(double value, DType dtype, Device device) {
  return full(Shape{}, value, dtype, device);
}

Tensor Tensor::from_storage(std::shared_ptr<Storage> storage, const Shape& shape,
                            const Strides& strides, int64_t offset, DType dtype) {
  check_shape(shape, "from_storage");
  Tensor whole(make_impl(std::move(storage), {}, {}, 0, dtype));
  return whole.as_strided(shape, strides, offset);  // as_strided checks the bounds
}

template <class T>
Tensor Tensor::from(const std::vector<T>& values, const Shape& shape) {
  MASE_CHECK(static_cast<int64_t>(values.size()) == mase::numel(shape), ShapeError,
             "[from] expected ", mase::numel(shape), " values for shape ", shape, ", got ",
             values.size());
  Tensor t = empty(shape, dtype_of<T>());
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
  return t;
}
template Tensor Tensor::from(const std::vector<float>&, const Shape&);
template Tensor Tensor::from(const std::vector<double>&, const Shape&);
template Tensor Tensor::from(const std::vector<int32_t>&, const Shape&);
template Tensor Tensor::from(const std::vector<int8_t>&, const Shape&);
template Tensor Tensor::from(const std::vector<uint8_t>&, const Shape&);

// ---- accessors ----------------------------------------------------------------------------
TensorImpl& Tensor::checked_impl() const {
  if (!impl_) throw Error("[tensor] use of an undefined tensor (default-constructed Tensor)");
  return *impl_;
}
const Shape& Tensor::shape() const { return checked_impl().shape; }
const Strides& Tensor::strides() const { return checked_impl().strides; }
int64_t Tensor::offset() const { return checked_impl().offset; }
DType Tensor::dtype() const { return checked_impl().dtype; }
Device Tensor::device() const { return checked_impl().storage->device(); }
const std::shared_ptr<Storage>& Tensor::storage() const { return checked_impl().storage; }
int64_t Tensor::numel() const { return mase::numel(shape()); }
int64_t Tensor::size(int64_t dim) const { return shape()[normalize_dim(dim, ndim(), "size")]; }

bool Tensor::is_contiguous() const {
  const auto& sh = shape();
  const auto& st = strides();
  int64_t expected = 1;
  for (size_t i = sh.size(); i-- > 0;) {
    if (sh[i] != 1 && st[i] != expected) return false;  // size-1 dims may have any stride
    expected *= sh[i];
  }
  return true;
}

void* Tensor::raw_data() const {
  const auto& impl = checked_impl();
  return static_cast<char*>(impl.storage->data()) + impl.offset * itemsize(impl.dtype);
}

// ---- views and copies -----------------------------------------------------------------------
Tensor Tensor::as_strided(const Shape& shape, const Strides& strides, int64_t offset) const {
  MASE_CHECK(shape.size() == strides.size(), ShapeError, "[as_strided] shape ", shape, " has ",
             shape.size(), " dims but ", strides.size(), " strides were given");
  // the furthest element must lie inside the storage
  int64_t last = offset;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] > 0) last += (shape[d] - 1) * strides[d];
  bool empty = mase::numel(shape) == 0;
  MASE_CHECK(empty || (offset >= 0 && (last + 1) * static_cast<int64_t>(itemsize(dtype())) <=
                                          static_cast<int64_t>(storage()->nbytes())),
             ShapeError, "[as_strided] view ", shape, " at offset ", offset,
             " reaches outside its storage of ", storage()->nbytes(), " bytes");
  return Tensor(make_impl(storage(), shape, strides, offset, dtype()));
}

Tensor Tensor::detach() const {
  return Tensor(make_impl(storage(), shape(), strides(), offset(), dtype()));
}

namespace {
thread_local bool t_grad_enabled = true;
}
bool grad_enabled() { return t_grad_enabled; }
void set_grad_enabled(bool on) { t_grad_enabled = on; }

void Tensor::check_raw_copy(const char* what) const {
  MASE_CHECK(!(requires_grad() && grad_enabled()), Error, "[Tensor::", what, "] this ",
             shape(), " tensor requires grad and a raw copy would drop its history (use the ",
             "differentiable op, e.g. contiguous(x) or to_dtype(x, t), or x.detach().", what,
             "() when no gradient should flow)");
}

Tensor Tensor::clone() const {
  check_raw_copy("clone");
  Tensor out = empty(shape(), dtype(), device());
  copy_(out, *this);
  return out;
}

Tensor Tensor::contiguous() const {
  check_raw_copy("contiguous");
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::to(Device device) const {
  check_raw_copy("to");
  if (device == this->device()) return *this;
  Tensor out = empty(shape(), dtype(), device);
  copy_(out, *this);
  return out;
}

Tensor Tensor::to(DType dtype) const {
  check_raw_copy("to");
  if (dtype == this->dtype()) return *this;
  Tensor out = empty(shape(), dtype, device());
  copy_(out, *this);
  return out;
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  Tensor host = detach().to(Device::cpu()).to(dtype_of<T>()).contiguous();  // values only
  const T* p = host.data<T>();
  return std::vector<T>(p, p + host.numel());
}
template std::vector<float> Tensor::to_vector() const;
template std::vector<double> Tensor::to_vector() const;
template std::vector<int32_t> Tensor::to_vector() const;
template std::vector<int8_t> Tensor::to_vector() const;
template std::vector<uint8_t> Tensor::to_vector() const;

double Tensor::item() const {
  MASE_CHECK(numel() == 1, ShapeError, "[item] expected a tensor with 1 element, got shape ",
             shape());
  return to_vector<double>()[0];
}

// ---- autograd slots -------------------------------------------------------------------------
bool Tensor::requires_grad() const { return checked_impl().requires_grad; }
Tensor& Tensor::set_requires_grad(bool on) {
  MASE_CHECK(!on || is_floating(dtype()), DTypeError,
             "[requires_grad] only floating tensors can require grad, got ", dtype());
  checked_impl().requires_grad = on;
  return *this;
}
const Tensor& Tensor::grad() const { return checked_impl().grad; }
void Tensor::set_grad(const Tensor& g) const { checked_impl().grad = g; }
const std::shared_ptr<Node>& Tensor::grad_fn() const { return checked_impl().grad_fn; }
void Tensor::set_grad_fn(std::shared_ptr<Node> fn) const { checked_impl().grad_fn = std::move(fn); }

// ---- raw in-place helpers -----------------------------------------------------------------------
void fill_(const Tensor& t, double value) {
  if (t.is_contiguous()) {
    if (t.is_cpu()) cpu::fill(t.raw_data(), t.dtype(), value, t.numel());
    else cuda::fill(t.raw_data(), t.dtype(), value, t.numel(), t.device().index);
  } else {
    copy_(t, Tensor::full(t.shape(), value, t.dtype(), t.device()));
  }
}

void copy_(const Tensor& dst, const Tensor& src) {
  MASE_CHECK(dst.shape() == src.shape(), ShapeError, "[copy_] expected source shape ", dst.shape(),
             ", got ", src.shape());
  if (dst.numel() == 0) return;
  // 1. convert dtype (into a packed tensor on the source's device)
  Tensor s = src.detach();  // a raw copy: values only
  if (s.dtype() != dst.dtype()) {
    Tensor packed = s.contiguous();
    Tensor conv = Tensor::empty(s.shape(), dst.dtype(), s.device());
    if (s.is_cpu())
      cpu::convert(conv.raw_data(), conv.dtype(), packed.raw_data(), packed.dtype(), s.numel());
    else  // on the GPU itself: no round trip through the host
      cuda::convert(conv.raw_data(), conv.dtype(), packed.raw_data(), packed.dtype(), s.numel(),
                    s.device().index);
    s = conv;
  }
  // 2. move across devices: only packed buffers cross the bus
  if (s.device() != dst.device()) {
    Tensor packed = s.contiguous();
    bool direct = dst.is_contiguous();
    Tensor landing = direct ? dst : Tensor::empty(dst.shape(), dst.dtype(), dst.device());
    if (packed.is_cpu()) {
      cuda::copy_host_to_device(landing.raw_data(), packed.raw_data(), packed.nbytes(),
                                landing.device().index);
    } else if (landing.is_cpu()) {
      cuda::copy_device_to_host(landing.raw_data(), packed.raw_data(), packed.nbytes(),
                                packed.device().index);
    } else {
      throw DeviceError(cat("[copy_] copies between GPUs are not supported (", s.device(), " -> ",
                            dst.device(), ")"));
    }
    if (direct) return;
    s = landing;
  }
  // 3. same device, same dtype: a strided copy
  if (dst.is_cpu())
    cpu::copy_strided(dst.raw_data(), dst.strides(), s.raw_data(), s.strides(), dst.shape(),
                      itemsize(dst.dtype()));
  else
    cuda::copy_strided(dst.raw_data(), dst.strides(), s.raw_data(), s.strides(), dst.shape(),
                       itemsize(dst.dtype()), dst.device().index);
}

}  // namespace mase
