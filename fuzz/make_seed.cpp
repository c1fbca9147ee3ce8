// Writes fuzz/seeds/tiny-flight.h5: a run file made by the real RunWriter with a tiny meta (2 ranks,
// 2 parameter tensors of 5 elements, sketch dim 2) and a row in every table, flight dumps included (a
// ranksight-cli run's smallest model, the MLP, makes 3 MB flight entries). The other seed,
// mlp-2ranks-4steps.h5, comes from `ranksight-cli train` (see fuzz/README.md).
// Usage: make_seed OUT.h5
#include "store/RunWriter.h"

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_seed OUT.h5\n");
        return 2;
    }
    try {
        rs::RunMeta meta;
        meta.model = "mlp";
        meta.worldSize = 2;
        meta.batchPerRank = 2;
        meta.precision = "O2";
        meta.lossScale = "dynamic";
        meta.data = "synthetic";
        meta.seed = 1;
        meta.sketchDim = 2;
        meta.weightEvery = 2;
        meta.plannedSteps = 3;
        meta.configJson = R"({"model":"mlp","ranks":2})";
        meta.rankTableJson = "{}";
        meta.environment = "{}";
        meta.createdUtc = "2024-01-01T00:00:00Z";
        meta.params = {{"fc.weight", {3}, 3, 0}, {"fc.bias", {}, 2, 3}};
        meta.bufferNames = {"bn.running_mean"};
        meta.cards = {{0, 0, "192.0.2.10", "198.51.100.1", 1 << 30, 1 << 20},
                      {1, 1, "192.0.2.11", "198.51.100.1", 1 << 30, 1 << 20}};
        auto w = rs::RunWriter::create(argv[1], meta, true);
        for (int s = 0; s < 3; ++s) {
            rs::StepRecord rec;
            rec.step = s;
            rec.lr = 0.1f;
            rec.ranks.resize(2);
            for (int r = 0; r < 2; ++r) {
                rs::RankStep& k = rec.ranks[size_t(r)];
                k.loss = 2.0f - 0.1f * float(s) + 0.01f * float(r);
                k.lossScale = 65536;
                k.overflow = s == 1;
                k.sampleIds = {s * 4 + r * 2, s * 4 + r * 2 + 1};
                k.localNorm = {1, 2};
                k.localMax = {0.5f, 1};
                k.localSum = {0.25, -0.5};
                k.nonfinite = {0, 0};
                k.overflowCount = {0, 1};
                k.underflowCount = {2, 0};
                k.sketch = {0.1f, 0.2f, 0.3f, 0.4f};
                k.syncedNorm = {1.5f, 1.5f};
                k.syncedSum = {0.125, 0.125};
                k.syncedFp = {uint64_t(11 + r * (s == 2)), 12};
            }
            w->appendStep(rec);
            if (s % 2 == 0)
                w->appendWeights({s, {{1, 2}, {1, 2}}, {{1.f, 2.f}, {1.f, 2.f}}, {7, 7}, {0, 0}});
        }
        w->appendEval({2, {0.5f, 0.5f}, {1.2f, 1.3f}});
        w->appendEvent({1, -1, rs::Severity::Info, "OVERFLOW", "loss scale halved to 32768"});
        w->appendEvent({2, 1, rs::Severity::Warning, "GRADIENT_SYNC",
                        "Rank 0 and Rank 1 parameter gradient mismatch at step 2"});
        rs::FlightDump dump{2, "GRADIENT_SYNC at step 2", {}};
        for (int r = 0; r < 2; ++r)
            dump.entries.push_back({2, r, 1, {1, 2, 3, 4, float(r)}});
        w->appendFlightDump(dump);
        w->close("completed");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_seed: %s\n", e.what());
        return 1;
    }
    return 0;
}
