// tests/models/test_module.cpp — the Module tree: paths, replacement, state dicts, modes.
#include "helpers.h"
#include "models/layers.h"

using namespace mase;
using namespace mase::nn;
using mase::test::check_close;

namespace {
// A two-level toy model: block.fc (Linear 3->2), block.act (ReLU), head (Linear 2->1, no bias)
struct Block : Module {
  ModulePtr fc, act;
  Block() {
    register_module("fc", fc, ModulePtr(std::make_shared<Linear>(3, 2)));
    register_module("act", act, ModulePtr(std::make_shared<ReLU>()));
  }
  std::string type_name() const override { return "Block"; }
  Tensor forward(const Tensor& x) override { return (*act)((*fc)(x)); }
};
struct Toy : Module {
  std::shared_ptr<Block> block;
  std::shared_ptr<Linear> head;
  Tensor scale;  // a buffer
  Toy() {
    register_module("block", block, std::make_shared<Block>());
    register_module("head", head, std::make_shared<Linear>(2, 1, false));
    register_buffer("scale", scale, Tensor::ones({1}));
  }
  std::string type_name() const override { return "Toy"; }
  Tensor forward(const Tensor& x) override { return (*head)((*block)(x)) * scale; }
};
}  // namespace

TEST_CASE("parameters are named by dotted paths in registration order") {
  auto m = std::make_shared<Toy>();
  std::vector<std::string> names;
  for (auto& [n, t] : m->named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"block.fc.weight", "block.fc.bias", "head.weight"});
  CHECK(m->num_parameters() == 3 * 2 + 2 + 2);  // each parameter counted once
  auto sd = m->state_dict();
  CHECK(sd.size() == 4);  // three parameters and the buffer
  CHECK(sd.count("scale") == 1);
  std::vector<std::string> mods;
  for (auto& [n, mod] : m->named_modules()) mods.push_back(n + ":" + mod->type_name());
  CHECK(mods == std::vector<std::string>{":Toy", "block:Block", "block.fc:Linear", "block.act:ReLU", "head:Linear"});
}

TEST_CASE("freezing a parameter drops it from the trainable count") {
  auto m = std::make_shared<Toy>();
  m->block->named_parameters()[0].second.set_requires_grad(false);  // block.fc.weight
  CHECK(m->num_parameters(true) == 2 + 2);
}

TEST_CASE("replace_submodule swaps a child and the parent's forward uses it") {
  auto m = std::make_shared<Toy>();
  Tensor x = Tensor::from({1, -2, 3}, {1, 3});
  m->replace_submodule("block.act", std::make_shared<Identity>());
  CHECK(m->submodule("block.act")->type_name() == "Identity");
  // with Identity instead of ReLU: y = head(fc(x)) exactly
  Linear& fc = dynamic_cast<Linear&>(*m->submodule("block.fc"));
  Tensor expect = matmul(linear(x, fc.weight, fc.bias), transpose(m->head->weight, 0, 1));
  check_close((*m)(x), expect, 1e-6);
  // a typed slot refuses a module of the wrong type, naming both
  CHECK(test::error_message([&] { m->replace_submodule("head", std::make_shared<ReLU>()); }) ==
        "[replace_submodule] 'head' holds a Linear and cannot hold a ReLU");
  CHECK_THROWS_AS(m->submodule("block.nope"), ConfigError);
}

TEST_CASE("replace_submodule, submodule and named_modules: misuse is a ConfigError, never a crash") {
  auto m = std::make_shared<Toy>();
  // a null module (was a null dereference while writing the message)
  CHECK(test::error_message([&] { m->replace_submodule("block.act", nullptr); }) ==
        "[replace_submodule] expected a module for 'block.act', got a null pointer (use Identity "
        "to remove one)");
  CHECK(m->submodule("block.act")->type_name() == "ReLU");  // untouched
  // a missing name deep in a path names the whole path
  CHECK(test::error_message([&] { m->submodule("block.nope"); }) ==
        "[submodule] no module 'nope' in Block (path 'block.nope')");
  // a module not owned by a shared_ptr (was std::bad_weak_ptr from shared_from_this)
  Block on_stack;
  CHECK_THROWS_AS(on_stack.named_modules(), ConfigError);
  CHECK_THROWS_AS(on_stack.submodule(""), ConfigError);
  on_stack.replace_submodule("act", std::make_shared<Identity>());  // needs no shared_ptr
  CHECK(on_stack.submodule("act")->type_name() == "Identity");
}

TEST_CASE("ModuleList::at: a child of another type or a bad index is a ConfigError") {
  auto list = std::make_shared<ModuleList>();
  list->push_back(std::make_shared<Linear>(2, 2));
  CHECK(list->at<Linear>(0).out_features == 2);
  list->replace_submodule("0", std::make_shared<Identity>());  // as a pass may
  CHECK(test::error_message([&] { list->at<Linear>(0); }) ==
        "[ModuleList] expected child 0 of the type asked for, got a Identity (was it replaced by "
        "a pass?)");
  CHECK_THROWS_AS(list->at<Identity>(1), ConfigError);
}

TEST_CASE("train and eval propagate to every module") {
  auto m = std::make_shared<Toy>();
  m->eval();
  for (auto& [n, mod] : m->named_modules()) CHECK(!mod->is_training());
  m->train();
  CHECK(m->submodule("block.fc")->is_training());
}

TEST_CASE("load_state_dict copies values in place and lists every mismatch") {
  auto a = std::make_shared<Toy>(), b = std::make_shared<Toy>();
  Tensor w_before = b->head->weight;
  b->load_state_dict(a->state_dict());
  CHECK(b->head->weight.is_same(w_before));  // same tensor, new values
  check_close(b->head->weight, a->head->weight);
  auto sd = a->state_dict();
  sd.erase("head.weight");
  sd["extra"] = Tensor::zeros({1});
  sd["block.fc.bias"] = Tensor::zeros({5});
  CHECK(test::error_message([&] { b->load_state_dict(sd); }) ==
        "[load_state_dict] checkpoint does not match the model: missing 1 key(s): head.weight; "
        "unexpected 1 key(s): extra; wrong shape: block.fc.bias (checkpoint (5), model (2))");
}

TEST_CASE("zero_grad zeroes gradients in place") {
  auto m = std::make_shared<Toy>();
  backward(sum((*m)(Tensor::ones({4, 3}))));
  Tensor g = m->head->weight.grad();
  REQUIRE(g.defined());
  m->zero_grad();
  CHECK(m->head->weight.grad().is_same(g));
  check_close(g, {0, 0});
}

TEST_CASE("Linear matches x·Wᵀ + b and initialises like PyTorch") {
  manual_seed(0);
  Linear fc(100, 50);
  auto w = fc.weight.to_vector<double>();
  double bound = 1.0 / std::sqrt(100.0), mx = 0;
  for (double v : w) mx = std::max(mx, std::abs(v));
  CHECK(mx <= bound);
  CHECK(mx > 0.95 * bound);  // 5000 draws: the max is close to the bound
  Linear small(2, 2);
  copy_(small.weight, Tensor::from({1, 2, 3, 4}, {2, 2}));
  copy_(small.bias, Tensor::from({10, 20}, {2}));
  // [1, 1]·[[1, 3], [2, 4]] + [10, 20] = [3 + 10, 7 + 20]
  check_close(small(Tensor::from({1, 1}, {1, 2})), {13, 27});
  CHECK(small.str() == "Linear(in_features=2, out_features=2, bias=true)\n");
}

TEST_CASE("to(Device): on the CPU nothing moves and every handle is kept") {
  auto m = std::make_shared<Toy>();
  Tensor w = m->block->fc->named_parameters()[0].second;
  void* before = w.raw_data();
  m->to(Device::cpu());
  CHECK(m->block->fc->named_parameters()[0].second.is_same(w));
  CHECK(w.raw_data() == before);
}

TEST_CASE("to(Device): CUDA without a GPU is a DeviceError and the model is left as it was") {
  if (cuda_device_count() > 0) return;  // this machine has a GPU: the next case covers it
  auto m = std::make_shared<Toy>();
  std::vector<float> before = m->head->weight.to_vector<float>();
  std::string msg = test::error_message([&] { m->to(Device::cuda()); });
  CHECK((msg.find("built without CUDA") != std::string::npos ||
         msg.find("no GPU") != std::string::npos));
  CHECK_THROWS_AS(m->to(Device::cuda()), DeviceError);
  CHECK(m->head->weight.is_cpu());
  CHECK(m->head->weight.to_vector<float>() == before);
}

TEST_CASE("to(Device): CPU -> GPU -> CPU in place keeps handles, values and gradients") {
  if (!test::have_gpu()) return;
  auto m = std::make_shared<Toy>();
  Tensor w = m->head->weight;  // the handle an optimizer would hold
  std::vector<float> before = w.to_vector<float>();
  backward(sum((*m)(Tensor::from({1, -2, 3}, {1, 3}))));
  std::vector<float> grad = w.grad().to_vector<float>();
  m->to(Device::cuda());
  CHECK(w.is_cuda());
  CHECK(w.grad().is_cuda());
  CHECK(m->scale.is_cuda());  // buffers too
  CHECK(m->head->weight.is_same(w));
  CHECK(w.to_vector<float>() == before);
  CHECK(w.grad().to_vector<float>() == grad);
  Tensor y = (*m)(Tensor::from({1, -2, 3}, {1, 3}).detach().to(Device::cuda()));
  CHECK(y.is_cuda());
  m->to(Device::cpu());
  CHECK(w.is_cpu());
  CHECK(w.to_vector<float>() == before);
}
