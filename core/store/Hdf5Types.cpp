// The HDF5 side of RunSchema.h shared by RunWriter and RunReader (see Hdf5Types.h).
#include "store/Hdf5Types.h"

#include "store/Hdf5Lock.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fmt/format.h>
#include <stdexcept>

namespace rs::h5detail {

namespace rsc = runschema;
using rsc::Dtype;
using rsc::Row;

namespace {

// The HDF5 types of a numeric Dtype; strings have none (their types are fixedString of dtypeBytes).
struct NumericTypes {
    const H5::PredType* file;
    const H5::PredType* mem;
    H5T_class_t cls;
};

NumericTypes numericTypes(Dtype t) {
    using P = H5::PredType;
    switch (t) {
    case Dtype::I32:
        return {&P::STD_I32LE, &P::NATIVE_INT32, H5T_INTEGER};
    case Dtype::I64:
        return {&P::STD_I64LE, &P::NATIVE_INT64, H5T_INTEGER};
    case Dtype::U8:
        return {&P::STD_U8LE, &P::NATIVE_UINT8, H5T_INTEGER};
    case Dtype::U32:
        return {&P::STD_U32LE, &P::NATIVE_UINT32, H5T_INTEGER};
    case Dtype::U64:
        return {&P::STD_U64LE, &P::NATIVE_UINT64, H5T_INTEGER};
    case Dtype::F32:
        return {&P::IEEE_F32LE, &P::NATIVE_FLOAT, H5T_FLOAT};
    case Dtype::F64:
        return {&P::IEEE_F64LE, &P::NATIVE_DOUBLE, H5T_FLOAT};
    case Dtype::Str32:
    case Dtype::Str256:
        return {nullptr, nullptr, H5T_STRING};
    }
    return {&P::STD_U8LE, &P::NATIVE_UINT8, H5T_NO_CLASS};
}

// Cuts a string to at most maxBytes bytes without splitting a UTF-8 sequence.
std::string_view utf8Prefix(std::string_view s, size_t maxBytes) {
    if (s.size() <= maxBytes)
        return s;
    size_t cut = maxBytes;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80)
        --cut;
    return s.substr(0, cut);
}

template <class T> std::string join(std::span<const T> values, char separator) {
    std::string s;
    for (size_t i = 0; i < values.size(); ++i) {
        if (i)
            s += separator;
        s += std::to_string(values[i]);
    }
    return s;
}

} // namespace

Dims runDims(const RunMeta& meta) {
    Dims d;
    d.R = hsize_t(meta.worldSize);
    d.B = hsize_t(meta.batchPerRank);
    d.P = meta.params.size();
    d.K = hsize_t(meta.sketchDim);
    d.T = hsize_t(rsc::totalElements(meta.params));
    return d;
}

std::vector<hsize_t> rowDims(Row row, const Dims& d) {
    switch (row) {
    case Row::Scalar:
        return {};
    case Row::R:
        return {d.R};
    case Row::RB:
        return {d.R, d.B};
    case Row::RP:
        return {d.R, d.P};
    case Row::RPK:
        return {d.R, d.P, d.K};
    case Row::T:
        return {d.T};
    }
    return {};
}

uint64_t elementCount(std::span<const hsize_t> row) {
    uint64_t n = 1;
    for (hsize_t d : row)
        n = satMul(n, d);
    return n;
}

uint64_t satMul(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

uint64_t satAdd(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

bool isString(Dtype t) {
    return t == Dtype::Str32 || t == Dtype::Str256;
}

H5::DataType fileType(Dtype t) {
    if (isString(t))
        return fixedString(size_t(rsc::dtypeBytes(t)));
    return *numericTypes(t).file;
}

H5::DataType memType(Dtype t) {
    if (isString(t))
        return fixedString(size_t(rsc::dtypeBytes(t)));
    return *numericTypes(t).mem;
}

H5T_class_t typeClass(Dtype t) {
    return numericTypes(t).cls;
}

Dtype numericDtype(rsc::AttrType t) {
    switch (t) {
    case rsc::AttrType::I32:
        return Dtype::I32;
    case rsc::AttrType::I64:
        return Dtype::I64;
    case rsc::AttrType::U64:
        return Dtype::U64;
    case rsc::AttrType::Str:
        break;
    }
    throw std::logic_error("numericDtype: a string attribute has no numeric dtype");
}

const char* className(H5T_class_t c) {
    switch (c) {
    case H5T_INTEGER:
        return "integer";
    case H5T_FLOAT:
        return "float";
    case H5T_STRING:
        return "string";
    case H5T_COMPOUND:
        return "compound";
    case H5T_ENUM:
        return "enum";
    case H5T_ARRAY:
        return "array";
    case H5T_VLEN:
        return "vlen";
    case H5T_OPAQUE:
        return "opaque";
    case H5T_BITFIELD:
        return "bitfield";
    case H5T_REFERENCE:
        return "reference";
    case H5T_TIME:
        return "time";
    default:
        return "unknown";
    }
}

H5::StrType fixedString(size_t bytes) {
    H5::StrType t(H5::PredType::C_S1, std::max<size_t>(bytes, 1));
    t.setStrpad(H5T_STR_NULLTERM);
    t.setCset(H5T_CSET_UTF8);
    return t;
}

void putFixedString(std::byte* field, size_t size, std::string_view s) {
    std::memset(field, 0, size);
    const std::string_view cut = utf8Prefix(s, size - 1);
    std::memcpy(field, cut.data(), cut.size());
}

std::string getFixedString(const char* field, size_t size) {
    return std::string(field, strnlen(field, size));
}

std::string shapeString(std::span<const int64_t> shape) {
    return join(shape, 'x');
}

std::optional<std::vector<int64_t>> parseShape(std::string_view s) {
    std::vector<int64_t> shape;
    for (size_t pos = 0; pos < s.size();) {
        size_t next = s.find('x', pos);
        if (next == std::string_view::npos)
            next = s.size();
        int64_t dim = 0;
        const auto [ptr, ec] = std::from_chars(s.data() + pos, s.data() + next, dim);
        if (ec != std::errc() || ptr != s.data() + next || dim < 0)
            return std::nullopt;
        shape.push_back(dim);
        pos = next + 1;
    }
    return shape;
}

std::string dimsString(std::span<const hsize_t> dims) {
    return fmt::format("({})", join(dims, ','));
}

std::string hdf5Detail(const H5::Exception& e) {
    const std::string inner = hdf5LastError();
    return inner.empty() ? e.getDetailMsg() : fmt::format("{}: {}", e.getDetailMsg(), inner);
}

} // namespace rs::h5detail
