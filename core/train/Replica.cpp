#include "train/Replica.h"

#include "train/Models.h"
#include "util/HalfConvert.h"
#include "util/Versions.h"

#include <torch/version.h>

namespace rs {
namespace {

// "layer1_0.conv1.weight" -> "layer1.0.conv1.weight": module names may not hold dots, users expect them.
std::string displayName(std::string name) {
    if (name.rfind("layer", 0) == 0) {
        const auto us = name.find('_');
        const auto dot = name.find('.');
        if (us != std::string::npos && us < dot)
            name[us] = '.';
    }
    return name;
}

} // namespace

struct Replica::Impl {
    std::shared_ptr<NetImpl> net;
    PrecisionPolicy policy;
    torch::Tensor flatWeights; // (P)
    torch::Tensor flatGrads;   // (P)
    std::vector<torch::Tensor> paramViews;
    std::vector<torch::Tensor> buffers;
    std::vector<ParamInfo> params;
    std::vector<std::string> bufferNames;
    const std::atomic<bool>* stopFlag = nullptr;

    // An exception out of autograd arrives as c10::Error; when the stop flag is up it was ours.
    [[noreturn]] void rethrow() const {
        if (stopFlag && stopFlag->load())
            throw ReplicaStopped();
        throw;
    }
};

Replica::Replica(const ReplicaOptions& options)
    : d(std::make_unique<Impl>()) {
    torch::manual_seed(options.initSeed);
    d->policy.level = options.precision;
    d->net = makeModel(options.model, d->policy, options.dropoutSeed);
    d->net->stopFlag = options.stopFlag;
    d->stopFlag = options.stopFlag;

    int64_t total = 0;
    for (const auto& item : d->net->named_parameters(true)) {
        ParamInfo info;
        info.name = displayName(item.key());
        info.shape = item.value().sizes().vec();
        info.numel = item.value().numel();
        info.offset = total;
        total += info.numel;
        d->params.push_back(info);
    }
    // Move every parameter into one flat buffer and give each a gradient view into another, so backward
    // accumulates straight into the buffer the all-reduce reads.
    d->flatWeights = torch::empty({total});
    d->flatGrads = torch::zeros({total});
    size_t i = 0;
    for (const auto& item : d->net->named_parameters(true)) {
        auto p = item.value();
        const auto& info = d->params[i++];
        auto wView = d->flatWeights.narrow(0, info.offset, info.numel).view(p.sizes());
        wView.copy_(p.detach());
        p.set_data(wView);
        p.mutable_grad() = d->flatGrads.narrow(0, info.offset, info.numel).view(p.sizes());
        d->paramViews.push_back(p);
    }
    for (const auto& item : d->net->named_buffers(true)) {
        if (item.key().find("num_batches_tracked") != std::string::npos)
            continue;
        d->bufferNames.push_back(displayName(item.key()));
        d->buffers.push_back(item.value());
    }
    if (options.precision == Precision::O3) // O3 keeps the weights themselves in fp16
        roundWeightsThroughHalf();
    d->net->train(true);
}

Replica::~Replica() = default;

const std::vector<ParamInfo>& Replica::params() const {
    return d->params;
}
const std::vector<std::string>& Replica::bufferNames() const {
    return d->bufferNames;
}
int64_t Replica::numParams() const {
    return d->flatWeights.numel();
}
float* Replica::weights() {
    return d->flatWeights.data_ptr<float>();
}
float* Replica::grads() {
    return d->flatGrads.data_ptr<float>();
}
void Replica::useGradientStorage(float* data) {
    if (data == grads())
        return;
    d->flatGrads = torch::from_blob(data, {numParams()}); // the replica's own buffer is freed here
    for (size_t i = 0; i < d->paramViews.size(); ++i) {
        auto& p = d->paramViews[i];
        p.mutable_grad() = d->flatGrads.narrow(0, d->params[i].offset, d->params[i].numel).view(p.sizes());
    }
}

const float* Replica::weights() const {
    return d->flatWeights.data_ptr<float>();
}
const float* Replica::grads() const {
    return d->flatGrads.data_ptr<float>();
}

std::vector<float> Replica::bufferValues() const {
    std::vector<float> out;
    for (const auto& b : d->buffers) {
        auto c = b.contiguous().to(torch::kFloat);
        out.insert(out.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
    }
    return out;
}

void Replica::setTrainMode(bool train) {
    d->net->train(train);
}
bool Replica::trainMode() const {
    return d->net->is_training();
}

BatchResult Replica::forwardBackward(const float* images, const int64_t* labels, int n, float lossScale) {
    torch::NoGradGuard noGrad; // re-enabled below only for the graph we need
    auto x = torch::from_blob(const_cast<float*>(images), {n, 3, 32, 32});
    auto y = torch::from_blob(const_cast<int64_t*>(labels), {n}, torch::kLong);
    d->flatGrads.zero_();
    BatchResult r;
    try {
        torch::AutoGradMode enable(true);
        auto logits = d->net->forward(x);
        auto loss = torch::nn::functional::cross_entropy(logits, y);
        (loss * lossScale).backward();
        r.loss = loss.item<float>();
        r.correct = logits.argmax(1).eq(y).sum().item<int>();
    } catch (...) {
        d->rethrow();
    }
    r.accuracy = n > 0 ? static_cast<float>(r.correct) / static_cast<float>(n) : 0.f;
    return r;
}

BatchResult Replica::evaluate(const float* images, const int64_t* labels, int n) {
    torch::NoGradGuard noGrad;
    const bool wasTraining = d->net->is_training();
    d->net->eval();
    auto x = torch::from_blob(const_cast<float*>(images), {n, 3, 32, 32});
    auto y = torch::from_blob(const_cast<int64_t*>(labels), {n}, torch::kLong);
    torch::Tensor logits;
    try {
        logits = d->net->forward(x);
    } catch (...) {
        d->net->train(wasTraining);
        d->rethrow();
    }
    BatchResult r;
    r.loss = torch::nn::functional::cross_entropy(logits, y).item<float>();
    r.correct = logits.argmax(1).eq(y).sum().item<int>();
    r.accuracy = n > 0 ? static_cast<float>(r.correct) / static_cast<float>(n) : 0.f;
    d->net->train(wasTraining);
    return r;
}

void Replica::gradsToHalf(uint16_t* out) const {
    floatsToHalves(grads(), out, static_cast<size_t>(numParams()));
}

void Replica::roundWeightsThroughHalf() {
    d->flatWeights.copy_(d->flatWeights.to(torch::kHalf));
}

int64_t Replica::activationBytesEstimate(int batch) const {
    // Rough: weights, gradients, momentum, plus activations kept for backward (about 40x the parameter
    // bytes per 32 images for the CIFAR ResNets). Good enough for an HBM gauge, not an allocator.
    const int64_t paramBytes = numParams() * 4;
    return paramBytes * 3 + paramBytes * 40 * batch / 32;
}

void setTorchThreads(int threads) {
    torch::set_num_threads(threads);
}

std::string torchVersion() {
    return TORCH_VERSION;
}

} // namespace rs
