// Process-wide guard for HDF5. Debian's libhdf5 is built thread-safe (one global lock inside the C library),
// but the C++ and high-level APIs on top of it are not, and a sequence such as extend + write + flush or
// "call, then read the error stack" must not interleave with another thread's. So every HDF5 call in the
// process goes under hdf5Mutex() (a recursive mutex: readers call helpers that lock again). Hdf5Guard also
// replaces HDF5's automatic error printing (to stderr) by a recorder, so errors become exceptions whose
// message carries the library's innermost reason ("truncated file: eof = ...").
#pragma once

#include <mutex>
#include <string>

namespace rs {

std::recursive_mutex& hdf5Mutex();

// Holds hdf5Mutex() and installs the quiet error recorder for this thread (HDF5 keeps error settings per
// thread in thread-safe builds, so it is installed on every guard, which is cheap).
class Hdf5Guard {
public:
    Hdf5Guard();
    // Clears this thread's HDF5 error stack. A thread-safe libhdf5 frees a thread's stack at thread exit
    // without releasing the error records' references, so a worker thread whose last call failed (the
    // writer on a full disk, a loader on a bad file) made HDF5 print "infinite loop closing library" at
    // exit. The recorded message (hdf5LastError) is ours and survives.
    ~Hdf5Guard();
    Hdf5Guard(const Hdf5Guard&) = delete;
    Hdf5Guard& operator=(const Hdf5Guard&) = delete;

private:
    std::lock_guard<std::recursive_mutex> m_lock;
};

// The innermost description of the most recent HDF5 error recorded on this thread, e.g.
// "truncated file: eof = 1024, sblock->base_addr = 0, stored_eof = 5088"; empty if none. Call under a guard.
std::string hdf5LastError();
void hdf5ClearLastError();

} // namespace rs
