// See coverage_report.hpp.
#include "coverage_report.hpp"

#include <cstdio>

#include "kh/loader/coverage.hpp"

namespace kh::cli {

void print_coverage(const std::string& repo, const registry::Release& release) {
  std::printf("\n%s %s on each GPU (a machine like this one, newest driver and runtime):\n", repo.c_str(),
              registry::to_string(release.version).c_str());
  for (const loader::CoverageRow& row : loader::release_coverage(release.variants, loader::host_facts())) {
    const char* runs = row.runs == loader::CoverageRow::Runs::Native   ? "native "
                       : row.runs == loader::CoverageRow::Runs::PtxJit ? "PTX JIT"
                                                                       : "no     ";
    const std::string what = row.variant.empty() ? "(" + row.reason + ")" : row.variant + " (" + platform::fit_name(row.fit) + ")";
    std::printf("  %-7s %-26s %s  %s\n", row.arch.c_str(), row.examples.c_str(), runs, what.c_str());
  }
}

nlohmann::json coverage_json(const registry::Release& release) {
  nlohmann::json rows = nlohmann::json::array();
  for (const loader::CoverageRow& row : loader::release_coverage(release.variants, loader::host_facts())) {
    nlohmann::json r = {{"backend", platform::backend_name(row.backend)},
                        {"arch", row.arch},
                        {"examples", row.examples},
                        {"runs", loader::runs_name(row.runs)},
                        {"reason", row.reason}};
    if (!row.variant.empty()) {
      r["variant"] = row.variant;
      r["fit"] = platform::fit_name(row.fit);
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace kh::cli
