// Fashion-MNIST (Zalando's 28x28 grey images of clothes, 10 classes, 60,000 train and 10,000 test) in the
// CIFAR-10 shape every model here takes: each image padded to 32x32 (2 black pixels on each side) and
// repeated to 3 channels. Read from the idx files as Debian's dataset-fashion-mnist ships them
// (/usr/share/datasets/fashion-mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz, gzip; the unpacked
// files are read too). The whole split is loaded and checked when opened.
#pragma once

#include "train/Dataset.h"

namespace rs {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

class FashionMnistDataset : public Dataset {
public:
    static constexpr int kSide = 28; // the idx images' rows and columns
    // Throws DataError naming the file and what was wrong (missing, not gzip, wrong magic or shape, counts
    // that differ between images and labels, a label over 9, a short or long file).
    static std::unique_ptr<FashionMnistDataset> open(const std::string& dir, Split split);

    int64_t size() const override { return m_count; }
    int get(int64_t index, uint8_t* chw) const override;
    std::string describe() const override;

private:
    FashionMnistDataset(std::string dir, Split split, std::vector<uint8_t> pixels,
                        std::vector<uint8_t> labels);

    std::string m_dir;
    Split m_split;
    std::vector<uint8_t> m_pixels; // (count, 28, 28)
    std::vector<uint8_t> m_labels;
    int64_t m_count = 0;
};

} // namespace rs
