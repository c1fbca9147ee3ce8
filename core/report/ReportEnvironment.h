// The report's long closing material: the environment, the configuration, the rank table and the cards
// (past kReportAllRanksUpTo cards, a row per group of servers), each as the run file recorded it.
#pragma once

#include "report/ReportMarkdown.h"

#include <string>

namespace rs {

void environmentSection(std::string& md, const ReportInput& in);

} // namespace rs
