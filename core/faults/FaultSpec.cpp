// Fault spec grammar: NAME[@STEP][:RANK]. Faults that exist from the first step (a config or setup mistake)
// refuse @STEP, and faults that concern the whole job refuse :RANK, so a spec never silently means less
// than it says.
#include "faults/FaultSpec.h"

#include "util/ConfigError.h"

#include <algorithm>
#include <fmt/format.h>

namespace rs {
namespace {

bool takesStep(FaultArgs a) {
    return a == FaultArgs::Step || a == FaultArgs::StepRank || a == FaultArgs::StepParam ||
           a == FaultArgs::StepBit;
}

bool takesRank(FaultArgs a) {
    return a == FaultArgs::Rank || a == FaultArgs::StepRank || a == FaultArgs::StepBit;
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
    const CauseInfo* cause = findCause(f.name);
    if (!cause) {
        std::string known;
        for (const CauseInfo& c : causes())
            if (c.reproduce)
                known += (known.empty() ? "" : ", ") + std::string(c.key);
        throw ConfigError(fmt::format("fault '{}': unknown fault '{}' (known: {})", text, f.name, known));
    }
    if (!cause->reproduce)
        throw ConfigError(fmt::format("fault '{}': {} is named from records the lab does not make (imported "
                                      "flight-recorder dumps); it has no fault to inject",
                                      text, f.name));
    f.cause = cause->id;
    const FaultArgs args = cause->faultArgs;
    if (at != std::string::npos) {
        if (!takesStep(args))
            throw ConfigError(
                fmt::format("fault '{}': {} is there from the first step and takes no @STEP", text, f.name));
        f.step = toNumber(text, "step", head.substr(at + 1), int64_t(1) << 40);
    }
    if (colon != std::string::npos) {
        const std::string tail = text.substr(colon + 1);
        if (args == FaultArgs::StepParam) {
            if (tail.empty())
                throw ConfigError(fmt::format("fault '{}': empty parameter name", text));
            f.param = tail;
        } else if (!takesRank(args)) {
            throw ConfigError(
                fmt::format("fault '{}': {} concerns the whole job and takes no :RANK", text, f.name));
        } else if (args == FaultArgs::StepBit && tail.find(':') != std::string::npos) {
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
        if ((f.cause == Cause::DuplicateRankId || f.cause == Cause::RankExit ||
             f.cause == Cause::ShardUneven || f.cause == Cause::AllReduceWrong) &&
            worldSize < 2)
            throw ConfigError(fmt::format("fault '{}': needs at least 2 ranks", spec));
        if (f.cause == Cause::DuplicateRankId && f.rank == 0)
            throw ConfigError(fmt::format("fault '{}': rank 0 has no rank before it to copy", spec));
    }
}

} // namespace rs
