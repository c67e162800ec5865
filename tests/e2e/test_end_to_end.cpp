// The whole path on the CPU: pack, publish to a file:// hub, `kernels get`, kh_load_kernel,
// call rms_norm, compare; and every kind of bad input on that path, each refused with a
// clear error that leaves the cache as it was and the process running.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "kh/kh.h"
#include "kh/kh.hpp"
#include "kh/registry/sha256.hpp"
#include "workspace.hpp"

using kh::test::Workspace;
namespace fs = std::filesystem;

namespace {

constexpr const char* kSpec = "kernels-community/rms-norm@1";

struct Loaded {
  kh_status status = KH_OK;
  kh_kernel* kernel = nullptr;
  std::string error;
  ~Loaded() { kh_kernel_release(kernel); }
};

// kh_load_kernel against the workspace's hub and cache.
void load(const Workspace& ws, const char* spec, Loaded* out, uint32_t flags = 0) {
  const std::string hub = ws.hub_url(), cache = ws.cache.string();
  kh_load_options options{};
  options.struct_size = sizeof(options);
  options.flags = flags;
  options.hub = hub.c_str();
  options.cache_dir = cache.c_str();
  out->status = kh_load_kernel(spec, &options, &out->kernel);
  out->error = kh_last_error();
}

struct RmsNormCall {
  int64_t rows, hidden;
  std::vector<float> x, w, out;
  int64_t x_shape[2], w_shape[1];
  DLTensor tx{}, tw{}, tout{};
  RmsNormCall(int64_t rows_, int64_t hidden_) : rows(rows_), hidden(hidden_) {
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    x.resize(rows * hidden);
    w.resize(hidden);
    out.assign(rows * hidden, std::nanf(""));
    for (auto& v : x) v = dist(rng);
    for (auto& v : w) v = dist(rng);
    x_shape[0] = rows;
    x_shape[1] = hidden;
    w_shape[0] = hidden;
    tx = DLTensor{x.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, x_shape, nullptr, 0};
    tout = DLTensor{out.data(), {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, x_shape, nullptr, 0};
    tw = DLTensor{w.data(), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, w_shape, nullptr, 0};
  }
  std::vector<kh_value> args(double eps = 1e-6) {
    return {kh::arg(&tout), kh::arg(&tx), kh::arg(&tw), kh::arg(eps)};
  }
  double max_error(double eps = 1e-6) const {
    double worst = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (int64_t c = 0; c < hidden; ++c) ss += double(x[r * hidden + c]) * x[r * hidden + c];
      const double inv = 1.0 / std::sqrt(ss / hidden + eps);
      for (int64_t c = 0; c < hidden; ++c) {
        const double want = x[r * hidden + c] * inv * w[c];
        const double got = out[r * hidden + c];
        worst = std::isnan(got) ? INFINITY : std::max(worst, std::fabs(got - want));
      }
    }
    return worst;
  }
};

}  // namespace

TEST_CASE("publish, get, load and call the reference rms_norm") {
  Workspace ws("e2e-happy");
  ws.publish_reference();

  auto get = ws.kernels(std::string("get ") + kSpec + " --hub '" + ws.hub_url() + "' --json");
  REQUIRE_MESSAGE(get.exit_code == 0, get.output);
  // One JSON shape for any number of specs: {"packages": [...]}.
  REQUIRE(nlohmann::json::parse(get.output)["packages"].size() == 1);
  const auto got = nlohmann::json::parse(get.output)["packages"][0];
  CHECK(got["downloaded"] == true);
  CHECK(got["download_bytes"].get<uint64_t>() > 0);
  CHECK(got["repo"] == "kernels-community/rms-norm");
  CHECK(got["version"] == "1.0.0");
  CHECK(got["variant"] == "cpu-x86_64-abi1-x86_64-linux");
  const fs::path pkg_dir = got["path"].get<std::string>();
  CHECK(fs::exists(pkg_dir / ".kh-complete"));
  CHECK(fs::exists(got["library"].get<std::string>()));

  auto list = ws.kernels("list --json");
  REQUIRE_MESSAGE(list.exit_code == 0, list.output);
  CHECK(nlohmann::json::parse(list.output)["packages"].size() == 1);

  // Several specs in one get: all resolved first, then fetched together; one bad spec
  // fails the command before anything is fetched.
  auto two = ws.kernels(std::string("get ") + kSpec + " kernels-community/rms-norm@=1.0.0 --hub '" + ws.hub_url() +
                        "' --json");
  REQUIRE_MESSAGE(two.exit_code == 0, two.output);
  const auto both = nlohmann::json::parse(two.output)["packages"];
  REQUIRE(both.size() == 2);
  CHECK(both[0]["path"] == got["path"]);
  CHECK(both[1]["path"] == got["path"]);
  CHECK(both[0]["downloaded"] == false);  // in the cache since the first get
  auto again = ws.kernels(std::string("get ") + kSpec + " --hub '" + ws.hub_url() + "'");
  CHECK(again.output.find("already in the cache") != std::string::npos);
  auto bad = ws.kernels(std::string("get ") + kSpec + " kernels-community/no-such-kernel@1 --hub '" + ws.hub_url() + "'");
  CHECK(bad.exit_code != 0);
  CHECK(bad.output.find("no-such-kernel") != std::string::npos);

  auto info = ws.kernels("info kernels-community/rms-norm --hub '" + ws.hub_url() + "'");
  REQUIRE_MESSAGE(info.exit_code == 0, info.output);
  CHECK(info.output.find("rms_norm(Tensor(a!) out, Tensor x, Tensor weight, float eps) -> ()") != std::string::npos);

  Loaded k;
  load(ws, kSpec, &k);
  REQUIRE_MESSAGE(k.status == KH_OK, k.error);
  CHECK(std::string(kh_kernel_variant(k.kernel)) == "cpu-x86_64-abi1-x86_64-linux");
  CHECK(fs::path(kh_kernel_path(k.kernel)) == pkg_dir);  // served from the cache `get` filled

  const kh_op* op = nullptr;
  REQUIRE(kh_kernel_find_op(k.kernel, "rms_norm", &op) == KH_OK);
  RmsNormCall call(37, 129);
  auto args = call.args();
  REQUIRE_MESSAGE(kh_op_call(op, args.data(), uint32_t(args.size()), nullptr) == KH_OK, kh_last_error());
  CHECK(call.max_error() < 1e-5);

  SUBCASE("offline, with the hub gone, loads from the cache") {
    fs::remove_all(ws.hub);
    Loaded offline;
    load(ws, kSpec, &offline, KH_LOAD_OFFLINE);
    REQUIRE_MESSAGE(offline.status == KH_OK, offline.error);
    CHECK(std::string(kh_kernel_version(offline.kernel)) == "1.0.0");
    // KH_OFFLINE=1 in the environment does the same, and so does the CLI.
    ::setenv("KH_OFFLINE", "1", 1);
    Loaded by_env;
    load(ws, "kernels-community/rms-norm@^1.0.0", &by_env);
    CHECK_MESSAGE(by_env.status == KH_OK, by_env.error);
    auto cli = ws.kernels(std::string("get ") + kSpec + " --hub '" + ws.hub_url() + "'");
    CHECK_MESSAGE(cli.exit_code == 0, cli.output);
    Loaded missing;
    load(ws, "kernels-community/rms-norm@2", &missing);
    CHECK(missing.status == KH_ERROR_NOT_FOUND);
    ::unsetenv("KH_OFFLINE");
  }
  SUBCASE("by exact content digest") {
    Loaded by_digest;
    load(ws, ("kernels-community/rms-norm@sha256:" + got["sha256"].get<std::string>()).c_str(), &by_digest);
    REQUIRE_MESSAGE(by_digest.status == KH_OK, by_digest.error);
  }
  SUBCASE("a cached library modified after install is noticed and installed again (issue 16, item 8)") {
    // Replace the file rather than write into it: this process has the original mapped.
    const fs::path lib = got["library"].get<std::string>();
    const std::string original = kh::test::read_text(lib);
    fs::permissions(lib.parent_path(), fs::perms::owner_write, fs::perm_options::add);
    std::string bytes = original;
    bytes[bytes.size() / 2] ^= 0x01;
    kh::test::write_text(lib.string() + ".new", bytes);
    fs::rename(lib.string() + ".new", lib);
    // `kernels list` marks it; offline, a load says it is damaged rather than loading it.
    auto listed = ws.kernels("list");
    CHECK_MESSAGE(listed.output.find("DAMAGED") != std::string::npos, listed.output);
    Loaded offline;
    load(ws, kSpec, &offline, KH_LOAD_OFFLINE);
    CHECK(offline.status == KH_ERROR_OFFLINE);
    CHECK_MESSAGE(offline.error.find("damaged") != std::string::npos, offline.error);
    // Online, the load installs it again (from the cached archive) and succeeds.
    Loaded healed;
    load(ws, kSpec, &healed);
    REQUIRE_MESSAGE(healed.status == KH_OK, healed.error);
    CHECK(kh::test::read_text(lib) == original);
  }
}

TEST_CASE("the C++ wrapper loads, calls and throws with status and message") {
  Workspace ws("e2e-cpp");
  ws.publish_reference();
  const std::string hub = ws.hub_url(), cache = ws.cache.string();
  kh_load_options options{};
  options.struct_size = sizeof(options);
  options.hub = hub.c_str();
  options.cache_dir = cache.c_str();
  kh::Kernel k = kh::load_kernel(kSpec, &options);
  CHECK(k.ops().size() >= 1);
  RmsNormCall call(3, 8);
  k.op("rms_norm").call(call.args());
  CHECK(call.max_error() < 1e-5);
  try {
    k.op("no_such_op");
    FAIL("found an op that does not exist");
  } catch (const kh::Error& e) {
    CHECK(e.status() == KH_ERROR_NOT_FOUND);
    CHECK(std::string(e.what()).find("no_such_op") != std::string::npos);
  }
}

TEST_CASE("bad requests and bad hub content are refused, leaving the cache as it was") {
  Workspace ws("e2e-bad");
  ws.publish_reference();
  const size_t before = ws.trusted_cache_entries();
  Loaded k;
  auto expect_refused = [&](const char* spec, kh_status status, const std::string& named) {
    Loaded attempt;
    load(ws, spec, &attempt);
    CHECK(attempt.status == status);
    CHECK(attempt.kernel == nullptr);
    CHECK_MESSAGE(attempt.error.find(named) != std::string::npos, attempt.error);
    CHECK(ws.trusted_cache_entries() == before);
  };

  SUBCASE("unknown repo") { expect_refused("kernels-community/no-such-kernel@1", KH_ERROR_NOT_FOUND, "no-such-kernel"); }
  SUBCASE("unknown version") { expect_refused("kernels-community/rms-norm@7", KH_ERROR_NOT_FOUND, "7"); }
  SUBCASE("malformed spec") { expect_refused("Not A Spec", KH_ERROR_INVALID_ARGUMENT, "Not A Spec"); }
  SUBCASE("malformed index") {
    auto index = ws.read_index();
    index["version"] = "seven";
    ws.write_index(index);
    expect_refused(kSpec, KH_ERROR_BAD_METADATA, "version");
  }
  SUBCASE("index of an unknown schema") {
    auto index = ws.read_index();
    index["schema"] = 99;
    ws.write_index(index);
    expect_refused(kSpec, KH_ERROR_BAD_METADATA, "schema");
  }
  SUBCASE("an index changed without being signed again") {
    auto index = ws.read_index();
    index["releases"]["1.0.0"]["yanked"] = true;
    kh::test::write_text(ws.index_path(), index.dump(2));
    expect_refused(kSpec, KH_ERROR_SIGNATURE, "signature");
  }
  SUBCASE("a hub whose root of trust was never pinned") {
    const fs::path other_cache = ws.root / "unpinned-cache";
    fs::create_directories(other_cache);
    const std::string hub = ws.hub_url(), cache = other_cache.string();
    kh_load_options options{};
    options.struct_size = sizeof(options);
    options.hub = hub.c_str();
    options.cache_dir = cache.c_str();
    kh_kernel* unpinned = nullptr;
    CHECK(kh_load_kernel(kSpec, &options, &unpinned) == KH_ERROR_SIGNATURE);
    CHECK(std::string(kh_last_error()).find("kernels trust") != std::string::npos);
    CHECK(unpinned == nullptr);
  }
  SUBCASE("a blob with one byte flipped") {
    auto index = ws.read_index();
    const std::string sha = Workspace::reference_variant(index)["sha256"];
    std::string bytes = kh::test::read_text(ws.blob_path(sha));
    bytes[bytes.size() / 2] ^= 0x20;
    kh::test::write_text(ws.blob_path(sha), bytes);
    expect_refused(kSpec, KH_ERROR_VERIFICATION, sha);
  }
  SUBCASE("a blob larger than the index says") {
    auto index = ws.read_index();
    const std::string sha = Workspace::reference_variant(index)["sha256"];
    kh::test::write_text(ws.blob_path(sha), kh::test::read_text(ws.blob_path(sha)) + "extra");
    expect_refused(kSpec, KH_ERROR_VERIFICATION, sha);
  }
  SUBCASE("a blob the hub lacks") {
    auto index = ws.read_index();
    fs::remove(ws.blob_path(Workspace::reference_variant(index)["sha256"]));
    expect_refused(kSpec, KH_ERROR_NOT_FOUND, "rms-norm");
  }
  SUBCASE("a truncated archive, correctly hashed in the index") {
    auto index = ws.read_index();
    auto& variant = Workspace::reference_variant(index);
    const std::string old_sha = variant["sha256"];
    std::string bytes = kh::test::read_text(ws.blob_path(old_sha));
    bytes.resize(bytes.size() / 2);
    const std::string sha = kh::registry::sha256_hex(bytes);
    kh::test::write_text(ws.blob_path(sha), bytes);
    variant["sha256"] = sha;
    variant["size"] = bytes.size();
    ws.write_index(index);
    expect_refused(kSpec, KH_ERROR_BAD_ARCHIVE, sha);
  }
}

TEST_CASE("kernel libraries that are not what they claim are refused") {
  kh_kernel* k = nullptr;
  CHECK(kh_load_kernel_library(KH_FIXTURE_WRONG_ABI, &k) == KH_ERROR_ABI_MISMATCH);
  CHECK(k == nullptr);
  CHECK(std::string(kh_last_error()).find("ABI") != std::string::npos);
  CHECK(kh_load_kernel_library(KH_FIXTURE_NEWER_MINOR, &k) == KH_ERROR_ABI_MISMATCH);
  CHECK(kh_load_kernel_library(KH_FIXTURE_NO_ENTRY, &k) == KH_ERROR_LOAD_FAILED);
  CHECK(std::string(kh_last_error()).find("kh_kernel_negotiate") != std::string::npos);
  CHECK(kh_load_kernel_library(KH_FIXTURE_NULL_MODULE, &k) == KH_ERROR_LOAD_FAILED);
  CHECK(kh_load_kernel_library("/nonexistent/libnothing.so", &k) == KH_ERROR_NOT_FOUND);
  CHECK(kh_load_kernel_library(nullptr, &k) == KH_ERROR_INVALID_ARGUMENT);
  CHECK(kh_load_kernel(nullptr, nullptr, &k) == KH_ERROR_INVALID_ARGUMENT);
  CHECK(kh_load_kernel("a/b", nullptr, nullptr) == KH_ERROR_INVALID_ARGUMENT);
  kh_kernel_release(nullptr);  // accepted, does nothing
}

TEST_CASE("op calls with wrong arguments are refused before the kernel runs") {
  kh_kernel* k = nullptr;
  REQUIRE_MESSAGE(kh_load_kernel_library(KH_RMS_NORM_LIB, &k) == KH_OK, kh_last_error());
  const kh_op* op = nullptr;
  REQUIRE(kh_kernel_find_op(k, "rms_norm", &op) == KH_OK);
  RmsNormCall call(4, 16);
  auto args = call.args();
  auto expect_invalid = [&](const std::string& named) {
    CHECK(kh_op_call(op, args.data(), uint32_t(args.size()), nullptr) == KH_ERROR_INVALID_ARGUMENT);
    CHECK_MESSAGE(std::string(kh_last_error()).find(named) != std::string::npos, kh_last_error());
    for (float v : call.out) REQUIRE(std::isnan(v));  // the kernel never ran
  };
  SUBCASE("wrong dtype") {
    call.tx.dtype = {kDLInt, 32, 1};
    expect_invalid("'x'");
  }
  SUBCASE("wrong rank") {
    call.tw.ndim = 2;
    int64_t shape2[2] = {1, 16};
    call.tw.shape = shape2;
    expect_invalid("'weight'");
  }
  SUBCASE("wrong device") {
    call.tout.device = {kDLCUDA, 0};
    expect_invalid("'out'");
  }
  SUBCASE("wrong argument count") {
    args.pop_back();  // eps has no default
    expect_invalid("rms_norm: argument 3 'eps': left out, and it has no default; pass it (3 of 4 arguments given");
    args.resize(5, kh_value{});
    expect_invalid("expected 4 arguments, got 5");
  }
  SUBCASE("mismatched shapes (checked by the op itself)") {
    call.w_shape[0] = 15;
    expect_invalid("argument 2 'weight'");
  }
  kh_kernel_release(k);
}

TEST_CASE("a lockfile pins the version and the bytes of every build") {
  Workspace ws("e2e-lock");
  ws.publish_reference();
  const std::string lockfile = (ws.root / "kernels.lock").string();
  auto lock = ws.kernels(std::string("lock ") + kSpec + " --hub '" + ws.hub_url() + "' --lockfile '" + lockfile + "'");
  REQUIRE_MESSAGE(lock.exit_code == 0, lock.output);
  const auto pinned = nlohmann::json::parse(kh::test::read_text(lockfile));
  auto index = ws.read_index();
  const std::string sha = Workspace::reference_variant(index)["sha256"];
  CHECK(pinned["packages"]["kernels-community/rms-norm"]["version"] == "1.0.0");
  CHECK(pinned["packages"]["kernels-community/rms-norm"]["variants"]["cpu-x86_64-abi1-x86_64-linux"] == sha);

  auto get = ws.kernels(std::string("get ") + kSpec + " --hub '" + ws.hub_url() + "' --locked --lockfile '" + lockfile + "'");
  REQUIRE_MESSAGE(get.exit_code == 0, get.output);

  const std::string hub = ws.hub_url(), cache = ws.cache.string();
  kh_load_options options{};
  options.struct_size = sizeof(options);
  options.cache_dir = cache.c_str();
  options.lockfile = lockfile.c_str();
  SUBCASE("a host with the lockfile needs no hub once the pinned build is cached") {
    fs::remove_all(ws.hub);
    kh_kernel* k = nullptr;
    REQUIRE_MESSAGE(kh_load_kernel(kSpec, &options, &k) == KH_OK, kh_last_error());
    CHECK(std::string(kh_kernel_version(k)) == "1.0.0");
    kh_kernel_release(k);
  }
  SUBCASE("a request the locked version does not satisfy is refused") {
    kh_kernel* k = nullptr;
    CHECK(kh_load_kernel("kernels-community/rms-norm@2", &options, &k) == KH_ERROR_LOCKED);
    CHECK(std::string(kh_last_error()).find("1.0.0") != std::string::npos);
    CHECK(kh_load_kernel("kernels-community/layer-norm@1", &options, &k) == KH_ERROR_LOCKED);
    CHECK(std::string(kh_last_error()).find("not pinned") != std::string::npos);
  }
  SUBCASE("the hub serving other bytes for a pinned build is refused") {
    // Simulate a republished build: new bytes under the same version and variant.
    std::string bytes = kh::test::read_text(ws.blob_path(sha));
    bytes += std::string(16, '\0');
    const std::string other = kh::registry::sha256_hex(bytes);
    kh::test::write_text(ws.blob_path(other), bytes);
    Workspace::reference_variant(index)["sha256"] = other;
    Workspace::reference_variant(index)["size"] = bytes.size();
    ws.write_index(index);
    REQUIRE(ws.kernels("cache clean").exit_code == 0);  // force a fetch; the pinned root stays
    options.hub = hub.c_str();
    kh_kernel* k = nullptr;
    CHECK(kh_load_kernel(kSpec, &options, &k) == KH_ERROR_LOCKED);
    CHECK(std::string(kh_last_error()).find("other bytes") != std::string::npos);
    CHECK(k == nullptr);
    CHECK(ws.trusted_cache_entries() == 0);
    auto refused = ws.kernels(std::string("get ") + kSpec + " --hub '" + hub + "' --locked --lockfile '" + lockfile + "'");
    CHECK(refused.exit_code != 0);
    CHECK(refused.output.find("other bytes") != std::string::npos);
  }
}

TEST_CASE("kernels cache verify, gc and clean") {
  Workspace ws("e2e-cache");
  ws.publish_reference();
  auto get = ws.kernels(std::string("get ") + kSpec + " --hub '" + ws.hub_url() + "' --json");
  REQUIRE_MESSAGE(get.exit_code == 0, get.output);
  const auto got = nlohmann::json::parse(get.output)["packages"][0];

  auto verify = ws.kernels("cache verify");
  CHECK_MESSAGE(verify.exit_code == 0, verify.output);
  CHECK(verify.output.find("1 package checked, 0 damaged") != std::string::npos);

  SUBCASE("a damaged package is reported, then removed on request") {
    const fs::path lib = got["library"].get<std::string>();
    fs::permissions(lib.parent_path(), fs::perms::owner_write, fs::perm_options::add);
    kh::test::write_text(lib.string() + ".new", kh::test::read_text(lib) + "x");
    fs::rename(lib.string() + ".new", lib);
    auto damaged = ws.kernels("cache verify");
    CHECK(damaged.exit_code != 0);
    CHECK(damaged.output.find("DAMAGED") != std::string::npos);
    auto removed = ws.kernels("cache verify --remove-damaged");
    CHECK_MESSAGE(removed.exit_code == 0, removed.output);
    CHECK(nlohmann::json::parse(ws.kernels("list --json").output)["packages"].empty());
  }
  SUBCASE("gc removes stale work files and incomplete trees, keeps the rest") {
    const fs::path stale = ws.cache / "tmp" / "stale-download";
    kh::test::write_text(stale, "partial");
    fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::hours(3));
    kh::test::write_text(ws.cache / "tmp" / "fresh-download", "in progress elsewhere");
    const fs::path incomplete = ws.cache / "pkgs" / std::string(64, 'a');
    kh::test::write_text(incomplete / "lib" / "x.so", "never marked complete");
    auto gc = ws.kernels("cache gc");
    CHECK_MESSAGE(gc.exit_code == 0, gc.output);
    CHECK_FALSE(fs::exists(stale));
    CHECK(fs::exists(ws.cache / "tmp" / "fresh-download"));
    CHECK_FALSE(fs::exists(incomplete));
    CHECK(nlohmann::json::parse(ws.kernels("list --json").output)["packages"].size() == 1);
  }
  SUBCASE("clean empties the cache") {
    auto clean = ws.kernels("cache clean");
    CHECK_MESSAGE(clean.exit_code == 0, clean.output);
    CHECK(nlohmann::json::parse(ws.kernels("list --json").output)["packages"].empty());
    CHECK(ws.trusted_cache_entries() == 0);
  }
}

TEST_CASE("one process loads several packages, and the same one twice") {
  // glibc knows loaded objects by name; each library must keep its own /proc/self/fd name.
  kh_kernel *rms = nullptr, *layer = nullptr, *again = nullptr, *after = nullptr;
  REQUIRE_MESSAGE(kh_load_kernel_library(KH_RMS_NORM_LIB, &rms) == KH_OK, kh_last_error());
  REQUIRE_MESSAGE(kh_load_kernel_library(KH_LAYER_NORM_LIB, &layer) == KH_OK, kh_last_error());
  CHECK(std::string(kh_kernel_name(rms)) == "kernels-community/rms-norm");
  CHECK(std::string(kh_kernel_name(layer)) == "kernels-community/layer-norm");
  REQUIRE_MESSAGE(kh_load_kernel_library(KH_RMS_NORM_LIB, &again) == KH_OK, kh_last_error());
  CHECK(std::string(kh_kernel_name(again)) == "kernels-community/rms-norm");
  // Loading rms-norm again attached a second /proc/self/fd name to it; once that number is
  // free and reused, the name must not lead the next load to rms-norm.
  kh_kernel_release(again);
  kh_kernel* layer_again = nullptr;
  REQUIRE_MESSAGE(kh_load_kernel_library(KH_LAYER_NORM_LIB, &layer_again) == KH_OK, kh_last_error());
  CHECK(std::string(kh_kernel_name(layer_again)) == "kernels-community/layer-norm");
  kh_kernel_release(layer_again);
  kh_kernel_release(rms);
  // The descriptor numbers freed above are reused by the next load; it must still be its own.
  REQUIRE_MESSAGE(kh_load_kernel_library(KH_ATTENTION_LIB, &after) == KH_OK, kh_last_error());
  CHECK(std::string(kh_kernel_name(after)) == "kernels-community/attention");
  CHECK(std::string(kh_kernel_name(layer)) == "kernels-community/layer-norm");
  kh_kernel_release(after);
  kh_kernel_release(layer);
}

TEST_CASE("the first hour: wrong names, wrong hubs and the trust step say what to do") {
  Workspace ws("e2e-first-hour");
  ws.publish_reference();
  const std::string hub = " --hub '" + ws.hub_url() + "'";

  SUBCASE("version and mistyped verbs") {
    auto version = ws.kernels("--version");
    CHECK(version.exit_code == 0);
    CHECK(version.output.find("kernels (kh) ") != std::string::npos);
    auto typo = ws.kernels("gett " + std::string(kSpec));
    CHECK(typo.exit_code != 0);
    CHECK(typo.output.find("unknown command 'gett'; did you mean 'get'?") != std::string::npos);
  }
  SUBCASE("common options before or after the verb") {
    auto before = ws.kernels("--json" + hub + " get " + std::string(kSpec));
    REQUIRE_MESSAGE(before.exit_code == 0, before.output);
    CHECK(nlohmann::json::parse(before.output)["packages"][0]["repo"] == "kernels-community/rms-norm");
    auto joined = ws.kernels("--hub='" + ws.hub_url() + "' info kernels-community/rms-norm");
    CHECK_MESSAGE(joined.exit_code == 0, joined.output);
    // A sub-verb passes its verb's options on: `cache verify --cache DIR`, either side.
    const std::string cache = " --cache '" + ws.cache.string() + "'";
    auto after = kh::test::run_command("'" KH_KERNELS_EXE "' cache verify" + cache);
    CHECK_MESSAGE(after.exit_code == 0, after.output);
    CHECK(after.output.find("1 package checked") != std::string::npos);
    auto first = kh::test::run_command("'" KH_KERNELS_EXE "'" + cache + " cache verify");
    CHECK_MESSAGE(first.exit_code == 0, first.output);
  }
  SUBCASE("a mistyped package: did you mean, and search") {
    auto typo = ws.kernels("get kernels-community/rms-nrom@1" + hub);
    CHECK(typo.exit_code != 0);
    CHECK(typo.output.find("did you mean kernels-community/rms-norm?") != std::string::npos);
    auto search = ws.kernels("search norm" + hub);
    CHECK(search.exit_code == 0);
    CHECK(search.output.find("kernels-community/rms-norm  1.0.0") != std::string::npos);
    auto colon = ws.kernels("get kernels-community/rms-norm:1" + hub);
    CHECK(colon.output.find("did you mean 'kernels-community/rms-norm@1'?") != std::string::npos);
    auto range = ws.kernels("get 'kernels-community/rms-norm@>=1.0,<2'" + hub);
    CHECK_MESSAGE(range.exit_code == 0, range.output);
  }
  SUBCASE("no hub at the URL: said so, for get and for trust") {
    const std::string nowhere = " --hub 'file://" + (ws.root / "no-hub-here").string() + "'";
    auto get = ws.kernels("get " + std::string(kSpec) + nowhere);
    CHECK(get.exit_code != 0);
    CHECK(get.output.find("no kh hub at file://") != std::string::npos);
    CHECK(get.output.find("root of trust") == std::string::npos);
    auto trust = ws.kernels("trust '" + (ws.hub / "root/1.root.json").string() + "'" + nowhere);
    CHECK(trust.exit_code != 0);
    CHECK(trust.output.find("no kh hub at file://") != std::string::npos);
    auto ftp = ws.kernels("get " + std::string(kSpec) + " --hub ftp://example.org/hub");
    CHECK(ftp.output.find("kh reads file:///absolute/path, http://host/path, https://host/path and oci://registry/namespace hubs") !=
          std::string::npos);
  }
  SUBCASE("an unpinned hub: the exact command to run, which then works") {
    const std::string other_cache = (ws.root / "fresh-cache").string();
    auto unpinned = kh::test::run_command("KH_CACHE='" + other_cache + "' '" KH_KERNELS_EXE "' get " + kSpec + hub);
    CHECK(unpinned.exit_code != 0);
    const std::string command = "kernels trust " + (ws.hub / "root/1.root.json").string() + " --hub " + ws.hub_url();
    REQUIRE_MESSAGE(unpinned.output.find(command) != std::string::npos, unpinned.output);
    auto pin = kh::test::run_command("KH_CACHE='" + other_cache + "' '" KH_KERNELS_EXE "'" + command.substr(7));
    CHECK_MESSAGE(pin.exit_code == 0, pin.output);
    auto get = kh::test::run_command("KH_CACHE='" + other_cache + "' '" KH_KERNELS_EXE "' get " + kSpec + hub);
    CHECK_MESSAGE(get.exit_code == 0, get.output);
    CHECK(get.output.find("downloaded (") != std::string::npos);
  }
  SUBCASE("retries are visible on a terminal (KH_PROGRESS=1 stands in for one)") {
    auto down = kh::test::run_command("KH_PROGRESS=1 KH_CACHE='" + ws.cache.string() + "' '" KH_KERNELS_EXE "' get " +
                                      kSpec + " --hub http://127.0.0.1:1/hub");
    CHECK(down.exit_code != 0);
    CHECK_MESSAGE(down.output.find("kh: http://127.0.0.1:1: ") != std::string::npos, down.output);
    CHECK(down.output.find("attempt 1 of ") != std::string::npos);
    CHECK(down.output.find("failed, next try in ") != std::string::npos);
    CHECK(down.output.find("no kh hub at http://127.0.0.1:1/hub") != std::string::npos);
  }
  SUBCASE("a read-only cache still serves what it holds, and says how to move the cache") {
    REQUIRE(ws.kernels("get " + std::string(kSpec) + hub).exit_code == 0);
    // A private mount namespace makes the cache read-only for this one command (needs root,
    // as CI runs; skipped where unshare is not allowed).
    const std::string c = ws.cache.string();
    auto ro = kh::test::run_command("unshare -m sh -c \"mount --bind '" + c + "' '" + c + "' && mount -o remount,bind,ro '" +
                                    c + "' '" + c + "' && touch '" + c + "/probe' 2>/dev/null; [ ! -e '" + c +
                                    "/probe' ] || exit 77; KH_CACHE='" + c + "' '" KH_KERNELS_EXE "' get " + kSpec + hub +
                                    "\"");
    if (ro.exit_code != 77 && ro.output.find("unshare:") == std::string::npos) {
      CHECK_MESSAGE(ro.exit_code == 0, ro.output);
      CHECK(ro.output.find("already in the cache") != std::string::npos);
      CHECK(ro.output.find("Read-only file system") != std::string::npos);
      CHECK(ro.output.find("set KH_CACHE to a writable directory") != std::string::npos);
    } else {
      MESSAGE("read-only cache check skipped: " << ro.output);
    }
  }
  SUBCASE("KH_ALLOW_UNSIGNED warns every time it is relied on") {
    const std::string other_cache = (ws.root / "unsigned-cache").string();
    for (int i = 0; i < 2; ++i) {
      auto get = kh::test::run_command("KH_ALLOW_UNSIGNED=1 KH_CACHE='" + other_cache + "' '" KH_KERNELS_EXE "' get " + kSpec + hub);
      CHECK_MESSAGE(get.exit_code == 0, get.output);
      CHECK(get.output.find("warning: KH_ALLOW_UNSIGNED=1") != std::string::npos);
    }
  }
}

TEST_CASE("kernels hub init makes a signed hub that publish and get work against") {
  Workspace ws("e2e-hub-init");
  const fs::path keys = ws.root / "keys";
  // A folder, not a URL: the verb names the file hub it makes.
  auto init = ws.kernels("hub init '" + ws.hub.string() + "' --keys '" + keys.string() + "' --pin");
  REQUIRE_MESSAGE(init.exit_code == 0, init.output);
  CHECK(init.output.find("made key") != std::string::npos);
  CHECK(init.output.find("--hub " + ws.hub_url() + " ") != std::string::npos);
  CHECK(fs::exists(keys / "kh.pub"));
  CHECK((fs::status(keys / "kh.key").permissions() & (fs::perms::group_all | fs::perms::others_all)) == fs::perms::none);
  const auto root = nlohmann::json::parse(kh::test::read_text(ws.hub / "root" / "1.root.json"));
  CHECK(root["signed"]["version"] == 1);

  // --pin trusted it here: the pinned root is the one the hub serves, and a signed publish
  // followed by get verifies with no development opt-in.
  auto show = ws.kernels("trust show --hub '" + ws.hub_url() + "'");
  REQUIRE_MESSAGE(show.exit_code == 0, show.output);
  CHECK(show.output.find("root version 1") != std::string::npos);
  auto pack = ws.kernels("pack '" KH_RMS_NORM_LIB "' --package '" KH_TEST_SOURCE_DIR
                         "/kernels-src/rms-norm/kernel.json' --out '" + ws.dist.string() + "'");
  REQUIRE_MESSAGE(pack.exit_code == 0, pack.output);
  auto publish = ws.kernels("publish '" + ws.dist.string() + "' --hub '" + ws.hub_url() + "' --key '" +
                            (keys / "kh.key").string() + "'");
  REQUIRE_MESSAGE(publish.exit_code == 0, publish.output);
  CHECK(fs::exists(ws.index_path().string() + ".minisig"));
  auto get = kh::test::run_command("env -u KH_ALLOW_UNSIGNED KH_CACHE='" + ws.cache.string() + "' '" KH_KERNELS_EXE
                                   "' get " + kSpec + " --hub '" + ws.hub_url() + "' --json");
  REQUIRE_MESSAGE(get.exit_code == 0, get.output);
  CHECK(fs::exists(nlohmann::json::parse(get.output)["packages"][0]["library"].get<std::string>()));

  // A hub that has a root is never given a second first root; the keys stay as they were.
  const std::string pub_before = kh::test::read_text(keys / "kh.pub");
  auto again = ws.kernels("hub init '" + ws.hub.string() + "' --keys '" + keys.string() + "'");
  CHECK(again.exit_code != 0);
  CHECK(again.output.find("using key") != std::string::npos);
  CHECK(again.output.find("root") != std::string::npos);
  CHECK(kh::test::read_text(keys / "kh.pub") == pub_before);

  // Present keys are reused: a second hub made with them trusts the same key.
  const fs::path hub2 = ws.root / "hub2";
  auto second = ws.kernels("hub init '" + hub2.string() + "' --keys '" + keys.string() + "'");
  REQUIRE_MESSAGE(second.exit_code == 0, second.output);
  const auto root2 = nlohmann::json::parse(kh::test::read_text(hub2 / "root" / "1.root.json"));
  CHECK(root2["signed"]["keys"] == root["signed"]["keys"]);

  auto no_keys = ws.kernels("hub init '" + hub2.string() + "'");
  CHECK(no_keys.exit_code != 0);
  CHECK(no_keys.output.find("--keys") != std::string::npos);
}
