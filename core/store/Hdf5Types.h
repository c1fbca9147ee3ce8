// Internal to core/store: the HDF5 side of RunSchema.h, shared by RunWriter and RunReader so both map the
// schema the same way: Dtype -> file and memory HDF5 types, a table's Row -> the dims of one row, fixed-size
// string fields, and the text forms of shapes ("64x3x3x3") and dims ("(10,3,161)"). Not a public header.
#pragma once

#include "store/RunRecords.h"
#include "store/RunSchema.h"

#include <H5Cpp.h>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rs::h5detail {

// The run's dims as HDF5 extents. R world size, B batch per rank, P parameter tensors, K sketch dim,
// T total parameter elements (see runschema::Row).
struct Dims {
    hsize_t R = 0, B = 0, P = 0, K = 0, T = 0;
};
Dims runDims(const RunMeta& meta);

// Dims of one row of a table (after the leading, extendible row dimension).
std::vector<hsize_t> rowDims(runschema::Row row, const Dims& d);
// Elements in a row of these dims (1 for a scalar row), saturating at UINT64_MAX.
uint64_t elementCount(std::span<const hsize_t> row);
// a * b and a + b, saturating at UINT64_MAX (for extents and addresses read from a file).
uint64_t satMul(uint64_t a, uint64_t b);
uint64_t satAdd(uint64_t a, uint64_t b);

bool isString(runschema::Dtype t);
H5::DataType fileType(runschema::Dtype t); // little-endian on disk
H5::DataType memType(runschema::Dtype t);  // native numbers; strings as in the file
H5T_class_t typeClass(runschema::Dtype t);
// A numeric root attribute's type as the column dtype with the same HDF5 types (a string attribute has
// none: it is a fixedString as long as its value).
runschema::Dtype numericDtype(runschema::AttrType t);
// An HDF5 type class as messages name it ("integer", "vlen").
const char* className(H5T_class_t c);
// A NUL-terminated UTF-8 string type of `bytes` bytes (at least 1).
H5::StrType fixedString(size_t bytes);

// Writes s into a fixed-size, NUL-terminated field of `size` bytes, cut at a UTF-8 boundary if too long.
void putFixedString(std::byte* field, size_t size, std::string_view s);
// The string in a fixed-size field: up to its first NUL, or all `size` bytes.
std::string getFixedString(const char* field, size_t size);

// /params/shape: "64x3x3x3", "" for 0-d; parseShape returns nullopt for anything else.
std::string shapeString(std::span<const int64_t> shape);
std::optional<std::vector<int64_t>> parseShape(std::string_view s);
// Dims in messages: "(10,3,161)".
std::string dimsString(std::span<const hsize_t> dims);

// An HDF5 C++ exception's message, followed by the innermost reason HDF5 recorded (see Hdf5Lock.h).
std::string hdf5Detail(const H5::Exception& e);

} // namespace rs::h5detail
