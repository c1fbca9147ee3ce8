// A small argument reader for ranksight-cli: --key value, --key=value, flags and positionals, with errors
// that name the offending argument.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace rs::cli {

class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class CliArgs {
public:
    // valued: options that take a value; flags: options that take none. Repeated options keep every value.
    CliArgs(const std::vector<std::string>& args, const std::set<std::string>& valued,
            const std::set<std::string>& flags);
    std::optional<std::string> value(const std::string& name) const; // the last one given
    std::vector<std::string> values(const std::string& name) const;  // in order given
    bool flag(const std::string& name) const;
    // --name as a whole number in [lo, hi] into `into` (left alone when absent); UsageError names the option.
    void number(const std::string& name, int& into, int lo, int hi) const;
    const std::vector<std::string>& positionals() const { return m_positionals; }
    // Options in the order given, for "later wins" semantics.
    const std::vector<std::pair<std::string, std::string>>& ordered() const { return m_ordered; }

private:
    std::vector<std::pair<std::string, std::string>> m_ordered;
    std::set<std::string> m_flags;
    std::vector<std::string> m_positionals;
};

} // namespace rs::cli
