// LibTorch models (CIFAR variants) with MindSpore-style mixed precision emulated at tensor boundaries.
// Internal to core/train: only Replica.cpp and the benchmark include this (each LibTorch TU costs ~14 s).
#pragma once

#include "train/ModelKind.h"

#include <atomic>
#include <torch/torch.h>

namespace rs {

// How a forward pass treats precision. fp16 is emulated by rounding through half (LibTorch 1.13 has no
// fp16 convolution on CPU): values past 65504 become inf, tiny ones become 0, in both directions of autograd.
struct PrecisionPolicy {
    Precision level = Precision::O0;
    bool halfCompute() const { return level != Precision::O0; }   // conv/linear in fp16
    bool halfBatchNorm() const { return level == Precision::O3; } // BatchNorm in fp16 too
};

// Rounds a tensor through fp16 in forward and its gradient through fp16 in backward.
torch::Tensor roundHalf(const torch::Tensor& x);

// Common interface so the trainer and the benchmark can drive every preset the same way.
struct NetImpl : torch::nn::Module {
    PrecisionPolicy policy;
    at::Generator dropoutGen; // per replica: the global generator must not be shared across card threads
    const std::atomic<bool>* stopFlag = nullptr; // checked between blocks, forward and backward
    virtual torch::Tensor forward(torch::Tensor x) = 0;
};

// Thrown out of forward or backward when the stop flag is set: Stop need not wait for a whole step.
class ComputeStopped : public std::runtime_error {
public:
    ComputeStopped()
        : std::runtime_error("stopped during compute") {}
};

// Identity in both directions, except that it throws ComputeStopped once the net's stop flag is set.
torch::Tensor stopPoint(const NetImpl& net, const torch::Tensor& x);

// Builds a model from LibTorch's global generator: call serially, after torch::manual_seed.
std::shared_ptr<NetImpl> makeModel(ModelKind kind, PrecisionPolicy policy, uint64_t dropoutSeed);

} // namespace rs
