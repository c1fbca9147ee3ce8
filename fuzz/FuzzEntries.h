// The "one input" logic of each fuzz target, shared by the libFuzzer wrappers (fuzz/fuzz_*.cpp, clang with
// -fsanitize=fuzzer) and the Qt Test that replays the regression inputs and the seed corpora in the normal
// build (tests/core/tst_fuzzregressions.cpp). No libFuzzer dependency here.
//
// Each run* function feeds one input through the real entry points and returns what happened: accepted,
// or rejected with the exception's message (a clean rejection). Anything else is a bug and is reported
// through fuzzBug(): an exception that is not a std::exception (e.g. an H5::Exception escaping the
// reader), std::bad_alloc or std::length_error (an allocation sized by what the input claims), an empty
// message, or a broken invariant (a table that parsed but does not survive its own round trip, a record
// count that disagrees with the meta, a slice of a readable run that cannot be read back).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace rs::fuzz {

struct FuzzOutcome {
    bool rejected = false; // true: the input was refused with an exception (message set)
    std::string message;   // the refusal's message; for an accepted input, a short summary
};

// Thrown by fuzzBug() when a handler installed by setFuzzBugThrows(true) is active (the Qt Test); not a
// std::exception, so the entry logic's own catch blocks never swallow it.
struct FuzzBug {
    std::string what;
};

// Default: print the bug to stderr and abort() (what libFuzzer wants). The Qt Test switches to throwing.
void setFuzzBugThrows(bool throws);
[[noreturn]] void fuzzBug(const std::string& what);

// fuzz_ranktable: first byte picks expectedRanks (-1 or 0..255), the rest is hccl.json text.
FuzzOutcome runRankTable(std::span<const uint8_t> data);
// fuzz_config: first byte picks the entry (TrainConfig::fromJson, parseLossScale, parseFault + checkFaults,
// TrainConfig::set of one key), the rest is the text.
FuzzOutcome runConfig(std::span<const uint8_t> data);
// fuzz_cifar: the input is split into the split's CIFAR-10 binary files in a scratch directory, which is
// then opened with Cifar10Dataset::open and openDataset and sampled.
FuzzOutcome runCifar(std::span<const uint8_t> data);
// fuzz_runfile: the input is a mutation program (see RunFileMutator.h) applied to a copy of one of the seed
// run files, which is then opened with RunReader and read the way the CLI and the GUI read it.
FuzzOutcome runRunFile(std::span<const uint8_t> data);
// fuzz_import: the input is a tree program (ImportFuzz.cpp): the importer, then files named from each
// format's folder and file name templates with their bytes; the tree is imported and the run file read back.
FuzzOutcome runImport(std::span<const uint8_t> data);
// The run file a fuzz_runfile program makes (its seed with the program's mutations), written to `out` and
// not read: to replay an input that crashes libhdf5 through the reader process and the command line.
void writeFuzzedRunFile(std::span<const uint8_t> data, const std::string& out);

// libFuzzer-shaped wrappers: run the entry, return 0.
int fuzzRankTable(const uint8_t* data, size_t size);
int fuzzConfig(const uint8_t* data, size_t size);
int fuzzCifar(const uint8_t* data, size_t size);
int fuzzRunFile(const uint8_t* data, size_t size);
int fuzzImport(const uint8_t* data, size_t size);

// Where scratch files go: $RANKSIGHT_FUZZ_TMP, else /dev/shm if writable, else $TMPDIR, else /tmp; one
// directory per process, removed at exit.
const std::string& scratchDir();

} // namespace rs::fuzz
