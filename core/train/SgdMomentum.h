// The optimizer every card runs on its fp32 master weights: SGD with momentum and weight decay, as
// MindSpore's nn.Momentum (and torch.optim.SGD with momentum): v = momentum * v + g / scale + wd * w;
// w -= lr * v. The gradient is unscaled on the fly (`unscale` = 1 / loss scale). With `copy`, the new
// weights are also written there in the same pass (the flight recorder's copy without a second read),
// streamed past the cache.
#pragma once

#include <cstdint>

namespace rs {

void sgdMomentumStep(float* weights, float* velocity, const float* grads, int64_t count, float lr,
                     float momentum, float weightDecay, float unscale, float* copy = nullptr);

} // namespace rs
