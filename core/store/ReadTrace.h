// Where the in-process reader is in a file. Before each libhdf5 call that parses part of a run file,
// Hdf5RunReader names the object it is about to touch ("root attribute 'created'", "dataset /steps/loss").
// Nothing listens unless a sink is set: the reader process sets one that writes the text to a page its parent
// reads when the process crashed or hung (core/reader/ReaderTrace.h). Without one a call costs one branch.
#pragma once

#include <string_view>

namespace rs::readtrace {

// Receives the text in parts, to be joined in order (no allocation on the way).
using Sink = void (*)(std::string_view a, std::string_view b, std::string_view c);

// Set once, before anything is read (the reader process at start-up).
void setSink(Sink sink);

void atFile(std::string_view what);              // e.g. "the superblock"
void atAttribute(std::string_view name);         // root attribute 'name'
void atDataset(std::string_view path);           // dataset /path
void atChunkIndex(std::string_view datasetPath); // the chunk index of dataset /path

} // namespace rs::readtrace
