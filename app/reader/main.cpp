// ranksight-reader: the reader process behind openRunFile (core/reader/ReaderProcess.h). libhdf5 parses
// run files from outside here, so that a crash, a hang or a runaway allocation on a damaged file ends this
// process and not the window or the command line. Started by its parent only:
//   ranksight-reader --socket-fd 3 --trace-fd 4 --memory-mb N
#include "reader/ReaderServer.h"
#include "reader/ReaderTrace.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/mman.h>

int main(int argc, char** argv) {
    int socketFd = -1, traceFd = -1;
    long memoryMb = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const long v = std::strtol(argv[i + 1], nullptr, 10);
        if (!std::strcmp(argv[i], "--socket-fd"))
            socketFd = int(v);
        else if (!std::strcmp(argv[i], "--trace-fd"))
            traceFd = int(v);
        else if (!std::strcmp(argv[i], "--memory-mb"))
            memoryMb = v;
    }
    if (socketFd < 0) {
        std::fputs("ranksight-reader: started by RankSight to read run files; not a program to run by hand\n",
                   stderr);
        return 2;
    }
    rs::limitReaderProcess(uint64_t(std::max(memoryMb, 0L)) << 20);
    if (traceFd >= 0) {
        void* page =
            mmap(nullptr, sizeof(rs::readertrace::Page), PROT_READ | PROT_WRITE, MAP_SHARED, traceFd, 0);
        if (page != MAP_FAILED)
            rs::readertrace::attach(static_cast<rs::readertrace::Page*>(page));
    }
    return rs::serveReader(socketFd);
}
