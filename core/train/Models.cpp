#include "train/Models.h"

#include "util/HalfConvert.h"

namespace rs {
namespace {

// Rounds through fp16 with the fast bulk conversion (LibTorch's own CPU half conversion is scalar).
torch::Tensor roundedCopy(const torch::Tensor& x) {
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    roundFloatsThroughHalf(in.data_ptr<float>(), out.data_ptr<float>(), static_cast<size_t>(in.numel()));
    return out;
}

struct HalfRound : torch::autograd::Function<HalfRound> {
    static torch::Tensor forward(torch::autograd::AutogradContext*, const torch::Tensor& x) {
        return roundedCopy(x);
    }
    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::tensor_list grads) {
        return {roundedCopy(grads[0])};
    }
};

// A parameter's fp16 copy: rounded in forward, but its gradient leaves backward unrounded. The trainer rounds
// it when it builds the fp16 all-reduce payload, after telemetry has counted what fp16 loses there (the
// underflow and overflow counts would always read zero if backward had rounded it already). The synced
// gradient is the same either way: one rounding of the same value.
struct HalfParam : torch::autograd::Function<HalfParam> {
    static torch::Tensor forward(torch::autograd::AutogradContext*, const torch::Tensor& x) {
        return roundedCopy(x);
    }
    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::tensor_list grads) {
        return {grads[0]};
    }
};

torch::Tensor halfParam(const torch::Tensor& p) {
    return HalfParam::apply(p);
}

struct StopPoint : torch::autograd::Function<StopPoint> {
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                 int64_t flag) {
        ctx->saved_data["flag"] = flag;
        // NOLINTNEXTLINE(performance-no-int-to-ptr): autograd carries the stop flag's address as an int64
        if (flag && reinterpret_cast<const std::atomic<bool>*>(flag)->load(std::memory_order_relaxed))
            throw ComputeStopped();
        return x.view_as(x);
    }
    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::tensor_list grads) {
        const int64_t flag = ctx->saved_data["flag"].toInt();
        // NOLINTNEXTLINE(performance-no-int-to-ptr): autograd carries the stop flag's address as an int64
        if (flag && reinterpret_cast<const std::atomic<bool>*>(flag)->load(std::memory_order_relaxed))
            throw ComputeStopped();
        return {grads[0], torch::Tensor()};
    }
};

// Convolution / linear / BatchNorm applied with the precision policy: inputs, weights and outputs rounded
// through fp16 where the level computes in fp16; master weights stay fp32 (O2) in the parameter itself.
torch::Tensor conv(const NetImpl& net, torch::nn::Conv2d& c, const torch::Tensor& x) {
    const auto& o = c->options;
    if (!net.policy.halfCompute())
        return c->forward(x);
    auto y =
        torch::conv2d(roundHalf(x), halfParam(c->weight), c->bias.defined() ? halfParam(c->bias) : c->bias,
                      o.stride(), c10::get<torch::ExpandingArray<2>>(o.padding()), o.dilation(), o.groups());
    return roundHalf(y);
}

torch::Tensor linear(const NetImpl& net, torch::nn::Linear& l, const torch::Tensor& x) {
    if (!net.policy.halfCompute())
        return l->forward(x);
    return roundHalf(torch::linear(roundHalf(x), halfParam(l->weight), halfParam(l->bias)));
}

torch::Tensor batchNorm(const NetImpl& net, torch::nn::BatchNorm2d& bn, const torch::Tensor& x) {
    if (!net.policy.halfBatchNorm())
        return bn->forward(x);
    // O3: BatchNorm in fp16 as well (weights and output); running statistics stay buffers.
    auto y = torch::batch_norm(roundHalf(x), halfParam(bn->weight), halfParam(bn->bias), bn->running_mean,
                               bn->running_var, net.is_training(), 0.1, 1e-5, false);
    return roundHalf(y);
}

torch::Tensor dropout(NetImpl& net, const torch::Tensor& x, double p) {
    if (!net.is_training() || p <= 0)
        return x;
    auto keep = torch::empty_like(x).bernoulli_(1.0 - p, net.dropoutGen);
    return x * keep / (1.0 - p);
}

torch::nn::Conv2d conv3x3(int64_t in, int64_t out, int64_t stride = 1) {
    return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
}
torch::nn::Conv2d conv1x1(int64_t in, int64_t out, int64_t stride = 1) {
    return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 1).stride(stride).bias(false));
}

struct Mlp : NetImpl {
    torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
    Mlp() {
        fc1 = register_module("fc1", torch::nn::Linear(3072, 256));
        fc2 = register_module("fc2", torch::nn::Linear(256, 128));
        fc3 = register_module("fc3", torch::nn::Linear(128, 10));
    }
    torch::Tensor forward(torch::Tensor x) override {
        x = x.flatten(1);
        x = torch::relu(linear(*this, fc1, x)); // no dropout: the data-parallel equivalence test needs none
        x = torch::relu(linear(*this, fc2, x));
        return linear(*this, fc3, x);
    }
};

// Three conv-BN-ReLU blocks with pooling, dropout, one classifier: seconds per epoch on a laptop core.
struct SmallCnn : NetImpl {
    torch::nn::Conv2d c1{nullptr}, c2{nullptr}, c3{nullptr};
    torch::nn::BatchNorm2d b1{nullptr}, b2{nullptr}, b3{nullptr};
    torch::nn::Linear fc{nullptr};
    SmallCnn() {
        c1 = register_module("conv1", conv3x3(3, 32));
        b1 = register_module("bn1", torch::nn::BatchNorm2d(32));
        c2 = register_module("conv2", conv3x3(32, 64));
        b2 = register_module("bn2", torch::nn::BatchNorm2d(64));
        c3 = register_module("conv3", conv3x3(64, 128));
        b3 = register_module("bn3", torch::nn::BatchNorm2d(128));
        fc = register_module("fc", torch::nn::Linear(128, 10));
    }
    torch::Tensor forward(torch::Tensor x) override {
        x = torch::max_pool2d(torch::relu(batchNorm(*this, b1, conv(*this, c1, x))), 2); // 16x16
        x = stopPoint(*this, x);
        x = torch::max_pool2d(torch::relu(batchNorm(*this, b2, conv(*this, c2, x))), 2); // 8x8
        x = torch::relu(batchNorm(*this, b3, conv(*this, c3, x)));
        x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
        x = dropout(*this, x, 0.2);
        return linear(*this, fc, x);
    }
};

struct BasicBlock : torch::nn::Module {
    static constexpr int64_t kExpansion = 1;
    torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, down{nullptr};
    torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, downBn{nullptr};
    BasicBlock(int64_t in, int64_t planes, int64_t stride) {
        conv1 = register_module("conv1", conv3x3(in, planes, stride));
        bn1 = register_module("bn1", torch::nn::BatchNorm2d(planes));
        conv2 = register_module("conv2", conv3x3(planes, planes));
        bn2 = register_module("bn2", torch::nn::BatchNorm2d(planes));
        if (stride != 1 || in != planes) {
            down = register_module("downsample_conv", conv1x1(in, planes, stride));
            downBn = register_module("downsample_bn", torch::nn::BatchNorm2d(planes));
        }
    }
    torch::nn::BatchNorm2d& lastBn() { return bn2; }
    torch::Tensor forward(NetImpl& net, const torch::Tensor& x) {
        auto y = torch::relu(batchNorm(net, bn1, conv(net, conv1, x)));
        y = batchNorm(net, bn2, conv(net, conv2, y));
        auto skip = down ? batchNorm(net, downBn, conv(net, down, x)) : x;
        return torch::relu(y + skip);
    }
};

struct Bottleneck : torch::nn::Module {
    static constexpr int64_t kExpansion = 4;
    torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr}, down{nullptr};
    torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr}, downBn{nullptr};
    Bottleneck(int64_t in, int64_t planes, int64_t stride) {
        conv1 = register_module("conv1", conv1x1(in, planes));
        bn1 = register_module("bn1", torch::nn::BatchNorm2d(planes));
        conv2 = register_module("conv2", conv3x3(planes, planes, stride));
        bn2 = register_module("bn2", torch::nn::BatchNorm2d(planes));
        conv3 = register_module("conv3", conv1x1(planes, planes * kExpansion));
        bn3 = register_module("bn3", torch::nn::BatchNorm2d(planes * kExpansion));
        if (stride != 1 || in != planes * kExpansion) {
            down = register_module("downsample_conv", conv1x1(in, planes * kExpansion, stride));
            downBn = register_module("downsample_bn", torch::nn::BatchNorm2d(planes * kExpansion));
        }
    }
    torch::nn::BatchNorm2d& lastBn() { return bn3; }
    torch::Tensor forward(NetImpl& net, const torch::Tensor& x) {
        auto y = torch::relu(batchNorm(net, bn1, conv(net, conv1, x)));
        y = torch::relu(batchNorm(net, bn2, conv(net, conv2, y)));
        y = batchNorm(net, bn3, conv(net, conv3, y));
        auto skip = down ? batchNorm(net, downBn, conv(net, down, x)) : x;
        return torch::relu(y + skip);
    }
};

// CIFAR ResNet: 3x3 stem, no max-pool, four stages (64..512 planes), global average pool.
template <typename Block> struct ResNet : NetImpl {
    torch::nn::Conv2d stem{nullptr};
    torch::nn::BatchNorm2d stemBn{nullptr};
    std::vector<std::shared_ptr<Block>> blocks;
    torch::nn::Linear fc{nullptr};
    explicit ResNet(std::array<int, 4> layers) {
        stem = register_module("conv1", conv3x3(3, 64));
        stemBn = register_module("bn1", torch::nn::BatchNorm2d(64));
        int64_t in = 64;
        const int64_t planes[4] = {64, 128, 256, 512};
        for (int s = 0; s < 4; ++s) {
            for (int b = 0; b < layers[s]; ++b) {
                const int64_t stride = (s > 0 && b == 0) ? 2 : 1;
                auto block = std::make_shared<Block>(in, planes[s], stride);
                register_module("layer" + std::to_string(s + 1) + "_" + std::to_string(b), block);
                blocks.push_back(block);
                in = planes[s] * Block::kExpansion;
            }
        }
        fc = register_module("fc", torch::nn::Linear(in, 10));
        torch::NoGradGuard noGrad;
        for (auto& m : modules(false)) {
            if (auto* c = m->template as<torch::nn::Conv2d>())
                torch::nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
        }
        // Zero-init the last BatchNorm of every residual branch: each block starts as the identity, which
        // keeps early training stable at the small per-card batches of an emulated cluster (Goyal et al.,
        // 2017).
        for (auto& block : blocks)
            block->lastBn()->weight.zero_();
    }
    torch::Tensor forward(torch::Tensor x) override {
        x = torch::relu(batchNorm(*this, stemBn, conv(*this, stem, x)));
        for (auto& block : blocks)
            x = block->forward(*this, stopPoint(*this, x));
        x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
        return linear(*this, fc, x);
    }
};

} // namespace

torch::Tensor roundHalf(const torch::Tensor& x) {
    return HalfRound::apply(x);
}

torch::Tensor stopPoint(const NetImpl& net, const torch::Tensor& x) {
    if (!net.stopFlag)
        return x;
    return StopPoint::apply(x, static_cast<int64_t>(reinterpret_cast<intptr_t>(net.stopFlag)));
}

std::shared_ptr<NetImpl> makeModel(ModelKind kind, PrecisionPolicy policy, uint64_t dropoutSeed) {
    std::shared_ptr<NetImpl> net;
    switch (kind) {
    case ModelKind::Mlp:
        net = std::make_shared<Mlp>();
        break;
    case ModelKind::SmallCnn:
        net = std::make_shared<SmallCnn>();
        break;
    case ModelKind::ResNet18:
        net = std::make_shared<ResNet<BasicBlock>>(std::array<int, 4>{2, 2, 2, 2});
        break;
    case ModelKind::ResNet50:
        net = std::make_shared<ResNet<Bottleneck>>(std::array<int, 4>{3, 4, 6, 3});
        break;
    }
    net->policy = policy;
    net->dropoutGen = at::make_generator<at::CPUGeneratorImpl>(dropoutSeed);
    return net;
}

} // namespace rs
