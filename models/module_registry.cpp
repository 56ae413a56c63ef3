// models/module_registry.cpp — the type name -> factory table (see module_registry.h).
#include "models/module_registry.h"

#include <map>
#include <mutex>

#include "models/lora.h"
#include "runtime/random.h"

namespace mase::nn {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, ModuleFactory> factories;
};

template <class M>
ModulePtr no_config(const nlohmann::json&) {
  return std::make_shared<M>();
}

Registry& registry() {
  static Registry* r = [] {  // the built-in leaves, registered on first use
    auto* reg = new Registry;
    auto& f = reg->factories;
    f["Linear"] = [](const nlohmann::json& c) -> ModulePtr {
      return std::make_shared<Linear>(c.at("in_features").get<int64_t>(),
                                      c.at("out_features").get<int64_t>(),
                                      c.at("bias").get<bool>());
    };
    f["Embedding"] = [](const nlohmann::json& c) -> ModulePtr {
      return std::make_shared<Embedding>(c.at("num_embeddings").get<int64_t>(),
                                         c.at("embedding_dim").get<int64_t>());
    };
    f["LayerNorm"] = [](const nlohmann::json& c) -> ModulePtr {
      return std::make_shared<LayerNorm>(c.at("normalized_shape").get<int64_t>(),
                                         c.at("eps").get<double>());
    };
    f["Dropout"] = [](const nlohmann::json& c) -> ModulePtr {
      return std::make_shared<Dropout>(c.at("p").get<double>());
    };
    f["GELU"] = no_config<GELU>;
    f["Tanh"] = no_config<Tanh>;
    f["ReLU"] = no_config<ReLU>;
    f["Identity"] = no_config<Identity>;
    f["LoraLinear"] = [](const nlohmann::json& c) -> ModulePtr {
      return std::make_shared<LoraLinear>(
          c.at("in_features").get<int64_t>(), c.at("out_features").get<int64_t>(),
          c.at("bias").get<bool>(), c.at("rank").get<int64_t>(), c.at("alpha").get<double>(),
          c.at("dropout").get<double>());
    };
    return reg;
  }();
  return *r;
}

}  // namespace

void register_module_type(const std::string& type_name, ModuleFactory make) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.factories[type_name] = std::move(make);
}

bool is_registered_module_type(const std::string& type_name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.factories.count(type_name) > 0;
}

std::vector<std::string> registered_module_types() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [name, f] : r.factories) names.push_back(name);
  return names;
}

ModulePtr make_module(const std::string& type_name, const nlohmann::json& config) {
  ModuleFactory make;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.factories.find(type_name);
    if (it == r.factories.end()) {
      std::string known;
      for (const auto& [name, f] : r.factories) known += (known.empty() ? "" : ", ") + name;
      throw ConfigError(cat("[make_module] expected a registered module type (", known, "), got '",
                            type_name, "' (register it with nn::register_module_type)"));
    }
    make = it->second;
  }
  KeepDefaultGenerator keep;  // constructors draw initial weights: leave the stream
  try {
    return make(config);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(cat("[make_module] bad config for ", type_name, ": ", e.what(), " (config ",
                          config.dump(), ")"));
  }
}

}  // namespace mase::nn
