#include "train/ModelKind.h"

namespace rs {

std::optional<ModelKind> parseModelKind(const std::string& name) {
    if (name == "mlp")
        return ModelKind::Mlp;
    if (name == "smallcnn")
        return ModelKind::SmallCnn;
    if (name == "resnet18")
        return ModelKind::ResNet18;
    if (name == "resnet50")
        return ModelKind::ResNet50;
    return std::nullopt;
}

std::string modelKindName(ModelKind kind) {
    switch (kind) {
    case ModelKind::Mlp:
        return "mlp";
    case ModelKind::SmallCnn:
        return "smallcnn";
    case ModelKind::ResNet18:
        return "resnet18";
    case ModelKind::ResNet50:
        return "resnet50";
    }
    return "?";
}

std::optional<Precision> parsePrecision(const std::string& name) {
    if (name == "O0")
        return Precision::O0;
    if (name == "O2")
        return Precision::O2;
    if (name == "O3")
        return Precision::O3;
    return std::nullopt;
}

std::string precisionName(Precision p) {
    switch (p) {
    case Precision::O0:
        return "O0";
    case Precision::O2:
        return "O2";
    case Precision::O3:
        return "O3";
    }
    return "?";
}

} // namespace rs
