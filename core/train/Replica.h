// One card's model replica: a LibTorch model whose parameters and gradients live in flat fp32 buffers,
// so the all-reduce, the optimizer, fingerprints and the flight recorder work on plain memory.
// No LibTorch types in this header: the trainer stays an ordinary translation unit.
#pragma once

#include "store/RunRecords.h"
#include "train/ModelKind.h"

#include <atomic>
#include <memory>
#include <stdexcept>
#include <vector>

namespace rs {

struct ReplicaOptions {
    ModelKind model = ModelKind::Mlp;
    Precision precision = Precision::O0;
    uint64_t initSeed = 0;    // LibTorch's global generator is seeded with this before the model is built
    uint64_t dropoutSeed = 0; // per-replica dropout stream
    const std::atomic<bool>* stopFlag = nullptr; // when set, forward/backward abort with ReplicaStopped
};

// Thrown by forwardBackward/evaluate when the stop flag was raised mid-compute.
class ReplicaStopped : public std::runtime_error {
public:
    ReplicaStopped()
        : std::runtime_error("stopped during compute") {}
};

struct BatchResult {
    float loss = 0; // unscaled mean cross-entropy
    float accuracy = 0;
    int correct = 0;
};

class Replica {
public:
    // Builds the model from LibTorch's global generator: construct replicas one at a time.
    explicit Replica(const ReplicaOptions& options);
    ~Replica();
    Replica(const Replica&) = delete;
    Replica& operator=(const Replica&) = delete;

    const std::vector<ParamInfo>& params() const;
    const std::vector<std::string>& bufferNames() const;
    int64_t numParams() const; // elements in the flat buffers

    float* weights(); // (numParams) fp32 master weights
    float* grads();   // (numParams) gradients of the last backward
    // Backward accumulates into `data` from now on (numParams floats, owned by the caller, alive as long as
    // the replica uses them): the flight recorder hands each step its slot, so the local gradient is kept
    // without a copy.
    void useGradientStorage(float* data);
    const float* weights() const;
    const float* grads() const;
    std::vector<float> bufferValues() const; // BatchNorm running statistics, concatenated

    void setTrainMode(bool train); // Dropout and BatchNorm behaviour (set_train)
    bool trainMode() const;

    // images: (n, 3, 32, 32) normalised fp32; labels: (n). Zeroes the gradients, then forward and backward of
    // loss * lossScale. Gradients are left scaled and in fp32 so telemetry can count what fp16 will lose.
    BatchResult forwardBackward(const float* images, const int64_t* labels, int n, float lossScale);
    // fp16 payloads for the all-reduce: vectorised conversion of the flat gradient buffer. Under O2/O3 the
    // gradients leave backward in fp16; this conversion is where that rounding happens.
    void gradsToHalf(uint16_t* out) const;
    void roundWeightsThroughHalf(); // O3 keeps the weights themselves in fp16
    BatchResult evaluate(const float* images, const int64_t* labels, int n); // eval mode, no gradients

    int64_t activationBytesEstimate(int batch) const; // for the HBM estimate of the cards panel

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

// LibTorch runs intra-op work on a global pool; one card thread computes with one thread.
void setTorchThreads(int threads);

} // namespace rs
