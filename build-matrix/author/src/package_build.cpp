// `kernels build` (package_build.hpp): one CMake build tree per target, then pack.
#include "kh/author/package_build.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "kh/author/pack.hpp"
#include "kh/author/process.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/op_docs.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::author {
namespace {

namespace fs = std::filesystem;

constexpr size_t kLogTailLines = 40;

// The backends a package's kernel.json builds ("build"."backends": cpu, cuda, hip).
std::vector<std::string> package_backends(const std::string& kernel_json_path, const std::string& text) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(KH_ERROR_INVALID_ARGUMENT, kernel_json_path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  std::vector<std::string> backends;
  if (doc.contains("build") && doc["build"].is_object() && doc["build"].contains("backends") &&
      doc["build"]["backends"].is_object())
    for (const auto& [name, _] : doc["build"]["backends"].items()) backends.push_back(name);
  if (backends.empty())
    fail(KH_ERROR_INVALID_ARGUMENT, kernel_json_path + " says nothing to build: add \"build\": {\"backends\": "
                                    "{\"cpu\": {...}}} (docs/authoring.md, \"The manifest\")");
  return backends;
}

std::string read_json_string(const std::string& path, const std::string& key) {
  const nlohmann::json doc = nlohmann::json::parse(registry::read_file(path, 1u << 20));
  return doc.at(key).get<std::string>();
}

std::map<std::string, std::string> read_tools(const std::string& path) {
  const nlohmann::json doc = nlohmann::json::parse(registry::read_file(path, 1u << 20));
  std::map<std::string, std::string> tools;
  for (const auto& [name, version] : doc.at("tools").items()) tools[name] = version.get<std::string>();
  return tools;
}

// The one kernel library the install step put under <prefix>/<package>/<variant>/.
std::string installed_library(const fs::path& prefix, const std::string& variant) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (const fs::directory_entry& pkg : fs::directory_iterator(prefix, ec)) {
    const fs::path dir = pkg.path() / variant;
    if (!fs::is_directory(dir, ec)) continue;
    for (const fs::directory_entry& f : fs::directory_iterator(dir, ec)) {
      const std::string name = f.path().filename().string();
      if (name.rfind("lib", 0) == 0 && f.path().extension() == ".so") found.push_back(f.path());
    }
  }
  if (found.size() != 1)
    fail(KH_ERROR_NOT_FOUND, "the install step left " + std::to_string(found.size()) + " kernel libraries for " +
                                 variant + " under " + prefix.string() + " (expected exactly one, from "
                                 "kh_add_kernel_package)");
  return found.front().string();
}

int default_jobs() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 2;
}

class TargetBuild {
 public:
  TargetBuild(const BuildRequest& request, const Kit& kit, const TargetTable& table, const SourceInfo& source,
              const fs::path& package, const fs::path& build_root, const fs::path& out_dir,
              const std::function<void(const std::string&)>& progress)
      : request_(request), kit_(kit), table_(table), source_(source), package_(package), build_root_(build_root),
        out_dir_(out_dir), progress_(progress) {}

  TargetOutcome run(const Target& target) {
    TargetOutcome outcome;
    outcome.target = target.key;
    const auto start = std::chrono::steady_clock::now();
    const fs::path dir = build_root_ / target.key;
    log_ = build_root_ / (target.key + ".log");
    fs::create_directories(build_root_);
    if (!request_.verbose) fs::remove(log_);
    try {
      step(target, "configure", configure_command(target, dir));
      step(target, "build", {"cmake", "--build", dir.string(), "-j", std::to_string(jobs())});
      if (request_.run_tests && target.backend == "cpu" && fs::exists(dir / "CTestTestfile.cmake"))
        step(target, "test", {"ctest", "--test-dir", dir.string(), "--output-on-failure", "-j", std::to_string(jobs())});
      fs::remove_all(dir / "install");
      step(target, "install", {"cmake", "--install", dir.string(), "--prefix", (dir / "install").string()});
      const std::string info = (dir / "kh-build-info.json").string();
      outcome.variant = read_json_string(info, "variant");
      progress_(target.key + ": pack " + outcome.variant);
      PackRequest pack;
      pack.library = installed_library(dir / "install", outcome.variant);
      pack.package_json = (package_ / "kernel.json").string();
      pack.out_dir = out_dir_.string();
      pack.abi.variant = outcome.variant;
      pack.abi.max_glibc = request_.max_glibc.empty() ? table_.max_glibc : request_.max_glibc;
      pack.provenance = provenance(target, info);
      outcome.archive = pack_kernel_library(pack).archive;
      outcome.status = TargetStatus::kBuilt;
    } catch (const StatusError& e) {
      outcome.status = TargetStatus::kFailed;
      outcome.detail = e.what();
    } catch (const std::exception& e) {  // a malformed kh-build-info.json, a file system error
      outcome.status = TargetStatus::kFailed;
      outcome.detail = std::string("cannot finish the build in ") + dir.string() + ": " + e.what();
    }
    outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return outcome;
  }

 private:
  int jobs() const { return request_.jobs > 0 ? request_.jobs : default_jobs(); }

  std::vector<std::string> configure_command(const Target& target, const fs::path& dir) const {
    const bool own_project = fs::exists(package_ / "CMakeLists.txt");
    std::vector<std::string> cmd = {"cmake", "-S", own_project ? package_.string() : kit_.generic_project(),
                                    "-B", dir.string(), "-DKH_BUILD_TARGET=" + target.key,
                                    "-DCMAKE_BUILD_TYPE=Release"};
    if (!find_program("ninja").empty() && !fs::exists(dir / "CMakeCache.txt")) {
      cmd.push_back("-G");
      cmd.push_back("Ninja");
    }
    if (own_project) {
      if (kit_.cmake_dir.empty())
        fail(KH_ERROR_NOT_FOUND, (package_ / "CMakeLists.txt").string() + " finds kh with find_package(kh COMPONENTS "
                                 "author), but this `kernels` is not an installed kh (no lib/cmake/kh beside it): run "
                                 "the `kernels` of an installation (cmake --install <kh build> --prefix <prefix>)");
      cmd.push_back("-Dkh_DIR=" + kit_.cmake_dir);
    } else {
      cmd.push_back("-DKH_PACKAGE_DIR=" + package_.string());
    }
    cmd.insert(cmd.end(), request_.cmake_args.begin(), request_.cmake_args.end());
    return cmd;
  }

  void step(const Target& target, const std::string& what, const std::vector<std::string>& cmd) {
    progress_(target.key + ": " + what);
    ProcessOptions o;
    if (!request_.verbose) o.log_path = log_.string();
    // The compilers' notion of "now" (__DATE__, __TIME__): the commit's time, for builds that
    // give the same bytes whenever they run.
    if (std::getenv("SOURCE_DATE_EPOCH") == nullptr && source_.commit_time > 0)
      o.env.push_back("SOURCE_DATE_EPOCH=" + std::to_string(source_.commit_time));
    const ProcessResult r = run_process(cmd, o);
    if (r.exit_code == 0) return;
    std::string detail = what + " failed (exit status " + std::to_string(r.exit_code) + ")";
    if (r.exit_code == 127) detail += ": cannot run " + cmd.front() + " (is it installed? apt-get install cmake)";
    if (!request_.verbose) {
      detail += "; the log is " + log_.string() + ", ending:\n" + tail_of_file(log_.string(), kLogTailLines);
    }
    fail(KH_ERROR_IO, detail);
  }

  registry::Provenance provenance(const Target& target, const std::string& build_info) const {
    registry::Provenance p;
    if (source_.in_git) {
      p.repository = source_.repository;
      p.commit = source_.commit;
      p.path = source_.path;
      p.dirty = source_.dirty;
    }
    p.kh_version = kit_.kh_version;
    p.target = target.key;
    p.tools = read_tools(build_info);
    p.inputs = inputs_digest(package_.string(), source_, target.key, kit_.kh_version);
    return p;
  }

  const BuildRequest& request_;
  const Kit& kit_;
  const TargetTable& table_;
  const SourceInfo& source_;
  fs::path package_, build_root_, out_dir_, log_;
  const std::function<void(const std::string&)>& progress_;
};

}  // namespace

size_t BuildReport::built() const {
  return static_cast<size_t>(std::count_if(targets.begin(), targets.end(),
                                           [](const TargetOutcome& t) { return t.status == TargetStatus::kBuilt; }));
}

size_t BuildReport::failed() const {
  return static_cast<size_t>(std::count_if(targets.begin(), targets.end(),
                                           [](const TargetOutcome& t) { return t.status == TargetStatus::kFailed; }));
}

BuildReport build_package(const BuildRequest& request, const Kit& kit,
                          const std::function<void(const std::string&)>& progress) {
  std::error_code ec;
  const fs::path package = fs::weakly_canonical(request.package_dir.empty() ? "." : request.package_dir, ec);
  const std::string kernel_json = (package / "kernel.json").string();
  if (!fs::is_regular_file(kernel_json, ec))
    fail(KH_ERROR_NOT_FOUND, "no kernel.json in " + package.string() + ": run `kernels build` in a package folder "
                             "(`kernels init <org>/<name>` makes one)");
  const std::string text = registry::read_file(kernel_json, 1u << 20);
  const registry::PackageSource pkg = registry::parse_package_source(text, kernel_json);
  const std::vector<std::string> backends = package_backends(kernel_json, text);
  const TargetTable table = read_target_table(kit.matrix_json());

  std::vector<const Target*> wanted;
  if (request.all_targets) {
    for (const Target& t : table.targets) wanted.push_back(&t);
  } else if (request.targets.empty()) {
    wanted.push_back(&table.find(host_cpu_target()));
  } else {
    for (const std::string& key : request.targets) wanted.push_back(&table.find(key));
  }

  const fs::path build_root = request.build_root.empty() ? package / "build" / "kh" : fs::absolute(request.build_root);
  const fs::path out_dir = request.out_dir.empty() ? package / "dist" : fs::absolute(request.out_dir);
  fs::create_directories(out_dir);
  SourceInfo source = request.recorded_source
                          ? *request.recorded_source
                          : read_source_info(package.string(), {build_root.string(), out_dir.string()},
                                             request.source_repository);
  if (request.recorded_source) {
    // The exported tree's files, under the source facts the release recorded.
    const SourceInfo exported = read_source_info(package.string(), {build_root.string(), out_dir.string()});
    source.files = exported.files;
  }

  BuildReport report;
  report.package = pkg.name + " " + pkg.version;
  report.in_git = source.in_git;
  report.dirty = source.dirty;
  TargetBuild builder(request, kit, table, source, package, build_root, out_dir, progress);
  for (const Target* target : wanted) {
    if (std::find(backends.begin(), backends.end(), target->package_backend()) == backends.end()) {
      TargetOutcome o;
      o.target = target->key;
      o.status = TargetStatus::kNotInPackage;
      o.detail = "the package has no " + target->package_backend() + " backend";
      report.targets.push_back(o);
      continue;
    }
    const ToolchainStatus tools = probe_toolchain(*target);
    if (!tools.present) {
      TargetOutcome o;
      o.target = target->key;
      o.status = request.require_all ? TargetStatus::kFailed : TargetStatus::kSkipped;
      o.detail = "needs " + tools.missing;
      progress(target->key + ": " + (request.require_all ? "cannot build: " : "skipped: ") + o.detail);
      report.targets.push_back(o);
      continue;
    }
    report.targets.push_back(builder.run(*target));
  }
  return report;
}

}  // namespace kh::author
