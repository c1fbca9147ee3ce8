// FashionMnistDataset: see FashionMnist.h. An idx file is a big-endian header (magic 0x00000803 for images
// with count, rows and columns; 0x00000801 for labels with count) and then one byte per pixel or label.
#include "train/FashionMnist.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <zlib.h>

namespace rs {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kImagesMagic = 0x00000803, kLabelsMagic = 0x00000801;
constexpr int64_t kMaxImages = int64_t(1) << 24; // far above the real set; bounds what a bad header allocates

// The whole (gzip or plain) file; zlib reads a plain file through unchanged.
std::vector<uint8_t> readAll(const fs::path& path) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f)
        throw DataError(fmt::format("Fashion-MNIST file '{}' cannot be opened", path.string()));
    std::vector<uint8_t> out;
    std::vector<uint8_t> chunk(1 << 20);
    for (;;) {
        const int n = gzread(f, chunk.data(), unsigned(chunk.size()));
        if (n < 0) {
            int code = 0;
            const std::string why = gzerror(f, &code);
            gzclose(f);
            throw DataError(
                fmt::format("Fashion-MNIST file '{}' is not a readable gzip file: {}", path.string(), why));
        }
        if (n == 0)
            break;
        out.insert(out.end(), chunk.begin(), chunk.begin() + n);
        if (int64_t(out.size()) > kMaxImages * 784 + 16)
            throw DataError(
                fmt::format("Fashion-MNIST file '{}' is larger than any idx file of the set", path.string()));
    }
    gzclose(f);
    return out;
}

uint32_t be32(const std::vector<uint8_t>& b, size_t at) {
    return uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 | uint32_t(b[at + 2]) << 8 | uint32_t(b[at + 3]);
}

// The file of a split: the .gz Debian ships, or the same name unpacked.
fs::path fileOf(const std::string& dir, const std::string& stem) {
    std::error_code ec;
    fs::path gz = fs::path(dir) / (stem + ".gz");
    if (fs::is_regular_file(gz, ec))
        return gz;
    fs::path plain = fs::path(dir) / stem;
    if (fs::is_regular_file(plain, ec))
        return plain;
    throw DataError(fmt::format(
        "Fashion-MNIST file '{}' is missing (nor is '{}' there){}", gz.string(), plain.filename().string(),
        dir == kFashionMnistDir ? " (install the package dataset-fashion-mnist)" : ""));
}

} // namespace

std::unique_ptr<FashionMnistDataset> FashionMnistDataset::open(const std::string& dir, Split split) {
    const std::string prefix = split == Split::Train ? "train" : "t10k";
    const fs::path imagesPath = fileOf(dir, prefix + "-images-idx3-ubyte");
    const fs::path labelsPath = fileOf(dir, prefix + "-labels-idx1-ubyte");
    std::vector<uint8_t> images = readAll(imagesPath), labels = readAll(labelsPath);
    if (images.size() < 16 || be32(images, 0) != kImagesMagic)
        throw DataError(fmt::format("Fashion-MNIST file '{}' is not an idx image file (magic 0x00000803)",
                                    imagesPath.string()));
    if (labels.size() < 8 || be32(labels, 0) != kLabelsMagic)
        throw DataError(fmt::format("Fashion-MNIST file '{}' is not an idx label file (magic 0x00000801)",
                                    labelsPath.string()));
    const int64_t count = be32(images, 4), rows = be32(images, 8), cols = be32(images, 12);
    if (rows != kSide || cols != kSide)
        throw DataError(fmt::format("Fashion-MNIST file '{}' holds {}x{} images, not 28x28",
                                    imagesPath.string(), rows, cols));
    if (count > kMaxImages || int64_t(images.size()) != 16 + count * kSide * kSide)
        throw DataError(fmt::format("Fashion-MNIST file '{}' says {} images but holds {} bytes of pixels",
                                    imagesPath.string(), count, images.size() - 16));
    if (int64_t(be32(labels, 4)) != count || int64_t(labels.size()) != 8 + count)
        throw DataError(fmt::format("Fashion-MNIST file '{}' holds {} labels for {} images in '{}'",
                                    labelsPath.string(), int64_t(labels.size()) - 8, count,
                                    imagesPath.filename().string()));
    const auto bad =
        std::find_if(labels.begin() + 8, labels.end(), [](uint8_t l) { return l >= kNumClasses; });
    if (bad != labels.end())
        throw DataError(fmt::format("Fashion-MNIST file '{}': label {} of image {} is not a class 0..9",
                                    labelsPath.string(), int(*bad), bad - labels.begin() - 8));
    images.erase(images.begin(), images.begin() + 16);
    labels.erase(labels.begin(), labels.begin() + 8);
    return std::unique_ptr<FashionMnistDataset>(
        new FashionMnistDataset(dir, split, std::move(images), std::move(labels)));
}

FashionMnistDataset::FashionMnistDataset(std::string dir, Split split, std::vector<uint8_t> pixels,
                                         std::vector<uint8_t> labels)
    : m_dir(std::move(dir))
    , m_split(split)
    , m_pixels(std::move(pixels))
    , m_labels(std::move(labels))
    , m_count(int64_t(m_labels.size())) {}

int FashionMnistDataset::get(int64_t index, uint8_t* chw) const {
    if (index < 0 || index >= m_count)
        throw std::out_of_range(fmt::format("Fashion-MNIST index {} out of range [0, {})", index, m_count));
    constexpr ptrdiff_t kPad = (kImageH - kSide) / 2, kPlane = ptrdiff_t(kImageH) * kImageW;
    const uint8_t* src = m_pixels.data() + size_t(index) * kSide * kSide;
    std::memset(chw, 0, kPlane);
    for (ptrdiff_t y = 0; y < kSide; ++y)
        std::memcpy(chw + (y + kPad) * kImageW + kPad, src + y * kSide, kSide);
    for (ptrdiff_t c = 1; c < kImageC; ++c) // grey: the same plane as R, G and B
        std::memcpy(chw + c * kPlane, chw, kPlane);
    return m_labels[size_t(index)];
}

std::string FashionMnistDataset::describe() const {
    return fmt::format("Fashion-MNIST {} ({}, {} images)", m_dir, splitName(m_split), m_count);
}

} // namespace rs
