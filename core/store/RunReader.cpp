// RunReader: what every reader provides on top of its own reads.
#include "store/RunReader.h"

namespace rs {

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
