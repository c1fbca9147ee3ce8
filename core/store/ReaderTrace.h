// Where the HDF5 reader is, for the parent of a reader process (ReaderProcess.h). Before each libhdf5 call
// that parses part of a file, Hdf5RunReader names the object it is about to touch ("root attribute
// 'created'", "dataset /steps/loss"). In the reader process the text goes to a page of memory shared with
// the parent, which reads it when the process crashed (to say where the file is damaged) and watches its
// counter to tell a slow read from a hang. Outside a reader process nothing is attached and a call costs
// one branch.
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

// The reader process attaches its end of the shared page once, before reading anything.
void attach(Page* page);

void atFile(std::string_view what);              // e.g. "the superblock"
void atAttribute(std::string_view name);         // root attribute 'name'
void atDataset(std::string_view path);           // dataset /path
void atChunkIndex(std::string_view datasetPath); // the chunk index of dataset /path

// The parent's view: the text as last written (a crash mid-update may leave it cut short).
std::string_view text(const Page& page);

} // namespace rs::readertrace
