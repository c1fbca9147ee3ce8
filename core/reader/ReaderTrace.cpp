// ReaderTrace: see ReaderTrace.h.
#include "reader/ReaderTrace.h"

#include "store/ReadTrace.h"

#include <algorithm>
#include <cstring>

namespace rs::readertrace {

namespace {

Page* g_page = nullptr;

// The in-process reader's trace sink (store/ReadTrace.h): the parts, joined, into the shared page.
void write(std::string_view a, std::string_view b, std::string_view c) {
    Page* p = g_page;
    if (!p)
        return;
    p->seq.fetch_add(1, std::memory_order_acq_rel); // odd: being rewritten
    size_t n = 0;
    for (std::string_view s : {a, b, c}) {
        const size_t take = std::min(s.size(), sizeof p->text - 1 - n);
        if (take > 0) // an empty part's data() may be null, which memcpy must not get even for 0 bytes
            std::memcpy(p->text + n, s.data(), take);
        n += take;
    }
    p->text[n] = '\0';
    p->seq.fetch_add(1, std::memory_order_acq_rel);
}

} // namespace

void attach(Page* page) {
    g_page = page;
    readtrace::setSink(&write);
}

std::string_view text(const Page& page) {
    return {page.text, strnlen(page.text, sizeof page.text)};
}

} // namespace rs::readertrace
