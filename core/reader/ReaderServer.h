// The reader process's side (ranksight-reader, see ReaderProcess.h): libhdf5 parses the run file here, and
// the answers go back to the parent over a socket (ReaderProtocol.h). A crash, a hang or running out of
// memory here is what the parent contains.
#pragma once

#include <cstdint>

namespace rs {

// Makes this process a contained reader: no core dump and not dumpable (a crash leaves nothing behind),
// and its address space limited to memoryBytes (0: no limit; skipped in sanitizer builds, whose shadow
// memory needs terabytes of address space).
void limitReaderProcess(uint64_t memoryBytes);

// Serves requests on the connected socket fd until the parent closes it. Returns the exit code (0 after a
// clean close, 1 when the connection broke).
int serveReader(int fd);

} // namespace rs
