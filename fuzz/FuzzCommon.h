// Internal to fuzz/: what the entry logic of every target shares. guarded() runs one call and sorts its
// outcome into accepted, cleanly rejected (the exception type the API promises, with a message) or a bug.
#pragma once

#include "FuzzEntries.h"

#include <cxxabi.h>
#include <exception>
#include <fmt/format.h>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>

namespace rs::fuzz {

// For APIs that report problems by value and promise not to throw at all.
struct NoException : std::exception {};

inline std::string typeName(const std::type_info& t) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(t.name(), nullptr, nullptr, &status),
                                                std::free);
    return status == 0 && name ? std::string(name.get()) : std::string(t.name());
}

// Runs f(); a std::exception of type Expected with a non-empty message is a clean rejection, anything
// else thrown is a bug (fuzzBug): another type (e.g. nlohmann::json's type_error escaping a parser that
// promises ConfigError), std::bad_alloc / std::length_error (an allocation sized by the input), an empty
// message, or something that is not a std::exception at all.
template <class Expected, class F> FuzzOutcome guarded(const char* what, F&& f) {
    try {
        return f();
    } catch (const FuzzBug&) {
        throw;
    } catch (const std::bad_alloc& e) {
        fuzzBug(fmt::format("{}: {} ({}): an allocation sized by what the input claims", what,
                            typeName(typeid(e)), e.what()));
    } catch (const std::length_error& e) {
        fuzzBug(fmt::format("{}: std::length_error ({}): an allocation sized by what the input claims", what,
                            e.what()));
    } catch (const std::exception& e) {
        const std::string msg = e.what();
        if constexpr (!std::is_same_v<Expected, std::exception>)
            if (!dynamic_cast<const Expected*>(&e))
                fuzzBug(fmt::format("{}: threw {} ('{}'), expected {}", what, typeName(typeid(e)), msg,
                                    typeName(typeid(Expected))));
        if (msg.empty())
            fuzzBug(fmt::format("{}: {} with an empty message", what, typeName(typeid(e))));
        return {true, msg};
    } catch (...) {
        fuzzBug(fmt::format("{}: threw something that is not a std::exception ({})", what,
                            typeName(*abi::__cxa_current_exception_type())));
    }
}

void writeFile(const std::string& path, std::string_view bytes);

} // namespace rs::fuzz
