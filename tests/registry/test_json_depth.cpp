// Deeply nested JSON from outside (issue 16, item 1): every parser of outside JSON refuses
// nesting past kMaxJsonDepth before it builds a tree, at depths from 100 to 10^6, on the
// main thread and on a thread with a 256 KiB stack; JSON at the limit still parses there
// (canonical bytes included). End to end: an unsigned root/2.root.json nested 70,000 deep
// on a hub makes fetch_verified_index fail cleanly instead of crashing the process.
#include <pthread.h>

#include <doctest/doctest.h>

#include <ctime>
#include <functional>
#include <nlohmann/json.hpp>

#include "kh/registry/cache.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/json_limits.hpp"
#include "kh/registry/lockfile.hpp"
#include "kh/registry/package_manifest.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/trust.hpp"
#include "test_util.hpp"

using namespace kh::registry;
using kh_test::expect_status;
using kh_test::TempDir;
using json = nlohmann::json;

namespace {

const size_t kDepths[] = {100, 1000, 10000, 100000, 1000000};
constexpr size_t kSmallStack = 256 * 1024;

// `levels` arrays, one inside the other, around 0.
std::string nested(size_t levels) { return std::string(levels, '[') + "0" + std::string(levels, ']'); }

// What f threw, as "status: message" ("" when it returned).
struct Outcome {
  bool threw = false;
  kh_status status = KH_OK;
  std::string message;
};

Outcome run_here(const std::function<void()>& f) {
  Outcome o;
  try {
    f();
  } catch (const kh::StatusError& e) {
    o.threw = true;
    o.status = e.status();
    o.message = e.what();
  } catch (const std::exception& e) {
    o.threw = true;
    o.status = KH_ERROR_INTERNAL;
    o.message = std::string("not a StatusError: ") + e.what();
  }
  return o;
}

// Runs f on a thread whose whole stack is 256 KiB, as a host's worker thread may have.
Outcome run_on_small_stack(const std::function<void()>& f) {
  struct Job {
    const std::function<void()>* f;
    Outcome out;
  } job{&f, {}};
  pthread_attr_t attr;
  REQUIRE(pthread_attr_init(&attr) == 0);
  REQUIRE(pthread_attr_setstacksize(&attr, kSmallStack) == 0);
  pthread_t t;
  auto body = [](void* p) -> void* {
    auto* j = static_cast<Job*>(p);
    j->out = run_here(*j->f);
    return nullptr;
  };
  REQUIRE(pthread_create(&t, &attr, body, &job) == 0);
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
  return job.out;
}

// Refused for its nesting (or, where a size cap comes first, for its size: root files and
// signature lists are capped at 256 KiB, less than 10^6 levels take).
void expect_refused(const Outcome& o, kh_status status) {
  CHECK_MESSAGE(o.threw, "a deeply nested document was accepted");
  CHECK_MESSAGE(o.status == status, o.message);
  CHECK_MESSAGE((o.message.find("nested more than " + std::to_string(kMaxJsonDepth) + " deep") != std::string::npos ||
                 o.message.find("larger than " + std::to_string(kMaxRootBytes) + " bytes") != std::string::npos),
                o.message);
}

// A well-formed root (valid keys and roles, so parsing gets as far as the canonical
// bytes) whose "signed" object also holds "x": field. Spliced as text: a tree this deep
// must not be built in the test either.
std::string root_with(const std::string& field, uint64_t version = 2) {
  static const minisign::SecretKey key = minisign::generate_key();
  RootSpec s;
  s.version = version;
  s.root_keys = {key.public_key()};
  s.index_keys = {key.public_key()};
  s.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 86400;
  std::string text = make_root(s, {key});
  const std::string open = "\"signed\": {";
  const size_t at = text.find(open);
  REQUIRE(at != std::string::npos);
  return text.insert(at + open.size(), "\"x\":" + field + ",");
}

// Every parser of outside JSON, fed `field` as the value of one of its members.
struct Parser {
  const char* name;
  kh_status status;
  std::function<void(const std::string& field)> parse;
};

std::vector<Parser> parsers() {
  return {
      {"root", KH_ERROR_BAD_METADATA,
       [](const std::string& f) { parse_root(root_with(f), "root/2.root.json"); }},
      {"index.json.sigs", KH_ERROR_SIGNATURE,
       [](const std::string& f) { parse_signature_list("{\"signatures\":" + f + "}", "index.json.sigs"); }},
      {"index", KH_ERROR_BAD_METADATA,
       [](const std::string& f) { parse_repo_index("{\"schema\":1,\"repo\":\"a/b\",\"x\":" + f + "}", "index.json"); }},
      {"manifest", KH_ERROR_BAD_METADATA,
       [](const std::string& f) { parse_package_manifest("{\"schema\":1,\"x\":" + f + "}", "kh-package.json"); }},
      {"lockfile", KH_ERROR_BAD_METADATA,
       [](const std::string& f) { parse_lockfile("{\"schema\":1,\"packages\":{\"a/b\":" + f + "}}", "kernels.lock"); }},
  };
}

}  // namespace

TEST_CASE("the depth check counts brackets outside strings only") {
  check_json_depth(nested(kMaxJsonDepth), "t");
  expect_status([] { check_json_depth(nested(kMaxJsonDepth + 1), "t"); }, KH_ERROR_BAD_METADATA);
  // Brackets inside strings, escaped quotes included, are text.
  const std::string in_string = "[\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"]";
  check_json_depth(in_string, "t");
  // Mixed arrays and objects count alike.
  std::string mixed;
  for (size_t i = 0; i < 40; ++i) mixed += "{\"a\":[";
  expect_status([&] { check_json_depth(mixed, "t"); }, KH_ERROR_BAD_METADATA);
  // The status is the caller's.
  expect_status([] { check_json_depth(nested(100), "t", KH_ERROR_IO); }, KH_ERROR_IO);
}

TEST_CASE("every parser of outside JSON refuses nesting from 100 to 10^6 deep, on any stack") {
  for (const Parser& p : parsers()) {
    for (size_t depth : kDepths) {
      CAPTURE(p.name);
      CAPTURE(depth);
      const std::string field = nested(depth);
      expect_refused(run_here([&] { p.parse(field); }), p.status);
      expect_refused(run_on_small_stack([&] { p.parse(field); }), p.status);
    }
  }
}

TEST_CASE("a root nested to the limit parses on a 256 KiB stack, canonical bytes included") {
  const auto key = minisign::generate_key();
  RootSpec s;
  s.root_keys = {key.public_key()};
  s.index_keys = {key.public_key()};
  s.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 86400;
  json doc = json::parse(make_root(s, {key}));
  // The document is depth 1, "signed" depth 2: the field adds kMaxJsonDepth - 2 levels.
  doc["signed"]["x"] = json::parse(nested(kMaxJsonDepth - 2));
  const std::string at_limit = doc.dump();
  Outcome o = run_on_small_stack([&] {
    RootMetadata root = parse_root(at_limit, "root/1.root.json");
    if (root.signed_bytes != doc["signed"].dump()) throw std::runtime_error("canonical bytes differ");
  });
  CHECK_MESSAGE(!o.threw, o.message);

  doc["signed"]["x"] = json::parse(nested(kMaxJsonDepth - 1));
  const std::string over = doc.dump();
  expect_refused(run_on_small_stack([&] { parse_root(over, "root/1.root.json"); }), KH_ERROR_BAD_METADATA);
}

TEST_CASE("a deeply nested unsigned root on a hub fails the fetch cleanly (it crashed the client)") {
  TempDir d;
  const std::string hub_dir = d / "hub";
  auto hub = open_hub("file://" + hub_dir);
  Cache cache(d / "cache");
  const auto key = minisign::generate_key();
  RootSpec s;
  s.root_keys = {key.public_key()};
  s.index_keys = {key.public_key()};
  s.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 86400;
  write_next_root_to_file_hub(hub_dir, s, {key});
  TrustStore(cache, hub->id()).pin_root(kh_test::read_text(hub_dir + "/root/1.root.json"), "root/1.root.json");
  // ~140 KB: the attack the review used ("signed" holding a field 70,000 arrays deep).
  kh_test::write_text(hub_dir + "/root/2.root.json", root_with(nested(70000)));
  TrustOptions o;
  for (auto* runner : {&run_here, &run_on_small_stack}) {
    Outcome out = (*runner)([&] { fetch_verified_index(*hub, cache, "a/b", o); });
    expect_refused(out, KH_ERROR_BAD_METADATA);
    CHECK_MESSAGE(out.message.find("root/2.root.json") != std::string::npos, out.message);
  }
}

TEST_CASE("a deeply nested rollback state file is reported as damaged") {
  TempDir d;
  Cache cache(d / "cache");
  TrustStore store(cache, "file-0123456789abcdef");
  const std::string path = store.dir() + "/" + repo_index_path("a/b") + ".state.json";
  make_directories(path.substr(0, path.rfind('/')));
  kh_test::write_text(path, "{\"highest_version\":" + nested(20000) + "}");
  for (auto* runner : {&run_here, &run_on_small_stack})
    expect_refused((*runner)([&] { (void)store.highest_index_version("a/b"); }), KH_ERROR_IO);
}
