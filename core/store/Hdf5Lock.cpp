// HDF5 process-wide lock and quiet error recording (see Hdf5Lock.h).
#include "store/Hdf5Lock.h"

#include <H5Epublic.h>

namespace rs {
namespace {

thread_local std::string t_lastError;

herr_t recordFrame(unsigned n, const H5E_error2_t* err, void* data) {
    // Walking downward: frame 0 is the API call, the last frame the innermost cause. Keep the innermost
    // frame that has a description.
    (void)n;
    auto* out = static_cast<std::string*>(data);
    if (err && err->desc && err->desc[0])
        *out = err->desc;
    return 0;
}

// The sec2 driver's I/O errors are multi-line dumps ("file write failed: time = ..., filename = ..., file
// descriptor = 3, errno = 28, error message = 'No space left on device', buf = ..."). Users need the cause.
std::string condenseIoError(const std::string& desc) {
    const std::string tag = "error message = '";
    const auto at = desc.find(tag);
    if (at == std::string::npos)
        return desc;
    const auto begin = at + tag.size();
    const auto end = desc.find('\'', begin);
    const std::string cause = desc.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    const auto colon = desc.find(':');
    const std::string what = colon == std::string::npos ? std::string("I/O failed") : desc.substr(0, colon);
    if (desc.find("errno = 28,") != std::string::npos)
        return what + ": the disk is full (" + cause + ")";
    return what + ": " + cause;
}

herr_t recordStack(hid_t stack, void*) {
    std::string innermost;
    H5Ewalk2(stack, H5E_WALK_DOWNWARD, recordFrame, &innermost);
    t_lastError = condenseIoError(innermost);
    return 0;
}

} // namespace

std::recursive_mutex& hdf5Mutex() {
    static std::recursive_mutex mutex;
    return mutex;
}

Hdf5Guard::Hdf5Guard()
    : m_lock(hdf5Mutex()) {
    H5Eset_auto2(H5E_DEFAULT, recordStack, nullptr);
}

Hdf5Guard::~Hdf5Guard() {
    H5Eclear2(H5E_DEFAULT);
}

std::string hdf5LastError() {
    return t_lastError;
}

void hdf5ClearLastError() {
    t_lastError.clear();
}

} // namespace rs
