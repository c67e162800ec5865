// bench_get_oci: `kernels get` of three packages from an OCI registry over TLS
// (docker-registry on loopback, htpasswd auth) against the same from nginx over https,
// same blobs, same run (issue 14, "Measure": cold <= 1.2x; warm unchanged).
//
// Build: cmake --build --preset dev --target bench_get_oci kernels
// Run:   tests/bench/bench_get_oci.sh   (or the program: --help)
//
// Three packages, each a library of --size-mib random bytes (incompressible), signed and
// published to a file:// hub; nginx serves that tree over https (http/2, a test CA); `kernels
// mirror` copies it to the registry (the same blobs and signed indexes, byte for byte).
// Every run, alternating which hub goes first:
//   cold  `kernels get a b c --hub H` into a cache holding only the pinned roots: root walk,
//         three verified indexes, three parallel downloads, verify, unpack
//   warm  the same command again: indexes answered 304 (nginx: ETag; registry: manifest
//         digest), packages already cached
// Each result is checked (the three sha256 of the published builds). Prints medians and
// the ratio registry / nginx.
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_support.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "nginx_fixture.hpp"
#include "registry_fixture.hpp"
#include "server_util.hpp"

namespace reg = kh::registry;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

const char* kRepos[] = {"bench-org/alpha", "bench-org/beta", "bench-org/gamma"};

// Runs a shell command; its output into `out`. Returns the exit code.
int sh(const std::string& cmd, std::string* out = nullptr) {
  const std::string log = "/tmp/kh-bench-oci-" + std::to_string(::getpid()) + ".out";
  const int status = std::system((cmd + " >" + kh_test::shell_quote(log) + " 2>&1").c_str());
  if (out) *out = kh_test::read_text_file(log);
  ::unlink(log.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void usage() {
  std::puts(
      "usage: bench_get_oci --kernels PATH [--runs N] [--size-mib M] [--work DIR]\n"
      "  --kernels PATH  the `kernels` CLI to time\n"
      "  --runs N        timed runs per hub and kind (default 7)\n"
      "  --size-mib M    size of each package's library (default 16)\n"
      "  --work DIR      scratch directory (default: a new one under $TMPDIR or /tmp; removed at the end)");
}

}  // namespace

int main(int argc, char** argv) {
  kh_bench::GetBenchOptions opt;
  if (const int status = kh_bench::parse_get_bench_args(argc, argv, opt, false, usage); status >= 0) return status;
  const int runs = opt.runs;
  const size_t size_mib = opt.size_mib;
  const std::string kernels = opt.kernels;
  if (kernels.empty()) {
    usage();
    return 2;
  }
  ::setenv("no_proxy", "127.0.0.1,localhost", 1);
  ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
  const kh_bench::ScratchDir scratch(opt.work, "kh-bench-oci");
  if (!scratch.ok()) {
    std::perror("bench_get_oci: scratch directory");
    return 1;
  }
  const std::string& work = scratch.path();
  int rc = 0;
  try {
    std::printf("setting up: 3 packages of %zu MiB, nginx https and docker-registry (TLS, htpasswd) on loopback ...\n",
                size_mib);
    // 1. Three signed packages on a file hub.
    const std::string hub_dir = work + "/www/hub";
    const auto key = reg::minisign::generate_key();
    reg::RootSpec spec;
    spec.root_keys = {key.public_key()};
    spec.index_keys = {key.public_key()};
    spec.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 86400;
    reg::write_next_root_to_file_hub(hub_dir, spec, {key});
    std::mt19937_64 rng(42);
    std::vector<std::string> shas;
    for (const char* repo : kRepos) {
      std::string lib(size_mib << 20, '\0');
      for (size_t i = 0; i + 8 <= lib.size(); i += 8) {
        const uint64_t v = rng();
        std::memcpy(&lib[i], &v, 8);
      }
      reg::make_directories(work + "/build");
      kh_test::write_text_file(work + "/build/libkh_bench.so", lib);
      reg::PackageManifest m;
      m.name = repo;
      m.version = "1.0.0";
      m.variant = "cpu-x86_64-abi1-x86_64-linux";
      m.abi = "1.0";
      m.ops = {{"bench_op", "bench_op(Tensor(a!) out) -> ()"}};
      const std::string dist = work + "/dist-" + std::to_string(shas.size());
      reg::pack_package(work + "/build/libkh_bench.so", m, dist);
      shas.push_back(reg::publish_to_file_hub(dist, hub_dir, 30, {key}).at(0).sha256);
    }
    const std::string root = hub_dir + "/root/1.root.json";

    // 2. The servers; the registry gets the same tree through `kernels mirror`.
    reg::make_directories(work + "/nginx");
    kh_test::NginxServer::Config nc;
    nc.root = work + "/www";
    kh_test::NginxServer nginx(work + "/nginx", nc);
    reg::make_directories(work + "/registry");
    kh_test::RegistryServer registry(work + "/registry", {});
    kh_test::write_text_file(work + "/cas.pem",
                             kh_test::read_text_file(nginx.ca_file()) + kh_test::read_text_file(registry.ca_file()));
    const std::string https_hub = nginx.https_url("/hub"), oci_hub = registry.hub_url("bench/kernels");
    const std::string env = "KH_PROGRESS=0 KH_CA_BUNDLE='" + work + "/cas.pem' KH_REGISTRY_AUTH=publisher:pa55word ";
    auto cli = [&](const std::string& cache, const std::string& args, std::string* out = nullptr) {
      return sh(env + "KH_CACHE='" + cache + "' '" + kernels + "' " + args, out);
    };
    std::string out;
    if (cli(work + "/mirror-cache", "mirror file://" + hub_dir + " " + oci_hub + " --trust '" + root + "'", &out) != 0)
      throw std::runtime_error("kernels mirror to the registry failed: " + out);
    // A cache holding only the pinned roots, copied fresh for every cold run.
    const std::string pinned = work + "/pinned-cache";
    for (const std::string& h : {https_hub, oci_hub})
      if (cli(pinned, "trust '" + root + "' --hub " + h, &out) != 0) throw std::runtime_error("kernels trust: " + out);
    std::string specs;
    for (const char* repo : kRepos) specs += std::string(" ") + repo + "@1";

    // 3. Correct first: each hub yields the three published builds.
    auto get = [&](const std::string& cache, const std::string& hub) {
      std::string text;
      if (cli(cache, "get" + specs + " --hub " + hub + " --json", &text) != 0)
        throw std::runtime_error("kernels get from " + hub + " failed: " + text);
      const nlohmann::json j = nlohmann::json::parse(text.substr(text.find('{')));
      for (size_t i = 0; i < shas.size(); ++i)
        if (j["packages"][i]["sha256"] != shas[i]) throw std::runtime_error(hub + " gave another build of " + kRepos[i]);
    };
    std::vector<double> cold_https, cold_oci, warm_https, warm_oci;
    for (int run = 0; run < runs + 1; ++run) {  // run 0 checks and warms the servers; not timed
      for (int k = 0; k < 2; ++k) {
        const bool oci = ((run + k) % 2) == 1;  // alternate which hub goes first
        const std::string cache = work + "/cache-" + std::to_string(run) + (oci ? "-oci" : "-https");
        fs::remove_all(cache);
        fs::copy(pinned, cache, fs::copy_options::recursive);
        const std::string& hub = oci ? oci_hub : https_hub;
        const auto t0 = Clock::now();
        get(cache, hub);
        const double cold = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        const auto t1 = Clock::now();
        get(cache, hub);
        const double warm = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
        reg::remove_tree(cache);
        if (run == 0) continue;
        (oci ? cold_oci : cold_https).push_back(cold);
        (oci ? warm_oci : warm_https).push_back(warm);
      }
    }
    const double ch = kh_bench::median(cold_https), co = kh_bench::median(cold_oci);
    const double wh = kh_bench::median(warm_https), wo = kh_bench::median(warm_oci);
    const double mib = static_cast<double>(3 * size_mib);
    std::printf("\nkernels get of 3 packages (%zu MiB each), %d runs, medians:\n", size_mib, runs);
    std::printf("  %-34s %10s %10s %12s\n", "", "ms", "MiB/s", "vs nginx");
    std::printf("  %-34s %10.1f %10.1f %12s\n", "cold, nginx https (baseline)", ch, mib / (ch / 1000), "1.00x");
    std::printf("  %-34s %10.1f %10.1f %11.2fx\n", "cold, docker-registry TLS (oci://)", co, mib / (co / 1000), co / ch);
    std::printf("  %-34s %10.1f %10s %12s\n", "warm, nginx https (baseline)", wh, "-", "1.00x");
    std::printf("  %-34s %10.1f %10s %11.2fx\n", "warm, docker-registry TLS (oci://)", wo, "-", wo / wh);
    std::printf("\ntarget: cold <= 1.20x: %s\n", co / ch <= 1.2 ? "met" : "NOT met");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_get_oci: %s\n", e.what());
    rc = 1;
  }
  return rc;
}
