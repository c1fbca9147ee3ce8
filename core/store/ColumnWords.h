// What a run-file column or root attribute holds, in the words a user reads ("loss", "local-gradient
// fingerprints"), for every text that tells what a source did not record: the run panel, the report, the
// checks that could not run, the comparison's summary. Dataset paths ("/grads/local_fp") are the file's
// vocabulary, not the user's: they stay in JSON and in docs/run-file.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rs {

// The words for a column path or root attribute that a file may declare absent (runschema::mayBeAbsent);
// the path itself for anything else (a newer file's column this build does not know).
std::string columnWords(std::string_view path);

// "loss, learning rate and overflow flags": the words of each, in order, duplicates dropped.
std::string columnWordsList(const std::vector<std::string>& paths);

} // namespace rs
