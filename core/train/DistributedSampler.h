// Shards a data set across data-parallel ranks with PyTorch DistributedSampler semantics
// (shuffle=True, drop_last=True): one permutation per epoch, identical on every rank, truncated to a
// multiple of the world size; rank r takes positions r, r+W, r+2W, ... The caller forms batches from
// consecutive chunks of indices().
#pragma once

#include <cstdint>
#include <vector>

namespace rs {

class DistributedSampler {
public:
    // Throws std::invalid_argument for datasetSize < 0, worldSize < 1 or rank outside 0..worldSize-1.
    DistributedSampler(int64_t datasetSize, int worldSize, int rank, uint64_t seed, bool shuffle = true);

    // Recomputes indices() for this epoch (the constructor starts at epoch 0).
    void setEpoch(int64_t epoch);
    int64_t epoch() const { return m_epoch; }

    int64_t numSamples() const { return m_datasetSize / m_worldSize; } // floor(datasetSize / worldSize)
    // This rank's numSamples() indices into the data set for the current epoch, in order.
    const std::vector<int64_t>& indices() const { return m_indices; }

    int worldSize() const { return m_worldSize; }
    int rank() const { return m_rank; }

    // The permutation of 0..datasetSize-1 every rank derives for (seed, epoch); identity without shuffle.
    static std::vector<int64_t> permutation(int64_t datasetSize, uint64_t seed, int64_t epoch,
                                            bool shuffle = true);

private:
    int64_t m_datasetSize;
    int m_worldSize;
    int m_rank;
    uint64_t m_seed;
    bool m_shuffle;
    int64_t m_epoch = 0;
    std::vector<int64_t> m_indices; // (numSamples)
};

} // namespace rs
