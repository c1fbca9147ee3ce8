// The LibTorch half of the command line: ranksight-engine (app/engine) runs train, bench, bench-nodes and
// --version. ranksight-cli links no LibTorch, so the commands that read files (inspect, diagnose, import-*,
// report, ...) start without the second LibTorch's static initialisers take.
#pragma once

#include <string>

namespace rs::cli {

// True for the commands ranksight-engine runs.
bool isEngineCommand(const char* command);

// Replaces this process with ranksight-engine and the same arguments (so signals, exit codes and output
// are the engine's own). Returns only on failure, with exit code 2 and one line naming the places looked in.
int execEngine(char** argv);

// The executable: $RANKSIGHT_ENGINE if set, else ranksight-engine next to this program, in
// ../libexec/ranksight/ from it, or in the build tree this program was built in. Empty if none is there;
// `looked` gets the places tried.
std::string findEngine(std::string* looked = nullptr);

} // namespace rs::cli
