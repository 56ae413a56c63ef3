// runtime/cpu/quant_block.cpp — block formats, one block at a time, in f64 (see quant_block.h).
// The shared parameter and the element functions are quant_elem.h's (cuda/quant_block.cu runs
// the same ones).
#include "runtime/kernels/quant_block.h"

#include <cmath>

#include "runtime/kernels/quant_elem.h"
#include "runtime/parallel.h"

namespace mase::cpu {

template <class T>
void block_forward(T* out, const T* inp, int64_t rows, int64_t cols, const quant::FormatParams& f) {
  const int64_t bs = f.block_size;
  const int64_t grain = std::max<int64_t>(1, kGrainElems / std::max<int64_t>(cols, 1));
  parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t j = 0; j < cols; j += bs)
        quant::block_quantize(out + r * cols + j, inp + r * cols + j, std::min(bs, cols - j), f);
  });
}

int block_shared_param(const float* x, int64_t n, const quant::FormatParams& f) {
  const quant::BlockStats s = quant::block_stats(x, n);
  return quant::block_shared_param(s.amax, s.finite, f);
}

template void block_forward<float>(float*, const float*, int64_t, int64_t, const quant::FormatParams&);
template void block_forward<double>(double*, const double*, int64_t, int64_t, const quant::FormatParams&);

}  // namespace mase::cpu
