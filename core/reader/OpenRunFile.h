// How a run file is opened for reading: the reader unit's one entry point. Everything that reads files from
// outside (the window, the command line, reports, diagnosis) opens them in a reader process
// (ProcessRunReader, ReaderProcess.h), so that a damaged or hostile file that makes libhdf5 crash, hang or
// run out of memory takes down only that process. Reading in this process (Hdf5RunReader, core/store) is for
// the reader process itself, the fuzzer, and tests that compare the two.
#pragma once

#include "store/RunReader.h"
#include "store/RunSchema.h"

#include <memory>
#include <string>

namespace rs {

enum class ReadIn {
    ReaderProcess, // ranksight-reader parses the file; calls go over a socket
    ThisProcess,   // libhdf5 in this process: not for files from outside
};

// Opens the file and validates its whole layout. Throws RunFileError: the file's own errors, and a
// ReaderDiedError when the reader process crashed, hung or could not be started.
std::unique_ptr<RunReader> openRunFile(const std::string& path, ReadIn where = ReadIn::ReaderProcess);

// The reader process crashed, hung or could not be started: the file (or the installation) is at fault,
// and the reader is unusable from now on.
class ReaderDiedError : public RunFileError {
public:
    using RunFileError::RunFileError;
};

} // namespace rs
