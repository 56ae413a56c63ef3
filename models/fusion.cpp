// models/fusion.cpp — the thread-local fusion switch (see fusion.h).
#include "models/fusion.h"

#include "models/module.h"

namespace mase::nn {
namespace {
thread_local bool t_fusion = true;
}  // namespace

bool fusion_enabled() { return t_fusion; }
void set_fusion_enabled(bool on) { t_fusion = on; }
FusionGuard::FusionGuard(bool on) : prev_(t_fusion) { t_fusion = on; }
FusionGuard::~FusionGuard() { t_fusion = prev_; }
bool use_fused_path() { return t_fusion && module_observer() == nullptr; }

}  // namespace mase::nn
