// Disk space held back for closing a run file (see SpaceReserve.h).
#include "store/SpaceReserve.h"

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace rs {
namespace {

int openUnnamed(const std::string& directory) {
#ifdef O_TMPFILE
    const int unnamed = ::open(directory.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (unnamed >= 0)
        return unnamed;
#endif
    // Filesystems without O_TMPFILE: a named temporary file, unlinked while open.
    std::string name = directory + "/.ranksight-reserve-XXXXXX";
    std::vector<char> buf(name.begin(), name.end());
    buf.push_back('\0');
    const int fd = ::mkostemp(buf.data(), O_CLOEXEC);
    if (fd >= 0)
        ::unlink(buf.data());
    return fd;
}

} // namespace

SpaceReserve::SpaceReserve(const std::string& directory, int64_t bytes) {
    const int fd = openUnnamed(directory.empty() ? std::string(".") : directory);
    if (fd < 0)
        return;
    // posix_fallocate allocates real blocks (tmpfs, ext4, xfs, btrfs); a sparse file would reserve nothing.
    if (::posix_fallocate(fd, 0, static_cast<off_t>(bytes)) != 0) {
        ::close(fd);
        return;
    }
    m_fd = fd;
}

SpaceReserve::~SpaceReserve() {
    release();
}

SpaceReserve::SpaceReserve(SpaceReserve&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)) {}

SpaceReserve& SpaceReserve::operator=(SpaceReserve&& other) noexcept {
    if (this != &other) {
        release();
        m_fd = std::exchange(other.m_fd, -1);
    }
    return *this;
}

void SpaceReserve::release() {
    if (m_fd >= 0)
        ::close(std::exchange(m_fd, -1));
}

} // namespace rs
