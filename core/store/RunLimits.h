// Sanity limits a reader enforces before allocating anything a file claims (and the writer checks a RunMeta
// against): world size, batch and sketch dim also bound their root attributes (RootAttributes.h).
#pragma once

#include <cstdint>

namespace rs::runschema {

inline constexpr int64_t kMaxWorldSize = 1 << 16;
inline constexpr int64_t kMaxParams = 1 << 20;
inline constexpr int64_t kMaxSketchDim = 1 << 16;
inline constexpr int64_t kMaxBatch = 1 << 24;
inline constexpr int64_t kMaxTotalElements = int64_t(1) << 36;
inline constexpr int64_t kMaxStringBytes = 1 << 24; // a fixed-length string type or an attribute
// Shuffle + deflate cannot shrink data by more than ~1032:1, so no dataset's logical size may exceed
// kMaxInflation x the file size (+ slack for partial chunks and fill values).
inline constexpr int64_t kMaxInflation = 1100;
inline constexpr int64_t kInflationSlackBytes = 64 << 20;

} // namespace rs::runschema
