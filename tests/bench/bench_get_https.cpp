// bench_get_https: downloading a package over https from nginx on loopback, against the
// baseline `curl -o` + `sha256sum` of the same blob, in one run; and a repeat fetch whose
// metadata is unchanged (a conditional GET answered 304) with the package already cached.
//
// Build: cmake --build --preset dev --target bench_get_https kernels
// Run:   tests/bench/bench_get_https.sh   (or the program: --help)
//
// It publishes one package whose library is --size-mib of random bytes (incompressible,
// so the blob is as large) to a scratch hub, serves it with nginx (https, http/2, a test
// CA), checks every method yields the right bytes, then times, alternating, N runs of:
//   kh fetch_blob  open_hub + fetch_blob into a fresh file (a cold cache): TLS, GET, hash, write
//   curl+sha256sum `curl -sS --cacert CA -o FILE URL` then `sha256sum FILE` (two processes):
//                  the baseline; also shown: curl alone, and curl + `openssl dgst -sha256`
//   kernels get    (with --kernels) the CLI into an empty KH_CACHE: metadata, download,
//                  verify, unpack, manifest check
// and then, package cached and metadata unchanged:
//   kh 304         open_hub + fetch_verified_index (conditional GET with the stored ETag,
//                  signature checked against the pinned root) + package_dir
//   kernels get    (with --kernels) the CLI again on the warm cache
// Prints medians, MiB/s and the ratio to the baseline.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kh/registry/cache.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/sha256.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/trust.hpp"
#include "kh/registry/status_error.hpp"
#include "bench_support.hpp"
#include "nginx_fixture.hpp"

namespace reg = kh::registry;
using Clock = std::chrono::steady_clock;

namespace {

const char* kRepo = "bench-org/big-kernel";
const char* kVariant = "cpu-x86_64-abi1-x86_64-linux";

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

// Runs argv with extra environment; stdout to `out_path` ("" keeps it). Returns the exit code.
int run(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
        const std::string& out_path = "/dev/null") {
  pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    if (!out_path.empty()) {
      int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) ::dup2(fd, 1);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

std::string read_text(const std::string& path) { return reg::read_file(path, 1u << 20); }

void fetch_blob_into(const std::string& hub_url, const reg::HttpOptions& o, const reg::PublishedVariant& pv,
                     const std::string& out) {
  auto hub = reg::open_http_hub(hub_url, o);
  int fd = ::open(out.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + out);
  try {
    hub->fetch_blob(pv.sha256, pv.size, fd);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

void usage() {
  std::puts(
      "usage: bench_get_https [--runs N] [--size-mib M] [--work DIR] [--kernels PATH] [--curl PATH]\n"
      "  --runs N        timed runs per method (default 7)\n"
      "  --size-mib M    size of the package's library (default 64)\n"
      "  --work DIR      scratch directory (default: a new one under $TMPDIR or /tmp; removed at the end)\n"
      "  --kernels PATH  also time the `kernels get` CLI (cold and warm)\n"
      "  --curl PATH     the curl binary (default: curl)");
}

}  // namespace

int main(int argc, char** argv) {
  kh_bench::GetBenchOptions opt;
  opt.size_mib = 64;
  opt.curl = "curl";
  if (const int status = kh_bench::parse_get_bench_args(argc, argv, opt, true, usage); status >= 0) return status;
  const int runs = opt.runs;
  const size_t size_mib = opt.size_mib;
  const std::string kernels = opt.kernels, curl = opt.curl;
  ::setenv("no_proxy", "127.0.0.1,localhost", 1);
  ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
  const kh_bench::ScratchDir scratch(opt.work, "kh-bench-get");
  if (!scratch.ok()) {
    std::perror("bench_get_https: scratch directory");
    return 1;
  }
  const std::string& work = scratch.path();
  int rc = 0;
  try {
    // 1. A hub with one package whose blob is about size_mib MiB.
    std::printf("setting up: %zu MiB package, nginx https on loopback ...\n", size_mib);
    reg::make_directories(work + "/build");
    {
      std::string lib(size_mib << 20, '\0');
      std::mt19937_64 rng(42);
      for (size_t i = 0; i + 8 <= lib.size(); i += 8) {
        uint64_t v = rng();
        std::memcpy(&lib[i], &v, 8);
      }
      std::memcpy(&lib[0], "\x7f" "ELF", 4);
      int fd = ::open((work + "/build/libkh_big.so").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0755);
      if (fd < 0 || ::write(fd, lib.data(), lib.size()) != static_cast<ssize_t>(lib.size()))
        throw std::runtime_error("cannot write the library");
      ::close(fd);
    }
    reg::PackageManifest m;
    m.name = kRepo;
    m.version = "1.0.0";
    m.variant = kVariant;
    m.abi = "1.0";
    m.ops = {{"big_op", "big_op(Tensor(a!) out, Tensor x) -> ()"}};
    reg::pack_package(work + "/build/libkh_big.so", m, work + "/dist");
    // Signed as a real hub is: root 1 names one key for both roles; the CLI's cache pins it.
    const reg::minisign::SecretKey key = reg::minisign::generate_key();
    {
      reg::RootSpec spec;
      spec.root_keys = {key.public_key()};
      spec.index_keys = {key.public_key()};
      spec.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 30 * 86400;
      reg::write_next_root_to_file_hub(work + "/hub", spec, {key});
    }
    const reg::PublishedVariant pv = reg::publish_to_file_hub(work + "/dist", work + "/hub", 30, {key}).at(0);
    const std::string root_text = read_text(work + "/hub/root/1.root.json");
    reg::make_directories(work + "/nginx");
    kh_test::NginxServer::Config cfg;
    cfg.root = work + "/hub";
    kh_test::NginxServer nginx(work + "/nginx", cfg);
    const std::string hub_url = nginx.https_url();
    const std::string blob_url = hub_url + "/" + reg::blob_path(pv.sha256);
    const std::string ca = nginx.ca_file();
    reg::HttpOptions o;
    o.ca_bundle = ca;
    o.progress = reg::HttpOptions::Progress::Never;
    const double mib = static_cast<double>(pv.size) / (1024.0 * 1024.0);
    std::printf("blob sha256:%s, %.1f MiB, %s\n", pv.sha256.c_str(), mib, hub_url.c_str());

    // 2. Validate before timing: every method yields the published bytes.
    const std::string out = work + "/out.bin";
    fetch_blob_into(hub_url, o, pv, out);
    if (reg::sha256_file_hex(out) != pv.sha256) throw std::runtime_error("kh fetch_blob: wrong bytes");
    if (run({curl, "-sS", "--cacert", ca, "-o", out, blob_url}, {}) != 0 ||
        run({"sha256sum", out}, {}, work + "/sum.txt") != 0 || read_text(work + "/sum.txt").substr(0, 64) != pv.sha256)
      throw std::runtime_error("curl + sha256sum: failed or wrong bytes");
    const std::vector<std::pair<std::string, std::string>> kenv = {
        {"KH_HUB", hub_url}, {"KH_CA_BUNDLE", ca}, {"KH_CACHE", work + "/kcache"}};
    const std::vector<std::string> get_cmd = {kernels, "get", std::string(kRepo) + "@1", "--target", kVariant};
    // A fresh CLI cache trusts the hub's root, as after `kernels trust root.json` (untimed).
    auto fresh_cli_cache = [&] {
      reg::remove_tree(work + "/kcache");
      reg::Cache kcache(work + "/kcache");
      reg::TrustStore(kcache, reg::open_http_hub(hub_url, o)->id()).pin_root(root_text, "root/1.root.json");
    };
    bool kernels_ok = false;
    if (!kernels.empty()) {
      fresh_cli_cache();
      kernels_ok = run(get_cmd, kenv, work + "/get.txt") == 0;
      if (!kernels_ok)
        std::printf("`kernels get` failed (its rows are skipped): %s\n", read_text(work + "/get.txt").c_str());
    }

    // 3. Cold: alternate the methods so drift hits them alike.
    std::vector<double> t_kh, t_curl, t_curl_only, t_curl_openssl, t_get;
    for (int r = 0; r < runs; ++r) {
      ::unlink(out.c_str());
      auto t0 = Clock::now();
      fetch_blob_into(hub_url, o, pv, out);
      t_kh.push_back(ms_since(t0));

      ::unlink(out.c_str());
      t0 = Clock::now();
      int a = run({curl, "-sS", "--cacert", ca, "-o", out, blob_url}, {});
      int b = run({"sha256sum", out}, {});
      t_curl.push_back(ms_since(t0));
      if (a != 0 || b != 0) throw std::runtime_error("curl or sha256sum failed during timing");

      // Two more baselines: curl alone, and curl + OpenSSL's SHA-256 (which uses the CPU's
      // SHA instructions, as kh does; coreutils' sha256sum does not).
      ::unlink(out.c_str());
      t0 = Clock::now();
      a = run({curl, "-sS", "--cacert", ca, "-o", out, blob_url}, {});
      t_curl_only.push_back(ms_since(t0));
      t0 = Clock::now();
      b = run({"openssl", "dgst", "-sha256", out}, {});
      t_curl_openssl.push_back(t_curl_only.back() + ms_since(t0));
      if (a != 0 || b != 0) throw std::runtime_error("curl or openssl dgst failed during timing");

      if (kernels_ok) {
        fresh_cli_cache();
        t0 = Clock::now();
        int g = run(get_cmd, kenv, work + "/get.txt");
        if (g != 0) throw std::runtime_error("kernels get failed during timing: exit " + std::to_string(g));
        t_get.push_back(ms_since(t0));
      }
    }

    // 4. Warm: metadata unchanged (304) and the package cached.
    reg::Cache cache(work + "/cache");
    {
      auto hub = reg::open_http_hub(hub_url, o);
      reg::TrustStore(cache, hub->id()).pin_root(root_text, "root/1.root.json");
      const reg::RepoIndex idx = reg::fetch_verified_index(*hub, cache, kRepo, reg::TrustOptions{});
      const reg::Release& rel = idx.releases.at(0);
      cache.ensure_package(*hub, kRepo, rel, rel.variants.at(0));
      if (cache.load_metadata_etag(hub->id(), reg::repo_index_path(kRepo)).empty())
        std::printf("note: the hub sent no ETag\n");
    }
    // The floor a CLI cannot go under: one process of Debian's curl (the same libcurl and
    // its ~40 shared libraries) making the same conditional request.
    const std::string index_url = hub_url + "/" + reg::repo_index_path(kRepo);
    const std::string etag = cache.load_metadata_etag(reg::open_http_hub(hub_url, o)->id(), reg::repo_index_path(kRepo));
    const std::vector<std::string> curl_304 = {curl, "-sS", "--cacert", ca, "-o", "/dev/null", "-H", "If-None-Match: " + etag,
                                               index_url};
    std::vector<double> t_304, t_get_warm, t_curl_304;
    for (int r = 0; r < std::max(runs, 15); ++r) {
      auto t0 = Clock::now();
      auto hub = reg::open_http_hub(hub_url, o);
      // The signed index, verified again against the pinned root; a 304 reuses the cached copy.
      const reg::RepoIndex idx = reg::fetch_verified_index(*hub, cache, kRepo, reg::TrustOptions{});
      if (!cache.package_dir(idx.releases.at(0).variants.at(0).sha256)) throw std::runtime_error("package not cached");
      t_304.push_back(ms_since(t0));
      if (kernels_ok) {
        t0 = Clock::now();
        int g = run(get_cmd, kenv, work + "/get.txt");
        if (g != 0) throw std::runtime_error("warm kernels get failed: exit " + std::to_string(g));
        t_get_warm.push_back(ms_since(t0));
      }
      t0 = Clock::now();
      if (run(curl_304, {}) != 0) throw std::runtime_error("curl conditional GET failed");
      t_curl_304.push_back(ms_since(t0));
    }

    const double base = median(t_curl);
    auto row = [&](const char* name, const std::vector<double>& t, bool bytes) {
      if (t.empty()) return;
      double med = median(t);
      if (bytes)
        std::printf("  %-34s %9.1f ms  %8.1f MiB/s  %5.2fx baseline\n", name, med, mib / (med / 1000.0), med / base);
      else
        std::printf("  %-34s %9.2f ms\n", name, med);
    };
    std::printf("\ncold download of %.1f MiB over https (medians of %d runs)\n", mib, runs);
    row("kh open_hub + fetch_blob", t_kh, true);
    row("curl -o + sha256sum (baseline)", t_curl, true);
    row("curl -o alone", t_curl_only, true);
    row("curl -o + openssl dgst -sha256", t_curl_openssl, true);
    row("kernels get, empty cache", t_get, true);
    std::printf("  target: kh fetch_blob <= 1.20x baseline: %s\n", median(t_kh) <= 1.2 * base ? "met" : "NOT met");
    std::printf("\nrepeat with the package cached, metadata unchanged (medians of %zu runs)\n", t_304.size());
    row("kh conditional GET (304) + cache", t_304, false);
    {
      // What nginx answered for the index during the warm runs (both kh and the CLI).
      std::istringstream log(nginx.access_log());
      size_t n304 = 0, n200 = 0;
      for (std::string l; std::getline(log, l);) {
        if (l.find("/index.json ") == std::string::npos) continue;
        n304 += l.find(" 304 ") != std::string::npos;
        n200 += l.find(" 200 ") != std::string::npos;
      }
      std::printf("  (index requests in the whole run: %zu answered 304, %zu answered 200)\n", n304, n200);
    }
    row("kernels get, warm cache", t_get_warm, false);
    row("curl conditional GET (one process)", t_curl_304, false);
    if (!t_get_warm.empty())
      std::printf("  kernels get / curl process: %.2fx\n", median(t_get_warm) / median(t_curl_304));
    std::printf("  target: warm get <= 20 ms: kh 304 path %s", median(t_304) <= 20 ? "met" : "NOT met");
    if (!t_get_warm.empty()) std::printf(", kernels get %s", median(t_get_warm) <= 20 ? "met" : "NOT met");
    std::printf("\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_get_https: %s\n", e.what());
    rc = 1;
  }
  return rc;
}
