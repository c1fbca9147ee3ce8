// Fault-lab specs: `--fault NAME[@STEP][:RANK]`, NAME a cause id of the cause table (diagnose/Cause.h), which
// also says what each accepts after it (param-not-synced takes [:NAME], a parameter name; sdc-before and
// sdc-after take [:RANK[:BIT]], the bit of the float to flip). Parsing and validation only; what each fault
// does to a run lives in FaultPlan.
#pragma once

#include "diagnose/Cause.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rs {

struct FaultSpec {
    Cause cause{};
    std::string name;  // the cause's id
    int64_t step = -1; // -1: the fault's default step (FaultPlan)
    int rank = -1;     // -1: the last rank
    std::string param; // param-not-synced only; empty: the last parameter
    int bit = -1;      // sdc-before / sdc-after only: the bit flipped (0..31); -1: the top exponent bit
};

// Throws ConfigError naming the spec for an unknown name, bad syntax, or a step/rank the fault does not take.
FaultSpec parseFault(const std::string& text);
std::vector<FaultSpec> parseFaults(const std::vector<std::string>& texts);
// Checks ranks against the world size (duplicate-rank-id needs rank >= 1). Throws ConfigError.
void checkFaults(const std::vector<FaultSpec>& specs, int worldSize);

} // namespace rs
