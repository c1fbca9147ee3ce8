#include "util/RunQueueDelay.h"

#include <cstdio>
#include <cstdlib>
#include <limits>

#ifdef __linux__
#include <fcntl.h>
#include <unistd.h>
#endif

namespace rs {

#ifdef __linux__
namespace {

// The thread's schedstat file, opened once per thread: a card reads it twice a step, and an open per read
// would cost more than the read.
struct SchedstatFile {
    int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    SchedstatFile() = default;
    SchedstatFile(const SchedstatFile&) = delete;
    SchedstatFile& operator=(const SchedstatFile&) = delete;
    ~SchedstatFile() {
        if (fd >= 0)
            ::close(fd);
    }
};

} // namespace

double runQueueDelayMs() {
    thread_local SchedstatFile file;
    char buf[96];
    const ssize_t n = file.fd < 0 ? -1 : ::pread(file.fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return std::numeric_limits<double>::quiet_NaN();
    buf[n] = '\0';
    // "<ns on a cpu> <ns waiting on a run queue> <timeslices>"
    char* end = nullptr;
    std::strtoull(buf, &end, 10);
    const char* second = end;
    const unsigned long long waitNs = std::strtoull(second, &end, 10);
    if (end == second)
        return std::numeric_limits<double>::quiet_NaN();
    return double(waitNs) / 1e6;
}
#else
double runQueueDelayMs() {
    return std::numeric_limits<double>::quiet_NaN();
}
#endif

} // namespace rs
