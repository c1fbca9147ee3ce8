// Everything a run is configured with: the keys of `--config FILE.json` and of the command-line flags. The
// members hold the defaults; which key, flag and form row sets each one is the table in ConfigKeys.h, which
// set, fromJson and toJson read.
#pragma once

#include "train/ModelKind.h"
#include "util/ConfigError.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace rs {

enum class LossScaleMode { None, Fixed, Dynamic };

struct LossScaleSpec {
    LossScaleMode mode = LossScaleMode::Dynamic;
    float value = 16777216.0f; // fixed value, or the dynamic initial scale (MindSpore: 2^24)
    float factor = 2.0f;
    int window = 2000;
};

// The loss_scale key (ConfigText.cpp).
LossScaleSpec
parseLossScale(const std::string& text); // none | fixed:V | dynamic | dynamic:INIT; throws ConfigError
std::string lossScaleName(const LossScaleSpec& spec);

// A run has at most kMaxRanks ranks; one process (a node, a server) runs at most kMaxCardsPerProcess of
// them as card threads, so that a larger run spreads over node processes (--nodes).
inline constexpr int kMaxRanks = 1024;
inline constexpr int kMaxCardsPerProcess = 64;

struct TrainConfig {
    ModelKind model = ModelKind::ResNet50;
    int ranks = 4; // the whole run's, over every node process (kMaxRanks)
    int batchPerRank = 32;
    int64_t steps = 100; // used when epochs == 0
    int64_t epochs = 0;
    Precision precision = Precision::O2;
    LossScaleSpec lossScale;
    std::string data = "synthetic"; // synthetic | cifar10:DIR | fashion-mnist[:DIR]
    uint64_t seed = 1;
    float lr = 0; // 0: the linear scaling rule, 0.05 x global batch / 128 (0.05 for 4 x 32)
    float momentum = 0.9f;
    float weightDecay = 1e-4f;
    std::string lrSchedule = "cosine"; // constant | cosine
    int64_t warmupSteps = 10;
    std::string rankTable;     // empty: generate one for the emulated cards
    std::string out;           // run file path
    bool broadcastInit = true; // rank 0's weights broadcast after init (MindSpore parameter_broadcast)
    bool gradientsMean = true; // all-reduce mean (true) or sum
    // The sharded update (MindSpore's enable_parallel_optimizer, ZeRO-1): after the all-reduce each rank
    // updates only its chunk of the weights (and keeps momentum for it), then the ranks all-gather the
    // weights.
    bool optimizerShard = false;
    bool telemetry = true; // per-parameter statistics, sketches and fingerprints
    int weightEvery = 10;  // weight fingerprints every K steps (and at step 0)
    int sketchDim = 16;
    int64_t evalEvery = 0; // 0: only at the end
    int evalSamples = 512; // held-out images each rank evaluates
    int flightSteps = 4;   // flight recorder depth (capped by flightBudgetMb)
    int flightBudgetMb = 1024;
    int timeoutMs = 30000; // every collective
    // Cards per server of the generated rank table; servers of equal size make the all-reduce hierarchical
    // (inside each server, then across servers), the same bits as that many node processes.
    int devicesPerServer = 8;
    // Multi-node (issue 12): this process is node `nodeRank` of `nodes`, each holding ranks / nodes cards in
    // whole servers, joined through master (HOST:PORT, node 0 listens there). Not config keys of the file.
    int nodes = 1;
    int nodeRank = 0;
    std::string master = "127.0.0.1:29500";
    int computeThreads = 0; // cards computing at once; 0: one per core
    // Fault-lab specs, NAME[@STEP][:RANK] (faults/FaultSpec.h). Deliberately left out of toJson(): the run
    // file must show a fault only through what training records, never name it.
    std::vector<std::string> faults;
    bool writeFile = true;  // not a config key: the benchmark measures runs without a run file
    bool overwrite = false; // not a config key: replace an existing run file (--force)

    static TrainConfig fromJson(const std::string& jsonText, const std::string& where); // throws ConfigError
    static TrainConfig fromFile(const std::string& path);
    // Applies one key (JSON name) from text, as the command line gives it. Throws ConfigError naming the key.
    void set(const std::string& key, const std::string& value);
    void addFault(const std::string& spec); // --fault SPEC; throws ConfigError naming the spec
    float effectiveLr() const {
        return lr > 0 ? lr : 0.05f * static_cast<float>(ranks * batchPerRank) / 128.0f;
    }
    std::string toJson() const;
    void validate() const; // throws ConfigError
};

} // namespace rs
