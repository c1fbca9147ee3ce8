// The model presets and precision levels, as names the config and the command line use.
#pragma once

#include <optional>
#include <string>

namespace rs {

enum class ModelKind { Mlp, SmallCnn, ResNet18, ResNet50 };

// MindSpore amp_level: O0 all fp32; O2 fp16 compute with fp32 master weights and fp32 BatchNorm; O3 all fp16.
enum class Precision { O0, O2, O3 };

std::optional<ModelKind> parseModelKind(const std::string& name);
std::string modelKindName(ModelKind kind);
std::optional<Precision> parsePrecision(const std::string& name);
std::string precisionName(Precision p);

} // namespace rs
