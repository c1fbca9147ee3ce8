// RunReader, opening: opens the file (SWMR when its writer allows it) and reads its root attributes from
// their rows (RootAttributes.h): the format and its version first, which decide what the rest may be, then
// every row into the RunMeta member it names, each checked for its type, one value, a sane size and (for
// integers) its range. Hdf5RunReaderValidation.cpp checks the datasets.
#include "store/Hdf5Lock.h"
#include "store/Hdf5RunReaderImpl.h"
#include "store/ReadTrace.h"
#include "store/RunSource.h"

#include <H5Cpp.h>
#include <cstring>
#include <fmt/format.h>
#include <type_traits>

namespace rs {

namespace rsc = runschema;
using h5detail::className;

namespace {

constexpr unsigned kSwmrReadAttempts = 28;

} // namespace

void Hdf5RunReader::Impl::openFile() {
    readtrace::atFile("the superblock and the root group");
    hdf5ClearLastError();
    // A SWMR reader retries a metadata read whose checksum fails (a writer may be mid-way through writing
    // it), sleeping twice as long after each of its default 100 attempts past the first ~20: on a file whose
    // metadata is really corrupt, H5Fopen then never returns (one flipped superblock byte took > 10 minutes).
    // 28 attempts bound the retries to ~0.3 s, still far longer than a writer needs to finish a write.
    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_metadata_read_attempts(fapl, kSwmrReadAttempts);
    hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl);
    H5Pclose(fapl);
    swmr = id >= 0;
    const std::string swmrError = hdf5LastError();
    if (id < 0) {
        // Files without SWMR support (written by other tools) only open the plain way; we still want to
        // tell the user what they are.
        hdf5ClearLastError();
        id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    }
    if (id < 0)
        failToOpen(swmrError);
    file = H5::H5File(id); // takes its own reference
    H5Fclose(id);
    unsigned intent = 0;
    if (H5Fget_intent(file.getId(), &intent) >= 0)
        sharedWrite = (intent & H5F_ACC_RDWR) != 0;
}

// Why neither way of opening worked, in the user's terms where HDF5's error says it.
void Hdf5RunReader::Impl::failToOpen(const std::string& swmrError) const {
    std::string err = hdf5LastError();
    if (err.empty())
        err = swmrError;
    if (err.find("truncated file") != std::string::npos)
        fail(fmt::format("the file is truncated ({} bytes on disk; HDF5 says: {}); was it copied or "
                         "downloaded incompletely?",
                         fileBytes, err));
    if (err.find("already open for write") != std::string::npos ||
        err.find("unable to lock") != std::string::npos)
        fail(fmt::format("the file is open for writing by a process that is not in SWMR mode ({}); if "
                         "that writer died, `h5clear -s --increment=0 FILE` clears the flag without "
                         "losing data",
                         err));
    fail(fmt::format("cannot open the HDF5 file: {}", err.empty() ? swmrError : err));
}

H5::Attribute Hdf5RunReader::Impl::attr(const char* name, H5T_class_t expected) const {
    readtrace::atAttribute(name);
    if (!file.attrExists(name))
        fail(fmt::format("root attribute '{}' is missing", name));
    H5::Attribute a = file.openAttribute(name);
    const H5T_class_t cls = a.getTypeClass();
    if (cls != expected)
        fail(fmt::format("root attribute '{}' is a {}, expected a {}", name, className(cls),
                         className(expected)));
    if (a.getSpace().getSimpleExtentNpoints() != 1)
        fail(fmt::format("root attribute '{}' holds {} values, expected 1", name,
                         a.getSpace().getSimpleExtentNpoints()));
    return a;
}

std::string Hdf5RunReader::Impl::stringAttr(const char* name) const {
    H5::Attribute a = attr(name, H5T_STRING);
    H5::StrType type = a.getStrType();
    // Reading a variable-length string goes through HDF5's global heap, where a damaged file can make libhdf5
    // itself write out of bounds (issue 10). Files of format_version 2 and later hold none, so one is refused
    // before it is read; older files still have them and are read (in the reader process).
    if (type.isVariableStr() && formatVersion >= 2)
        fail(fmt::format("root attribute '{}' is a variable-length string; format_version {} files hold "
                         "fixed-length strings only: the file is damaged or forged",
                         name, formatVersion));
    if (!type.isVariableStr() && type.getSize() > size_t(rsc::kMaxStringBytes))
        fail(fmt::format("root attribute '{}' is a {}-byte string, at most {} supported", name,
                         type.getSize(), rsc::kMaxStringBytes));
    std::string value;
    a.read(type, value);
    if (!type.isVariableStr())
        value.resize(strnlen(value.c_str(), value.size()));
    return value;
}

int64_t Hdf5RunReader::Impl::intAttr(const char* name, int64_t lo, int64_t hi) const {
    H5::Attribute a = attr(name, H5T_INTEGER);
    checkIntegerSize(a, name);
    int64_t v = 0;
    a.read(H5::PredType::NATIVE_INT64, &v);
    if (v < lo || v > hi)
        fail(fmt::format("root attribute '{}' is {}, expected {}..{}", name, v, lo, hi));
    return v;
}

void Hdf5RunReader::Impl::checkIntegerSize(const H5::Attribute& a, const char* name) const {
    const size_t bytes = a.getIntType().getSize();
    if (bytes > 8)
        fail(fmt::format("root attribute '{}' is a {}-byte integer, expected at most 8 bytes", name, bytes));
}

uint64_t Hdf5RunReader::Impl::u64Attr(const char* name) const {
    H5::Attribute a = attr(name, H5T_INTEGER);
    checkIntegerSize(a, name);
    uint64_t v = 0;
    a.read(H5::PredType::NATIVE_UINT64, &v);
    return v;
}

// Only the values the format_version row allows (RootAttributes.h).
int64_t Hdf5RunReader::Impl::versionAttr() const {
    const rsc::Attribute* row = rsc::findAttribute(rsc::kAttrFormatVersion);
    return intAttr(row->name, row->lo, row->hi);
}

// What the file is, with messages of their own: a file of another kind, a newer RankSight or a damaged
// version. The version is read first (an integer, safe to read): it decides which string types the rest may
// have.
void Hdf5RunReader::Impl::readFormat() {
    readtrace::atAttribute(rsc::kAttrFormat);
    if (!file.attrExists(rsc::kAttrFormat))
        fail(fmt::format("not a RankSight run file (format attribute missing; expected format='{}')",
                         rsc::kFormatName));
    const H5T_class_t cls = file.openAttribute(rsc::kAttrFormat).getTypeClass();
    if (cls != H5T_STRING)
        fail(fmt::format(
            "not a RankSight run file (format attribute is of class {}, expected the string '{}')",
            className(cls), rsc::kFormatName));
    const bool hasVersion = file.attrExists(rsc::kAttrFormatVersion);
    if (hasVersion)
        formatVersion = int(versionAttr());
    const std::string format = stringAttr(rsc::kAttrFormat);
    if (format != rsc::kFormatName)
        fail(fmt::format("not a RankSight run file (found format '{}', expected '{}')", format,
                         rsc::kFormatName));
    const int64_t version = hasVersion ? formatVersion : versionAttr();
    if (version > rsc::kFormatVersion)
        fail(fmt::format("written by a newer RankSight: format_version {}, this build reads up to {}",
                         version, rsc::kFormatVersion));
    if (version < 1)
        fail(fmt::format("format_version {} is invalid (expected 1..{})", version, rsc::kFormatVersion));
    formatVersion = int(version);
}

void Hdf5RunReader::Impl::readValue(const rsc::Attribute& a, std::string& v) const {
    v = stringAttr(a.name);
}
void Hdf5RunReader::Impl::readValue(const rsc::Attribute& a, std::vector<std::string>& v) const {
    v = rsc::splitAbsent(stringAttr(a.name));
}
void Hdf5RunReader::Impl::readValue(const rsc::Attribute& a, int32_t& v) const {
    v = int32_t(intAttr(a.name, a.lo, a.hi));
}
void Hdf5RunReader::Impl::readValue(const rsc::Attribute& a, int64_t& v) const {
    v = intAttr(a.name, a.lo, a.hi);
}
void Hdf5RunReader::Impl::readValue(const rsc::Attribute& a, uint64_t& v) const {
    v = u64Attr(a.name);
}

// A row's value into its RunMeta member; a file without an optional attribute predates it and reads as the
// member's default. The format rows were read by readFormat.
template <class Field> void Hdf5RunReader::Impl::readAttribute(const rsc::RootAttribute<Field>& a) {
    if constexpr (rsc::kMetaMember<Field>) {
        if (a.layout.optional && !file.attrExists(a.layout.name))
            meta.*a.field = RunMeta{}.*a.field;
        else
            readValue(a.layout, meta.*a.field);
    }
}

void Hdf5RunReader::Impl::readRoot() {
    try {
        readFormat();
        rsc::forEachAttribute([&](const auto& a) { readAttribute(a); });
        addImpliedAbsences(meta);
    } catch (const H5::Exception& e) {
        fail("reading the root attributes", e);
    }
}

} // namespace rs
