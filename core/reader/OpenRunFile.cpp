// openRunFile: the choice between the two readers, made here rather than in RunReader, which knows neither.
#include "reader/OpenRunFile.h"

#include "reader/ReaderProcess.h"
#include "store/Hdf5RunReader.h"

namespace rs {

std::unique_ptr<RunReader> openRunFile(const std::string& path, ReadIn where) {
    if (where == ReadIn::ThisProcess)
        return Hdf5RunReader::open(path);
    return ProcessRunReader::open(path);
}

} // namespace rs
