// The synthetic CIFAR-shaped generator, the CIFAR-10 binary reader and the data set spec parser
// (Fashion-MNIST's reader is train/FashionMnist.cpp).
#include "train/Dataset.h"

#include "train/FashionMnist.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <system_error>

namespace rs {

const char* splitName(Split split) {
    return split == Split::Train ? "train" : "test";
}

namespace {

// ---------------------------------------------------------------------------------------------------
// Random numbers: splitmix64, cheap and good enough to seed and drive one image's worth of draws.

uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

class Rng {
public:
    explicit Rng(uint64_t seed)
        : m_state(seed) {}
    uint64_t next() { return mix64(m_state += 0x9e3779b97f4a7c15ULL); }
    float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); } // [0, 1)
    float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }
    int below(int n) { return static_cast<int>((next() >> 33) % static_cast<uint64_t>(n)); }

private:
    uint64_t m_state;
};

constexpr uint64_t kLabelTag = 0x6c6162656c73ULL;  // "labels"
constexpr uint64_t kSampleTag = 0x73616d706c65ULL; // "sample"

// ---------------------------------------------------------------------------------------------------
// Rendering helpers.

constexpr float kPi = 3.14159265358979f;
constexpr int kSinSize = 1024;         // sin table entries per turn
constexpr float kSinOffset = 65536.0f; // keeps table phases positive (a whole number of turns)

const std::array<float, kSinSize>& sinTable() {
    static const std::array<float, kSinSize> table = [] {
        std::array<float, kSinSize> t{};
        for (int i = 0; i < kSinSize; ++i)
            t[i] = static_cast<float>(std::sin(2.0 * 3.14159265358979323846 * i / kSinSize));
        return t;
    }();
    return table;
}

struct Color {
    float r, g, b;
};

// h in turns (any real), s and v in [0, 1].
Color hsv(float h, float s, float v) {
    h -= std::floor(h);
    const float h6 = h * 6.0f;
    const int sector = std::min(static_cast<int>(h6), 5);
    const float f = h6 - static_cast<float>(sector);
    const float p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
    switch (sector) {
    case 0:
        return {v, t, p};
    case 1:
        return {q, v, p};
    case 2:
        return {p, v, t};
    case 3:
        return {p, q, v};
    case 4:
        return {t, p, v};
    default:
        return {v, p, q};
    }
}

Color lerp(Color a, Color b, float t) {
    return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}

enum class Shape { Disk, Square, Triangle, Ring, Cross };

// What makes a class: every cue alone is shared by two classes (shape, hue, texture orientation and
// frequency), so only the combination identifies it.
struct ClassSpec {
    Shape shape;
    float orientationDeg; // direction of the grating's wave vector
    float cyclesPerPixel; // grating frequency
    float hue;            // turns
};

constexpr float kLow = 0.15f, kHigh = 0.30f;
constexpr float kRed = 0.0f, kYellow = 0.15f, kGreen = 0.33f, kCyan = 0.5f, kBlue = 0.63f, kMagenta = 0.83f;

constexpr std::array<ClassSpec, kNumClasses> kClasses{{
    {Shape::Disk, 0, kLow, kRed},
    {Shape::Disk, 90, kHigh, kBlue},
    {Shape::Square, 45, kLow, kGreen},
    {Shape::Square, 135, kHigh, kRed},
    {Shape::Triangle, 0, kHigh, kYellow},
    {Shape::Triangle, 90, kLow, kCyan},
    {Shape::Ring, 45, kHigh, kBlue},
    {Shape::Ring, 135, kLow, kYellow},
    {Shape::Cross, 0, kLow, kGreen},
    {Shape::Cross, 90, kHigh, kMagenta},
}};

// Signed distance in pixels (negative inside) from the object's local frame (u, v), radius s.
float shapeDistance(Shape shape, float u, float v, float s) {
    switch (shape) {
    case Shape::Disk:
        return std::sqrt(u * u + v * v) - s;
    case Shape::Square:
        return std::max(std::fabs(u), std::fabs(v)) - 0.8f * s;
    case Shape::Triangle: // equilateral, inradius 0.55 s, pointing up (image y grows downwards)
        return std::max({-v, 0.866f * u + 0.5f * v, -0.866f * u + 0.5f * v}) - 0.55f * s;
    case Shape::Ring:
        return std::fabs(std::sqrt(u * u + v * v) - 0.725f * s) - 0.275f * s;
    case Shape::Cross: {
        const float au = std::fabs(u), av = std::fabs(v), w = 0.3f * s;
        return std::min(std::max(au - s, av - w), std::max(au - w, av - s));
    }
    }
    return 1.0f;
}

// A phase that advances linearly over the image, in sin-table entries: value = sin(table[p]).
struct Wave {
    float p0 = 0, px = 0, py = 0; // phase at (0,0) and per pixel step, in table entries

    Wave(float orientationRad, float cyclesPerPixel, float phaseTurns) {
        const float k = cyclesPerPixel * kSinSize;
        px = k * std::cos(orientationRad);
        py = k * std::sin(orientationRad);
        p0 = kSinOffset + phaseTurns * kSinSize;
    }
    float at(const std::array<float, kSinSize>& table, int x, int y) const {
        const auto i = static_cast<uint32_t>(p0 + px * static_cast<float>(x) + py * static_cast<float>(y));
        return table[i & (kSinSize - 1)];
    }
};

struct Blob {
    float cx, cy, invR2, opacity;
    Color color;
};

constexpr std::ptrdiff_t kPixels = std::ptrdiff_t(kImageH) * kImageW; // a pointer offset unit

// Renders one sample of class `label` with all per-sample variation drawn from rng, into planes (3, 32*32).
void renderSample(int label, Rng& rng, float* planes) {
    const auto& table = sinTable();
    const ClassSpec& cls = kClasses[static_cast<size_t>(label)];
    float* R = planes;
    float* G = planes + kPixels;
    float* B = planes + 2 * kPixels;

    // Background: a two-colour gradient of muted colours in a random direction, a faint random grating.
    const Color bg0 = hsv(rng.uniform(), rng.uniform(0.0f, 0.45f), rng.uniform(0.15f, 0.85f));
    const Color bg1 = hsv(rng.uniform(), rng.uniform(0.0f, 0.45f), rng.uniform(0.15f, 0.85f));
    const float gradAngle = rng.uniform(0, 2 * kPi);
    const float gx = std::cos(gradAngle) / 32.0f, gy = std::sin(gradAngle) / 32.0f;
    const float g0 = 0.5f - 15.5f * (gx + gy);
    const Wave bgWave(rng.uniform(0, 2 * kPi), rng.uniform(0.06f, 0.35f), rng.uniform());
    const float bgWaveAmp = rng.uniform(0.0f, 0.07f);

    // Clutter: soft blobs of random colour anywhere, some of which the object hides.
    std::array<Blob, 4> blobs{};
    const int blobCount = 1 + rng.below(4);
    for (int i = 0; i < blobCount; ++i) {
        const float r = rng.uniform(2.5f, 8.0f);
        blobs[i] = {rng.uniform(-2, 33), rng.uniform(-2, 33), 1.0f / (r * r), rng.uniform(0.3f, 0.9f),
                    hsv(rng.uniform(), rng.uniform(0.0f, 0.8f), rng.uniform(0.1f, 0.95f))};
    }

    // The object: the class's shape, filled with the class's grating between a bright and a dark
    // shade of the class hue. One in five samples has a random hue, so colour alone is not enough.
    const bool randomHue = rng.uniform() < 0.2f;
    const float hue = randomHue ? rng.uniform() : cls.hue + rng.uniform(-0.035f, 0.035f);
    const Color bright = hsv(hue, rng.uniform(0.55f, 0.95f), rng.uniform(0.7f, 1.0f));
    const Color dark =
        hsv(hue + rng.uniform(-0.04f, 0.04f), rng.uniform(0.5f, 0.95f), rng.uniform(0.1f, 0.4f));
    const float orient = (cls.orientationDeg + rng.uniform(-12, 12)) * (kPi / 180.0f);
    const Wave texture(orient, cls.cyclesPerPixel * rng.uniform(0.88f, 1.12f), rng.uniform());
    const float cx = 15.5f + rng.uniform(-5, 5), cy = 15.5f + rng.uniform(-5, 5);
    const float radius = rng.uniform(7.0f, 11.0f);
    const float rot = rng.uniform(-20, 20) * (kPi / 180.0f);
    const float cr = std::cos(rot), sr = std::sin(rot);
    const float reach = 1.15f * radius + 1.0f; // every shape fits in this box around the centre

    for (int y = 0; y < kImageH; ++y) {
        for (int x = 0; x < kImageW; ++x) {
            const float fx = static_cast<float>(x), fy = static_cast<float>(y);
            Color c = lerp(bg0, bg1, g0 + gx * fx + gy * fy);
            const float w = bgWaveAmp * bgWave.at(table, x, y);
            c = {c.r + w, c.g + w, c.b + w};
            for (int i = 0; i < blobCount; ++i) {
                const Blob& b = blobs[i];
                const float d2 = ((fx - b.cx) * (fx - b.cx) + (fy - b.cy) * (fy - b.cy)) * b.invR2;
                if (d2 < 1.0f)
                    c = lerp(c, b.color, b.opacity * (1.0f - d2));
            }
            const float dx = fx - cx, dy = fy - cy;
            if (std::fabs(dx) < reach && std::fabs(dy) < reach) {
                const float sd = shapeDistance(cls.shape, dx * cr + dy * sr, dy * cr - dx * sr, radius);
                const float alpha = std::clamp(0.5f - sd, 0.0f, 1.0f); // ~1 px anti-aliased edge
                if (alpha > 0.0f) {
                    const Color fill = lerp(dark, bright, 0.5f + 0.5f * texture.at(table, x, y));
                    c = lerp(c, fill, alpha);
                }
            }
            const int p = y * kImageW + x;
            R[p] = c.r;
            G[p] = c.g;
            B[p] = c.b;
        }
    }
}

// Camera-like global changes and sensor noise, then quantisation to bytes.
void finishSample(Rng& rng, const float* planes, uint8_t* chw) {
    const float contrast = rng.uniform(0.7f, 1.25f);
    const float brightness = rng.uniform(-0.1f, 0.1f);
    // Triangular noise (sum of two uniforms) with a standard deviation of 0.01..0.06, in 8-bit steps.
    const float noiseStep = rng.uniform(0.01f, 0.06f) * 2.449f / 256.0f;
    std::array<float, kPixels> noise;
    for (int ch = 0; ch < kImageC; ++ch) {
        const float offset = 0.5f + brightness + rng.uniform(-0.04f, 0.04f) - 0.5f * contrast; // colour cast
        for (int p = 0; p < kPixels; p += 4) {
            const uint64_t bits = rng.next(); // eight 8-bit uniforms: noise for four pixels
            for (int k = 0; k < 4; ++k)
                noise[p + k] = static_cast<float>(static_cast<int>((bits >> (16 * k)) & 0xff) +
                                                  static_cast<int>((bits >> (16 * k + 8)) & 0xff) - 255) *
                               noiseStep;
        }
        const float* src = planes + ch * kPixels;
        uint8_t* dst = chw + ch * kPixels;
        for (int p = 0; p < kPixels; ++p) { // vectorisable: no branches, no calls
            const float v = (src[p] * contrast + offset + noise[p]) * 255.0f + 0.5f;
            dst[p] = static_cast<uint8_t>(static_cast<int>(std::min(std::max(v, 0.0f), 255.0f)));
        }
    }
}

void checkIndex(int64_t index, int64_t size, const std::string& what) {
    if (index < 0 || index >= size)
        throw std::out_of_range(fmt::format("{}: index {} out of range 0..{}", what, index, size - 1));
}

} // namespace

// ---------------------------------------------------------------------------------------------------

SyntheticCifar::SyntheticCifar(Split split, uint64_t seed, int64_t size)
    : m_split(split)
    , m_seed(seed)
    , m_size(size >= 0 ? size : (split == Split::Train ? kTrainSize : kTestSize))
    , m_stream(mix64(mix64(seed ^ 0x5253u) + (split == Split::Train ? 0x747261696eULL : 0x74657374ULL))) {}

int SyntheticCifar::label(int64_t index) const {
    checkIndex(index, m_size, "synthetic CIFAR-10");
    // Labels 0..9 in a fresh random order in every block of 10 indices: balanced and unpredictable.
    Rng rng(mix64(m_stream ^ kLabelTag) + static_cast<uint64_t>(index / kNumClasses));
    rng = Rng(rng.next());
    std::array<int, kNumClasses> perm{};
    for (int i = 0; i < kNumClasses; ++i)
        perm[i] = i;
    for (int i = kNumClasses - 1; i > 0; --i)
        std::swap(perm[i], perm[rng.below(i + 1)]);
    return perm[static_cast<size_t>(index % kNumClasses)];
}

int SyntheticCifar::get(int64_t index, uint8_t* chw) const {
    const int lbl = label(index);
    Rng rng(mix64(mix64(m_stream ^ kSampleTag) + static_cast<uint64_t>(index)));
    std::array<float, kImageBytes> planes; // (3, 32, 32) in [0, 1] before camera effects
    renderSample(lbl, rng, planes.data());
    finishSample(rng, planes.data(), chw);
    return lbl;
}

std::string SyntheticCifar::describe() const {
    return fmt::format("synthetic CIFAR-10 ({}, {} images, seed {})", splitName(m_split), m_size, m_seed);
}

// ---------------------------------------------------------------------------------------------------

namespace {

std::string joinNames(const std::vector<std::string>& names) {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i)
        out += (i ? ", " : "") + names[i];
    return out;
}

std::string allCifarFiles() {
    auto names = Cifar10Dataset::expectedFiles(Split::Train);
    names.emplace_back("test_batch.bin");
    return joinNames(names);
}

// Reads one batch file, appends its records to `records` after checking their size and labels.
void readBatchFile(const std::filesystem::path& path, std::vector<uint8_t>& records) {
    const std::string name = path.string();
    std::error_code ec;
    const uintmax_t bytes = std::filesystem::file_size(path, ec);
    if (ec)
        throw DataError(fmt::format("CIFAR-10 file '{}': cannot read its size: {}", name, ec.message()));
    if (bytes == 0)
        throw DataError(fmt::format("CIFAR-10 file '{}' is empty (0 bytes); expected {}-byte records "
                                    "(1 label byte + {} pixel bytes), 10000 per file",
                                    name, kCifarRecordBytes, kImageBytes));
    if (bytes % kCifarRecordBytes != 0)
        throw DataError(fmt::format("CIFAR-10 file '{}' has {} bytes, not a whole number of {}-byte records "
                                    "({} whole records, remainder {} bytes): truncated, or not the "
                                    "CIFAR-10 binary version",
                                    name, bytes, kCifarRecordBytes, bytes / kCifarRecordBytes,
                                    bytes % kCifarRecordBytes));
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw DataError(fmt::format("CIFAR-10 file '{}' cannot be opened: {}", name,
                                    std::generic_category().message(errno)));
    const size_t start = records.size();
    records.resize(start + bytes);
    in.read(reinterpret_cast<char*>(records.data() + start), static_cast<std::streamsize>(bytes));
    if (static_cast<uintmax_t>(in.gcount()) != bytes)
        throw DataError(fmt::format("CIFAR-10 file '{}': read {} of {} bytes (byte offset {})", name,
                                    in.gcount(), bytes, in.gcount()));
    const uintmax_t count = bytes / kCifarRecordBytes;
    for (uintmax_t r = 0; r < count; ++r) {
        const uint8_t label = records[start + r * kCifarRecordBytes];
        if (label >= kNumClasses)
            throw DataError(
                fmt::format("CIFAR-10 file '{}' record {} (byte offset {}): label {} is out of range "
                            "0..9: corrupt, or not CIFAR-10 (CIFAR-100 records have 2 label bytes)",
                            name, r, r * kCifarRecordBytes, label));
    }
}

} // namespace

std::vector<std::string> Cifar10Dataset::expectedFiles(Split split) {
    if (split == Split::Test)
        return {"test_batch.bin"};
    return {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
            "data_batch_5.bin"};
}

std::unique_ptr<Cifar10Dataset> Cifar10Dataset::open(const std::string& dir, Split split) {
    namespace fs = std::filesystem;
    if (dir.empty())
        throw DataError("CIFAR-10: no directory given (expected the folder holding " + allCifarFiles() + ")");
    std::error_code ec;
    if (!fs::exists(dir, ec))
        throw DataError(fmt::format("CIFAR-10 directory '{}' does not exist; expected a folder holding {} "
                                    "(the binary version, cifar-10-binary.tar.gz)",
                                    dir, allCifarFiles()));
    if (!fs::is_directory(dir, ec))
        throw DataError(fmt::format("CIFAR-10 path '{}' is not a directory; expected a folder holding {}",
                                    dir, allCifarFiles()));
    const std::vector<std::string> files = expectedFiles(split);
    std::vector<std::string> missing;
    for (const std::string& f : files)
        if (!fs::is_regular_file(fs::path(dir) / f, ec))
            missing.push_back(f);
    if (!missing.empty()) {
        // The tarball unpacks into cifar-10-batches-bin/; pointing at its parent is the usual slip.
        const fs::path nested = fs::path(dir) / "cifar-10-batches-bin";
        const std::string hint = fs::is_directory(nested, ec)
                                     ? fmt::format(" (did you mean '{}'?)", nested.string())
                                     : std::string();
        const std::string alsoMissing =
            missing.size() > 1 ? " (also missing: " + joinNames({missing.begin() + 1, missing.end()}) + ")"
                               : std::string();
        throw DataError(fmt::format("CIFAR-10 file '{}' is missing{}; the {} split needs {} in '{}'{}",
                                    (fs::path(dir) / missing.front()).string(), alsoMissing, splitName(split),
                                    joinNames(files), dir, hint));
    }
    std::vector<uint8_t> records;
    for (const std::string& f : files)
        readBatchFile(fs::path(dir) / f, records);
    return std::unique_ptr<Cifar10Dataset>(new Cifar10Dataset(dir, split, std::move(records)));
}

Cifar10Dataset::Cifar10Dataset(std::string dir, Split split, std::vector<uint8_t> records)
    : m_dir(std::move(dir))
    , m_split(split)
    , m_records(std::move(records))
    , m_count(static_cast<int64_t>(m_records.size() / kCifarRecordBytes)) {}

int Cifar10Dataset::get(int64_t index, uint8_t* chw) const {
    checkIndex(index, m_count, "CIFAR-10");
    const uint8_t* rec = m_records.data() + static_cast<size_t>(index) * kCifarRecordBytes;
    std::memcpy(chw, rec + 1, kImageBytes);
    return rec[0];
}

std::string Cifar10Dataset::describe() const {
    return fmt::format("CIFAR-10 {} ({}, {} images)", m_dir, splitName(m_split), m_count);
}

// ---------------------------------------------------------------------------------------------------

int64_t stepsPerEpoch(int64_t datasetSize, int ranks, int batchPerRank) {
    return (datasetSize / ranks) / batchPerRank;
}

int64_t trainSizeOf(const std::string& spec) {
    constexpr int64_t kFashionMnistTrain = 60000;
    return spec.rfind("fashion-mnist", 0) == 0 ? kFashionMnistTrain : SyntheticCifar::kTrainSize;
}

std::unique_ptr<Dataset> openDataset(const std::string& spec, Split split, uint64_t seed) {
    if (spec == "synthetic")
        return std::make_unique<SyntheticCifar>(split, seed);
    const std::string prefix = "cifar10:";
    if (spec.rfind(prefix, 0) == 0) {
        const std::string dir = spec.substr(prefix.size());
        if (dir.empty())
            throw DataError("data set 'cifar10:' names no directory; use cifar10:DIR");
        return Cifar10Dataset::open(dir, split);
    }
    const std::string fashion = "fashion-mnist";
    if (spec == fashion)
        return FashionMnistDataset::open(kFashionMnistDir, split);
    if (spec.rfind(fashion + ":", 0) == 0) {
        const std::string dir = spec.substr(fashion.size() + 1);
        return FashionMnistDataset::open(dir.empty() ? kFashionMnistDir : dir, split);
    }
    throw DataError(fmt::format(
        "unknown data set '{}'; expected 'synthetic', 'cifar10:DIR' or 'fashion-mnist[:DIR]'", spec));
}

void loadNormalizedBatch(const Dataset& data, const int64_t* ids, int n, std::vector<uint8_t>& raw,
                         std::vector<float>& images, std::vector<int64_t>& labels) {
    static constexpr float kMean[3] = {0.4914f, 0.4822f, 0.4465f}; // CIFAR-10 channel statistics
    static constexpr float kStd[3] = {0.2470f, 0.2435f, 0.2616f};
    raw.resize(static_cast<size_t>(kImageBytes));
    images.resize(static_cast<size_t>(n) * kImageBytes);
    labels.resize(n);
    for (int i = 0; i < n; ++i) {
        labels[i] = data.get(ids[i], raw.data());
        float* dst = images.data() + static_cast<size_t>(i) * kImageBytes;
        for (int c = 0; c < 3; ++c) {
            const float scale = 1.0f / (255.0f * kStd[c]), shift = kMean[c] / kStd[c];
            for (int p = 0; p < 1024; ++p)
                dst[c * 1024 + p] = raw[c * 1024 + p] * scale - shift;
        }
    }
}

} // namespace rs
