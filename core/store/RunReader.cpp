// RunReader: what every reader provides on top of its own reads.
#include "store/RunReader.h"

#include <algorithm>

namespace rs {

int64_t stepsPerRead(const RunMeta& meta, int64_t most) {
    // Per rank: the scalars and sample ids; per parameter the statistics of RankStep (about 56 bytes with
    // the vectors' share) and the sketch.
    const int64_t perRank = 96 + 4 * int64_t(std::max(meta.batchPerRank, 0)) +
                            int64_t(meta.params.size()) * (56 + 4 * int64_t(std::max(meta.sketchDim, 0)));
    const int64_t perStep = std::max<int64_t>(1, int64_t(std::max(meta.worldSize, 1)) * perRank);
    return std::clamp<int64_t>(kStepReadBytes / perStep, 1, std::max<int64_t>(1, most));
}

std::vector<WeightRecord> RunReader::readWeights() const {
    return readWeights(0, weightCount());
}

std::vector<EvalRecord> RunReader::readEvals() const {
    return readEvals(0, evalCount());
}

std::vector<int64_t> RunReader::readWeightSteps() const {
    return readWeightSteps(0, weightCount());
}

std::vector<Event> RunReader::readEvents() const {
    return readEvents(0, eventCount());
}
std::vector<Collective> RunReader::readCollectives() const {
    return readCollectives(0, collectiveCount());
}
std::vector<TensorStat> RunReader::readTensorStats() const {
    return readTensorStats(0, tensorStatCount());
}

RunData RunReader::readAll() const {
    RunData data;
    data.meta = meta();
    data.formatVersion = formatVersion();
    data.complete = complete();
    data.stopReason = stopReason();
    data.steps = readSteps(0, stepCount(), true);
    data.weights = readWeights();
    data.evals = readEvals();
    data.events = readEvents();
    data.flightDumps = readFlightDumps();
    data.collectives = readCollectives();
    data.tensorStats = readTensorStats();
    return data;
}

} // namespace rs
