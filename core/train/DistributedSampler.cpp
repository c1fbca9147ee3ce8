// Per-epoch shuffled, rank-strided shards: a Fisher-Yates permutation driven by splitmix64.
#include "train/DistributedSampler.h"

#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

namespace rs {

namespace {

uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// Uniform in [0, bound) without modulo bias (Lemire's multiply-and-reject).
uint64_t uniformBelow(uint64_t& state, uint64_t bound) {
    for (;;) {
        const unsigned __int128 m = static_cast<unsigned __int128>(splitmix64(state)) * bound;
        const auto low = static_cast<uint64_t>(m);
        if (low >= bound || low >= (0 - bound) % bound)
            return static_cast<uint64_t>(m >> 64);
    }
}

} // namespace

DistributedSampler::DistributedSampler(int64_t datasetSize, int worldSize, int rank, uint64_t seed,
                                       bool shuffle)
    : m_datasetSize(datasetSize)
    , m_worldSize(worldSize)
    , m_rank(rank)
    , m_seed(seed)
    , m_shuffle(shuffle) {
    if (datasetSize < 0)
        throw std::invalid_argument("DistributedSampler: negative data set size " +
                                    std::to_string(datasetSize));
    if (worldSize < 1)
        throw std::invalid_argument("DistributedSampler: world size " + std::to_string(worldSize) + " < 1");
    if (rank < 0 || rank >= worldSize)
        throw std::invalid_argument("DistributedSampler: rank " + std::to_string(rank) + " outside 0.." +
                                    std::to_string(worldSize - 1));
    setEpoch(0);
}

std::vector<int64_t> DistributedSampler::permutation(int64_t datasetSize, uint64_t seed, int64_t epoch,
                                                     bool shuffle) {
    std::vector<int64_t> perm(static_cast<size_t>(datasetSize));
    std::iota(perm.begin(), perm.end(), int64_t{0});
    if (!shuffle)
        return perm;
    // Hash seed and epoch separately so neighbouring epochs do not get overlapping splitmix streams.
    uint64_t seedState = seed, epochState = static_cast<uint64_t>(epoch) ^ 0x65706f6368ULL; // "epoch"
    uint64_t state = splitmix64(seedState) ^ splitmix64(epochState);
    for (size_t i = perm.size(); i > 1; --i)
        std::swap(perm[i - 1], perm[uniformBelow(state, i)]);
    return perm;
}

void DistributedSampler::setEpoch(int64_t epoch) {
    m_epoch = epoch;
    const std::vector<int64_t> perm = permutation(m_datasetSize, m_seed, epoch, m_shuffle);
    const int64_t n = numSamples();
    m_indices.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        m_indices[static_cast<size_t>(i)] = perm[static_cast<size_t>(i * m_worldSize + m_rank)];
}

} // namespace rs
