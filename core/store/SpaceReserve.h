// Disk space held back for closing a run file cleanly when the disk fills up.
// HDF5 needs room to close: the metadata cache and the chunk cache still hold dirty entries when a write
// fails with ENOSPC, and without room H5Fclose fails too, the library leaks its ids and the file's final
// status is lost. The reserve is an unnamed file (O_TMPFILE, or a temporary file unlinked at once) on the
// run file's filesystem with blocks allocated up front; release() closes it, which gives the blocks back
// just before the writer closes. An unnamed file leaves nothing behind, even when the process is killed.
#pragma once

#include <cstdint>
#include <string>

namespace rs {

class SpaceReserve {
public:
    SpaceReserve() = default;
    // Best effort: if the filesystem cannot allocate `bytes` (already full, no fallocate), holds nothing.
    SpaceReserve(const std::string& directory, int64_t bytes);
    ~SpaceReserve();
    SpaceReserve(const SpaceReserve&) = delete;
    SpaceReserve& operator=(const SpaceReserve&) = delete;
    SpaceReserve(SpaceReserve&& other) noexcept;
    SpaceReserve& operator=(SpaceReserve&& other) noexcept;

    bool held() const { return m_fd >= 0; }
    void release(); // gives the space back; idempotent

private:
    int m_fd = -1;
};

} // namespace rs
