#include "CliArgs.h"

#include "Commands.h"

#include <cstdio>
#include <fmt/format.h>

namespace rs::cli {
namespace {

// "unknown option '--frob'; the options are --force, --out": the command's options, so a typo is fixed
// without a trip to --help (tst_cli also compares this list with each command's help).
UsageError unknownOption(const std::string& option, const std::set<std::string>& valued,
                         const std::set<std::string>& flags) {
    std::set<std::string> all = valued;
    all.insert(flags.begin(), flags.end());
    std::string known;
    for (const std::string& name : all)
        known += (known.empty() ? "--" : ", --") + name;
    return UsageError(fmt::format("unknown option '{}'; {}", option,
                                  known.empty() ? "it takes no options" : "the options are " + known));
}

} // namespace

CliArgs::CliArgs(const std::vector<std::string>& args, const std::set<std::string>& valued,
                 const std::set<std::string>& flags) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a.size() < 3 || a.rfind("--", 0) != 0) {
            if (a.size() > 1 && a[0] == '-' && a != "-")
                throw unknownOption(a, valued, flags);
            m_positionals.push_back(a);
            continue;
        }
        std::string name = a.substr(2), val;
        bool hasValue = false;
        if (const auto eq = name.find('='); eq != std::string::npos) {
            val = name.substr(eq + 1);
            name = name.substr(0, eq);
            hasValue = true;
        }
        if (flags.count(name)) {
            if (hasValue)
                throw UsageError(fmt::format("option --{} takes no value", name));
            m_flags.insert(name);
        } else if (valued.count(name)) {
            if (!hasValue) {
                if (i + 1 >= args.size())
                    throw UsageError(fmt::format("option --{} needs a value", name));
                val = args[++i];
            }
            m_ordered.emplace_back(name, val);
        } else {
            throw unknownOption("--" + name, valued, flags);
        }
    }
}

std::optional<std::string> CliArgs::value(const std::string& name) const {
    std::optional<std::string> v;
    for (const auto& [k, x] : m_ordered)
        if (k == name)
            v = x;
    return v;
}

std::vector<std::string> CliArgs::values(const std::string& name) const {
    std::vector<std::string> v;
    for (const auto& [k, x] : m_ordered)
        if (k == name)
            v.push_back(x);
    return v;
}

bool CliArgs::flag(const std::string& name) const {
    return m_flags.count(name) > 0;
}

void CliArgs::number(const std::string& name, int& into, int lo, int hi) const {
    const auto v = value(name);
    if (!v)
        return;
    size_t used = 0;
    int x = 0;
    try {
        x = std::stoi(*v, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != v->size())
        throw UsageError("--" + name + " '" + *v + "' is not a number");
    if (x < lo || x > hi)
        throw UsageError("--" + name + " " + std::to_string(x) + " is out of range [" + std::to_string(lo) +
                         ", " + std::to_string(hi) + "]");
    into = x;
}

void printError(const std::string& message) {
    std::fprintf(stderr, "ranksight-cli: %s\n", message.c_str());
}

} // namespace rs::cli
