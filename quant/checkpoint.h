// quant/checkpoint.h — saving and loading quantized, pruned and MXINT8 models.
//
// A compressed model directory is an ordinary model directory (models/checkpoint.h) plus a
// JSON sidecar describing the layers that are not plain Linears:
//   <dir>/config.json          BertConfig (HF form)
//   <dir>/model.safetensors    every parameter and buffer: weights under their HF keys, and
//                              weight_mask (u8), data_in_mu / weight_gamma, weight_elements
//                              (i8) / weight_scales (u8) next to them
//   <dir>/compression.json     {"format": "mase-compression", "version": 1, "layers": {
//                                "bert.encoder.layer.0.attention.self.query":
//                                  {"type": "QuantizedLinear", "quant": {...MASE config...},
//                                   "seed": 0, "weight_mask": true, "activation": {...}, ...},
//                                "classifier": {"type": "MxInt8Linear", "in_features": 128, ...}}}
//                              LoRA adapters (models/lora.h) that were not fused are layers too:
//                              {"type": "LoraLinear", "rank": 8, "alpha": 16, "dropout": 0},
//                              with lora_A / lora_B beside weight and bias in the safetensors
// Loading builds the model from config.json, rebuilds those layers from the sidecar (masks,
// formats, packed shapes, the activation generators' positions), then loads the tensors
// strictly: the reloaded model evaluates exactly as the saved one. A directory without
// compression.json loads as a plain model (from_pretrained). HF's from_pretrained reads a
// quantized or pruned directory too (it warns about the extra keys and computes unquantized);
// an MXINT8 one it cannot (no "weight" keys).
// Read next: docs/lab1.md.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "models/checkpoint.h"

namespace mase::quant {

// The sidecar's "layers" object for `model` (QuantizedLinear, MxInt8Linear and LoraLinear
// layers).
nlohmann::json compression_layers(nn::Module& model);
// Rebuild those layers in a freshly built `model` (values are loaded afterwards). ConfigError
// naming `source` for a path the model does not have or an entry that does not parse.
void apply_compression_layers(nn::Module& model, const nlohmann::json& layers,
                              const std::string& source = "compression.json");

// If <dir>/compression.json exists, rebuild its layers in `model` (a model freshly built from
// <dir>/config.json) and return true; the tensors are loaded afterwards (a trainer restoring a
// checkpoint does that itself). IoError for a sidecar that is not one.
bool apply_compression_sidecar(nn::Module& model, const std::string& dir);

// Registers QuantizedLinear (and PrunedLinear, its name when only pruned) and MxInt8Linear
// with models/module_registry.h, so that an exported graph of a quantized, pruned or MXINT8
// model reloads (graph/export.cpp calls this before rebuilding modules).
void register_module_types();

// Saving is models/'s plain directory with quant/'s layers on top, in three steps:
//   apply_weight_masks(model);        pruned weights exactly 0 in what is written
//   nn::save_pretrained(model, dir);  config.json + model.safetensors (models/checkpoint.h)
//   save_sidecar(model, dir);         compression.json (atomically) when the model has
//                                     compressed or LoRA layers; else a stale one is removed,
//                                     so the directory is exactly save_pretrained's
// save_compressed does the three.
void apply_weight_masks(nn::Module& model);
void save_sidecar(nn::Module& model, const std::string& dir);
void save_compressed(nn::BertForSequenceClassification& model, const std::string& dir);
// The model saved by save_compressed (or a plain model directory).
std::shared_ptr<nn::BertForSequenceClassification> load_compressed(const std::string& dir);
// Into an existing model built from <dir>/config.json: with a compression.json in `dir`, its
// layers are rebuilt and model.safetensors is loaded strictly; without one, this is
// nn::load_pretrained_weights (HF checkpoints and their normalisation, `report` filled).
void load_compressed_weights(nn::BertForSequenceClassification& model, const std::string& dir,
                             nn::LoadReport* report = nullptr);

}  // namespace mase::quant
