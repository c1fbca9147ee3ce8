// Fault spec grammar: NAME[@STEP][:RANK]. Faults that exist from the first step (a config or setup mistake)
// refuse @STEP, and faults that concern the whole job refuse :RANK, so a spec never silently means less
// than it says.
#include "faults/FaultSpec.h"

#include "train/TrainConfig.h"

#include <algorithm>
#include <fmt/format.h>

namespace rs {
namespace {

bool takesStep(const std::string& n) {
    return n == "rank-exit" || n == "eval-mode" || n == "overflow-not-synced" || n == "param-not-synced" ||
           n == "sdc-before" || n == "sdc-after" || n == "straggler" || n == "shard-uneven" ||
           n == "loss-scale-not-restored";
}

bool takesRank(const std::string& n) {
    return n == "duplicate-rank-id" || n == "rank-exit" || n == "shard-uneven" || n == "eval-mode" ||
           n == "sdc-before" || n == "sdc-after" || n == "straggler" || n == "loss-scale-not-restored";
}

int64_t toNumber(const std::string& spec, const char* what, const std::string& text, int64_t hi) {
    const bool digits = !text.empty() && text.size() <= 12 &&
                        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoll(text) > hi)
        throw ConfigError(
            fmt::format("fault '{}': {} '{}' is not an integer in [0, {}]", spec, what, text, hi));
    return std::stoll(text);
}

} // namespace

FaultSpec parseFault(const std::string& text) {
    FaultSpec f;
    const size_t colon = text.find(':');
    const std::string head = text.substr(0, colon);
    const size_t at = head.find('@');
    f.name = head.substr(0, at);
    if (std::find(kFaultNames.begin(), kFaultNames.end(), f.name) == kFaultNames.end()) {
        std::string known;
        for (auto n : kFaultNames)
            known += (known.empty() ? "" : ", ") + std::string(n);
        throw ConfigError(fmt::format("fault '{}': unknown fault '{}' (known: {})", text, f.name, known));
    }
    if (at != std::string::npos) {
        if (!takesStep(f.name))
            throw ConfigError(
                fmt::format("fault '{}': {} is there from the first step and takes no @STEP", text, f.name));
        f.step = toNumber(text, "step", head.substr(at + 1), int64_t(1) << 40);
    }
    if (colon != std::string::npos) {
        const std::string tail = text.substr(colon + 1);
        if (f.name == "param-not-synced") {
            if (tail.empty())
                throw ConfigError(fmt::format("fault '{}': empty parameter name", text));
            f.param = tail;
        } else if (!takesRank(f.name)) {
            throw ConfigError(
                fmt::format("fault '{}': {} concerns the whole job and takes no :RANK", text, f.name));
        } else if ((f.name == "sdc-before" || f.name == "sdc-after") && tail.find(':') != std::string::npos) {
            const size_t c2 = tail.find(':');
            f.rank = static_cast<int>(toNumber(text, "rank", tail.substr(0, c2), 4095));
            f.bit = static_cast<int>(toNumber(text, "bit", tail.substr(c2 + 1), 31));
        } else {
            f.rank = static_cast<int>(toNumber(text, "rank", tail, 4095));
        }
    }
    return f;
}

std::vector<FaultSpec> parseFaults(const std::vector<std::string>& texts) {
    std::vector<FaultSpec> out;
    out.reserve(texts.size());
    for (const auto& t : texts)
        out.push_back(parseFault(t));
    return out;
}

void checkFaults(const std::vector<FaultSpec>& specs, int worldSize) {
    for (const auto& f : specs) {
        const std::string spec = f.name + (f.step >= 0 ? fmt::format("@{}", f.step) : "") +
                                 (f.rank >= 0 ? fmt::format(":{}", f.rank) : "");
        if (f.rank >= worldSize)
            throw ConfigError(
                fmt::format("fault '{}': rank {} is outside 0..{}", spec, f.rank, worldSize - 1));
        if ((f.name == "duplicate-rank-id" || f.name == "rank-exit" || f.name == "shard-uneven") &&
            worldSize < 2)
            throw ConfigError(fmt::format("fault '{}': needs at least 2 ranks", spec));
        if (f.name == "duplicate-rank-id" && f.rank == 0)
            throw ConfigError(fmt::format("fault '{}': rank 0 has no rank before it to copy", spec));
    }
}

} // namespace rs
