// Image data sets in CIFAR-10 shape (3x32x32 uint8, 10 classes): the built-in synthetic set that needs
// no download, and a reader for the real CIFAR-10 binary files. Samples are fetched by index, so a
// DistributedSampler can shard them and every card can read concurrently without locks.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace rs {

constexpr int kImageC = 3, kImageH = 32, kImageW = 32, kImageBytes = 3072, kNumClasses = 10;
constexpr int kCifarRecordBytes = 1 + kImageBytes; // label byte + R, G, B planes (row-major 32x32 each)

// A data set that could not be opened or read. The message names the file and the record or byte offset.
class DataError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

enum class Split { Train, Test };

const char* splitName(Split split); // "train" / "test"

class Dataset {
public:
    virtual ~Dataset() = default;
    virtual int64_t size() const = 0;
    // Writes one CHW uint8 image (kImageBytes, CIFAR channel order: R, G, B planes) to chw and returns
    // its label 0..9. Thread-safe and deterministic. Throws std::out_of_range for a bad index.
    virtual int get(int64_t index, uint8_t* chw) const = 0;
    // e.g. "synthetic CIFAR-10 (train, 50000 images, seed 7)" or "CIFAR-10 /data/cifar (train, 50000 images)"
    virtual std::string describe() const = 0;
};

// The built-in, learnable, CIFAR-shaped set. Each sample is generated on demand from
// (seed, split, index): no memory, no download, ~15 us per image. Each class is a combination of a
// shape, an oriented grating texture inside it and a hue; every single cue is shared by two classes or
// corrupted in some samples, so only their combination identifies the class. Position, scale,
// rotation, phase, brightness, contrast, background and clutter vary per sample, plus pixel noise.
// Train and Test are independent draws from the same distribution; labels are exactly balanced in
// every block of 10 consecutive indices.
class SyntheticCifar : public Dataset {
public:
    static constexpr int64_t kTrainSize = 50000;
    static constexpr int64_t kTestSize = 10000;

    explicit SyntheticCifar(Split split, uint64_t seed = 0,
                            int64_t size = -1 /* -1: 50000 train, 10000 test */);

    int64_t size() const override { return m_size; }
    int get(int64_t index, uint8_t* chw) const override;
    std::string describe() const override;

    // The label of a sample without rendering it.
    int label(int64_t index) const;

private:
    Split m_split;
    uint64_t m_seed;
    int64_t m_size;
    uint64_t m_stream; // hash of (seed, split): the root of every sample's random stream
};

// The real CIFAR-10 binary format: data_batch_1.bin..data_batch_5.bin (train) or test_batch.bin (test),
// each a sequence of 3073-byte records (1 label byte + 3072 pixel bytes). Files of the real set hold
// 10000 records; any whole number is accepted. The whole split is loaded into memory and validated.
class Cifar10Dataset : public Dataset {
public:
    // Throws DataError naming the directory or file and what was wrong.
    static std::unique_ptr<Cifar10Dataset> open(const std::string& dir, Split split);
    // The file names CIFAR-10 has for a split, in load order.
    static std::vector<std::string> expectedFiles(Split split);

    int64_t size() const override { return m_count; }
    int get(int64_t index, uint8_t* chw) const override;
    std::string describe() const override;

private:
    Cifar10Dataset(std::string dir, Split split, std::vector<uint8_t> records);

    std::string m_dir;
    Split m_split;
    std::vector<uint8_t> m_records; // (m_count, kCifarRecordBytes): label byte then CHW pixels
    int64_t m_count = 0;
};

// spec: "synthetic" (SyntheticCifar with the given seed), "cifar10:DIR" or "fashion-mnist[:DIR]" (DIR by
// default Debian's /usr/share/datasets/fashion-mnist; train/FashionMnist.h); the seed is for the synthetic
// set only. Throws DataError for an unknown spec or a data set that cannot be opened.
// Steps in one epoch: each rank's DistributedSampler share of the training set, in whole batches. Here, not
// in the trainer, so that the window's run estimate needs no LibTorch code.
int64_t stepsPerEpoch(int64_t datasetSize, int ranks, int batchPerRank);

// The training split's size for a data spec (as openDataset takes), without reading it: 60,000 for
// Fashion-MNIST, 50,000 for CIFAR-10 and the synthetic set.
int64_t trainSizeOf(const std::string& spec);

std::unique_ptr<Dataset> openDataset(const std::string& spec, Split split, uint64_t seed);

// Reads the n images ids[0..n) into images (n x kImageBytes floats, CHW, normalised with CIFAR-10's channel
// mean and std so the synthetic set and the real one look alike to a model) and their labels. raw is scratch.
void loadNormalizedBatch(const Dataset& data, const int64_t* ids, int n, std::vector<uint8_t>& raw,
                         std::vector<float>& images, std::vector<int64_t>& labels);

} // namespace rs
