// A synthetic ResNet-50 run for the open/live benchmarks: the 161 trainable parameter tensors of
// torchvision's ResNet-50 (CIFAR stem: 3x3 conv1, 10 classes), and step, weight, eval and event records with
// plausible values (a smooth, decaying loss per rank with per-rank noise, fp16 overflows every ~1500 steps
// with a dynamic loss scale, gradient norms that shrink with training, sketches that agree across ranks up to
// noise). Values are a function of (seed, step, rank, parameter), so two generators with the same seed write
// the same file. Qt-free, no LibTorch: producing a step costs far less than writing it.
#pragma once

#include "store/RunRecords.h"

#include <cstdint>
#include <vector>

namespace rs::bench {

// ResNet-50 with the CIFAR stem: 161 tensors, ~23.5 M parameters; BatchNorm buffers listed apart.
RunMeta resnet50Meta(int ranks, int64_t plannedSteps, int sketchDim = 16, int batchPerRank = 32);

class SyntheticRun {
public:
    explicit SyntheticRun(const RunMeta& meta, uint64_t seed = 1);

    // Records for step s (0, 1, 2, ... in order: the dynamic loss scale carries over from step to step).
    const StepRecord& step(int64_t s);
    WeightRecord weights(int64_t s) const;
    EvalRecord eval(int64_t s) const;
    // The events a trainer would log at step s (overflows, one loss fluctuation, ...); usually none.
    std::vector<Event> events(int64_t s) const;

    bool wantsWeights(int64_t s) const { return m_meta.weightEvery > 0 && s % m_meta.weightEvery == 0; }
    bool wantsEval(int64_t s) const { return s > 0 && s % 1000 == 0; }

private:
    float meanLoss(int64_t s) const;
    bool overflowAt(int64_t s) const;

    RunMeta m_meta;
    uint64_t m_seed;
    std::vector<float> m_baseNorm; // per parameter: its typical gradient norm at step 0
    StepRecord m_record;           // reused: the vectors keep their capacity
    float m_lossScale = 65536.f;
    int64_t m_cleanSteps = 0;
    int64_t m_lastStep = -1;
};

} // namespace rs::bench
