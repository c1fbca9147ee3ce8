// A run's configuration is wrong: a key, a flag, a fault spec or the rank table. The message names what and
// where; the CLI prints it and exits 2, the window shows it beside the form.
#pragma once

#include <stdexcept>

namespace rs {

class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

} // namespace rs
