// A setting's value from text, as a config file or the command line gives it, with the errors that name the
// key ("ranks: 0 is out of range [1, 1024]"). The config-key table (ConfigKeys.cpp) binds these to members.
#pragma once

#include <cstdint>
#include <string>

namespace rs {

int64_t parseInteger(const std::string& key, const std::string& text, int64_t lo, int64_t hi);
double parseNumber(const std::string& key, const std::string& text, double lo, double hi);
bool parseBoolean(const std::string& key, const std::string& text); // true/1/on, false/0/off
// A process count of the command line (--nodes, --node-rank): 0..4096, else "--FLAG 'TEXT' is not a number".
int parseCount(const std::string& flag, const std::string& text);

} // namespace rs
