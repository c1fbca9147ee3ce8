// Helpers for tests that run one thread per rank against the emulated communicator.
#pragma once

#include <QString>
#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

namespace rankthreads {

using Clock = std::chrono::steady_clock;

// Runs body(rank) on one thread per rank, joins them all, and returns each rank's exception (or null).
inline std::vector<std::exception_ptr> runRanks(int worldSize, const std::function<void(int)>& body) {
    std::vector<std::exception_ptr> errors(static_cast<size_t>(worldSize));
    std::vector<std::thread> threads;
    for (int r = 0; r < worldSize; ++r)
        threads.emplace_back([&, r] {
            try {
                body(r);
            } catch (...) {
                errors[static_cast<size_t>(r)] = std::current_exception();
            }
        });
    for (std::thread& t : threads)
        t.join();
    return errors;
}

inline QString errorText(const std::exception_ptr& e) {
    if (!e)
        return QStringLiteral("no exception");
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        return QString::fromUtf8(ex.what());
    } catch (...) {
        return QStringLiteral("unknown exception");
    }
}

inline bool noErrors(const std::vector<std::exception_ptr>& errors, QString* text) {
    for (size_t r = 0; r < errors.size(); ++r)
        if (errors[r]) {
            *text = QStringLiteral("rank %1: %2").arg(r).arg(errorText(errors[r]));
            return false;
        }
    return true;
}

template <class E> const E* as(const std::exception_ptr& e, std::optional<E>& holder) {
    if (!e)
        return nullptr;
    try {
        std::rethrow_exception(e);
    } catch (const E& ex) {
        holder.emplace(ex);
        return &*holder;
    } catch (...) {
    }
    return nullptr;
}

inline long long msSince(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

} // namespace rankthreads
