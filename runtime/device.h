// runtime/device.h — where a tensor's memory lives: the CPU, or CUDA device N.
#pragma once
#include <ostream>
#include <string>
#include <string_view>

#include "runtime/error.h"

namespace mase {

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;  // which GPU; always 0 for the CPU

  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int i = 0) { return {DeviceType::cuda, i}; }
  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  bool operator==(const Device&) const = default;

  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

  // "cpu", "cuda", "cuda:1" -> Device; anything else is a ConfigError.
  static Device parse(std::string_view s) {
    if (s == "cpu") return cpu();
    if (s == "cuda") return cuda(0);
    if (s.starts_with("cuda:")) {
      std::string idx(s.substr(5));
      // at most 4 digits: std::stoi of "99999999999" would throw out_of_range, not this error
      if (!idx.empty() && idx.size() <= 4 && idx.find_first_not_of("0123456789") == std::string::npos)
        return cuda(std::stoi(idx));
    }
    throw ConfigError(cat("[device] expected cpu, cuda or cuda:N, got '", s, "'"));
  }
};

inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

// Whether this build has the CUDA kernels (-DMASE_CUDA=ON and nvcc found at configure time).
bool cuda_built();
// Usable GPUs: 0 when CUDA is not built, no driver is loaded or no GPU is present. Never throws.
int cuda_device_count();
// DeviceError unless tensors can be placed on `device`: a CUDA device needs a CUDA build and
// that GPU present. Module::to checks it; a trainer calls it before any slow work.
void require_device(Device device);

}  // namespace mase
