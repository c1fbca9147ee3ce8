// ranksight-engine: the LibTorch half of ranksight-cli (train, bench, bench-nodes, --version). ranksight-cli
// itself links no LibTorch, so that the commands that only read files start in milliseconds instead of the
// second LibTorch's static initialisers take; it hands these commands to this program (app/cli/Engine.h)
// with the same arguments, in the same process (exec), so signals, exit codes and output are unchanged.
#include "CliArgs.h"
#include "Commands.h"
#include "store/RunSchema.h"
#include "util/BlasSetup.h"
#include "util/MallocArenas.h"
#include "util/Versions.h"

#include <cstring>
#include <fmt/format.h>

// OpenBLAS's settings, before main() (util/BlasSetup.h).
RANKSIGHT_CONFIGURE_BLAS

int main(int argc, char** argv) {
    rs::limitMallocArenas(); // before any thread starts
    if (argc < 2) {
        rs::cli::printError(
            "the engine runs train, bench and bench-nodes for ranksight-cli (try ranksight-cli "
            "--help)");
        return 2;
    }
    if (!std::strcmp(argv[1], "--version")) {
        fmt::print("ranksight-cli {} (run file format {})\nLibTorch {}, HDF5 {}\nBLAS: {}\n",
                   rs::ranksightVersion(), rs::runschema::kFormatVersion, rs::torchVersion(),
                   rs::hdf5Version(), rs::blasDescription());
        return 0;
    }
    const std::string cmd = argv[1];
    const rs::cli::Args args(argv + 2, argv + argc);
    try {
        if (cmd == "train")
            return rs::cli::trainCommand(args);
        if (cmd == "bench")
            return rs::cli::benchCommand(args);
        if (cmd == "bench-nodes")
            return rs::cli::benchNodesCommand(args);
        rs::cli::printError(fmt::format("unknown command '{}' (try --help)", cmd));
        return 2;
    } catch (const rs::cli::UsageError& e) {
        rs::cli::printError(fmt::format("{}: {} (try --help)", cmd, e.what()));
        return 2;
    } catch (const std::exception& e) {
        rs::cli::printError(fmt::format("{}: {}", cmd, e.what()));
        return 2;
    }
}
