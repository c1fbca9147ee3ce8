// fuzz_runfile's input side: the seed run files (fuzz/seeds/*.h5) and the mutations a fuzz program applies
// to a copy of one (see RunFileFuzz.cpp for the program's shape and what is read afterwards).
#pragma once

#include "FuzzInput.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rs::fuzz {

struct Region {
    uint64_t offset = 0, size = 0;
};

struct Seed {
    std::string name;
    std::string image;
    std::vector<Region> data; // where the datasets' raw data (contiguous blocks and chunks) lies
};

// Every *.h5 in RANKSIGHT_FUZZ_SEEDS, sorted by name; a fuzz bug if there is none.
const std::vector<Seed>& runFileSeeds();
// Applies the program's mutations (HDF5 C API or raw byte flips) to a copy of the seed written at path.
// Returns whether the program asks for the write-back checks (bit 3 of its mode byte).
bool mutateRunFile(const Seed& seed, const std::string& path, FuzzInput& in);

} // namespace rs::fuzz
