// Where the HDF5 reader is, for the parent of a reader process (ReaderProcess.h). In the reader process the
// in-process reader's trace (store/ReadTrace.h: "root attribute 'created'", "dataset /steps/loss") goes to a
// page of memory shared with the parent, which reads it when the process crashed (to say where the file is
// damaged) and watches its counter to tell a slow read from a hang.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace rs::readertrace {

// The shared page. seq is odd while text is being rewritten; every update adds 2.
struct Page {
    std::atomic<uint64_t> seq{0};
    char text[248] = {};
};
static_assert(sizeof(Page) == 256);

// The reader process attaches its end of the shared page once, before reading anything: from then on the
// in-process reader's trace is written there.
void attach(Page* page);

// The parent's view: the text as last written (a crash mid-update may leave it cut short).
std::string_view text(const Page& page);

} // namespace rs::readertrace
