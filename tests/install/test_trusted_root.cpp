// A host that ships its hub's root of trust (issue 39, item 1), and one that ships nothing
// but a cache (item 3): kh_load_options.trusted_root and KH_TRUSTED_ROOT pin a fresh cache
// to exactly that root on first use (no `kernels trust`), accept a cache already pinned to it
// (however its file is laid out, and after the chain has moved on), and refuse, naming both,
// a cache pinned to another root; kh_trust_root pins without fetching; a cached package
// loads with no hub configured, and one not cached says how to name a hub.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "../registry/test_util.hpp"
#include "../servers/server_util.hpp"
#include "kh/kh.h"
#include "kh/registry/cache.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "../registry/signed_hub.hpp"

using kh_test::ScopedEnv;

namespace {

const char* kSpec = "test-org/host-load@1";

struct Host {
  kh_test::SignedHub hub;
  std::string cache = hub.dir + "/cache";
  std::string root = hub.root_text();

  std::string url = hub.url();
  Host() { hub.publish(KH_FIXTURE_HOST_LOAD_LIB, "test-org/host-load"); }

  // For this hub and cache, with trusted_root's bytes (none: NULL); the strings must outlive it.
  kh_load_options options(const std::string* trusted_root) const {
    kh_load_options o{};
    o.struct_size = sizeof o;
    o.hub = url.c_str();
    o.cache_dir = cache.c_str();
    if (trusted_root != nullptr) {
      o.trusted_root = trusted_root->data();
      o.trusted_root_size = trusted_root->size();
    }
    return o;
  }
  kh_status load(const std::string* trusted_root) const {
    const kh_load_options o = options(trusted_root);
    kh_kernel* k = nullptr;
    const kh_status s = kh_load_kernel(kSpec, &o, &k);
    kh_kernel_release(k);
    return s;
  }
  std::string pinned_file() const {
    return cache + "/hubs/" + kh::registry::open_hub(hub.url())->id() + "/trust/root/1.root.json";
  }
};

// Another hub's root: another key, so another root of trust.
std::string stranger_root() {
  kh_test::SignedHub other;
  return other.root_text();
}

}  // namespace

TEST_CASE("a fresh cache and the root in kh_load_options load a package with no `kernels trust`") {
  ScopedEnv env({{"KH_METADATA_TTL", "0"}, {"KH_PROGRESS", "0"}});
  Host h;
  CHECK(h.load(nullptr) == KH_ERROR_SIGNATURE);  // without it: no pin, as before
  CHECK(std::string(kh_last_error()).find("has no pinned root of trust") != std::string::npos);
  REQUIRE_MESSAGE(h.load(&h.root) == KH_OK, kh_last_error());
  CHECK(kh_test::read_text(h.pinned_file()) == h.root);  // pinned to exactly that root
  CHECK_MESSAGE(h.load(&h.root) == KH_OK, kh_last_error());
  CHECK_MESSAGE(h.load(nullptr) == KH_OK, kh_last_error());  // the pin serves on its own now

  SUBCASE("the same root laid out otherwise is the same root") {
    const std::string reformatted = nlohmann::json::parse(h.root).dump(4);
    REQUIRE(reformatted != h.root);
    CHECK_MESSAGE(h.load(&reformatted) == KH_OK, kh_last_error());
  }
  SUBCASE("a cache pinned to another root fails, naming both, and stays pinned") {
    const std::string other = stranger_root();
    CHECK(h.load(&other) == KH_ERROR_SIGNATURE);
    const std::string msg = kh_last_error();
    CHECK_MESSAGE(msg.find("is pinned in this cache to another root of trust than the host's: the cache's pin is " +
                           h.pinned_file() + " (version 1, keys ") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("the host's is kh_load_options.trusted_root (version 1, keys ") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find("kh never re-pins") != std::string::npos, msg);
    CHECK(kh_test::read_text(h.pinned_file()) == h.root);
  }
  SUBCASE("a malformed root is refused before anything is pinned") {
    kh_test::TempDir fresh;
    const std::string junk = "{\"signed\": 1}";
    kh_load_options o = h.options(&junk);
    const std::string cache = fresh.path();
    o.cache_dir = cache.c_str();
    kh_kernel* k = nullptr;
    CHECK(kh_load_kernel(kSpec, &o, &k) == KH_ERROR_BAD_METADATA);
    CHECK(kh_test::names_in(cache + "/hubs").size() <= 1);
    CHECK_FALSE(kh::registry::path_exists(cache + "/hubs/" + kh::registry::open_hub(h.url)->id() + "/trust/root"));
  }
}

TEST_CASE("a root the chain has moved past still matches the pin's chain") {
  ScopedEnv env({{"KH_METADATA_TTL", "0"}, {"KH_PROGRESS", "0"}});
  Host h;
  REQUIRE_MESSAGE(h.load(&h.root) == KH_OK, kh_last_error());
  // The operator rotates to root 2 (same keys); a client walks to it on its next fetch.
  kh::registry::RootSpec next;
  next.root_keys = {h.hub.key.public_key()};
  next.index_keys = {h.hub.key.public_key()};
  next.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 7200;
  kh::registry::write_next_root_to_file_hub(h.hub.hub_dir, next, {h.hub.key});
  REQUIRE_MESSAGE(h.load(&h.root) == KH_OK, kh_last_error());
  const std::string root2 = kh_test::read_text(h.hub.hub_dir + "/root/2.root.json");
  CHECK_MESSAGE(h.load(&root2) == KH_OK, kh_last_error());  // a host that ships the newer root
}

TEST_CASE("KH_TRUSTED_ROOT names the root as a file, for kh_load_kernel and `kernels get`") {
  ScopedEnv quiet({{"KH_METADATA_TTL", "0"}, {"KH_PROGRESS", "0"}});
  Host h;
  {
    ScopedEnv env("KH_TRUSTED_ROOT", h.hub.root_file());
    CHECK_MESSAGE(h.load(nullptr) == KH_OK, kh_last_error());
    CHECK(kh_test::read_text(h.pinned_file()) == h.root);
  }
  const std::string other_file = h.hub.dir + "/other.root.json";
  kh_test::write_text(other_file, stranger_root());
  {
    ScopedEnv env("KH_TRUSTED_ROOT", other_file);
    CHECK(h.load(nullptr) == KH_ERROR_SIGNATURE);
    CHECK(std::string(kh_last_error()).find("the host's is KH_TRUSTED_ROOT=" + other_file) != std::string::npos);
    // kh_load_options.trusted_root wins over the variable.
    CHECK_MESSAGE(h.load(&h.root) == KH_OK, kh_last_error());
  }
  {
    ScopedEnv env("KH_TRUSTED_ROOT", h.hub.dir + "/missing.json");
    CHECK(h.load(nullptr) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(kh_last_error()).find("KH_TRUSTED_ROOT='" + h.hub.dir + "/missing.json' cannot be opened") !=
          std::string::npos);
  }
  kh_test::TempDir fresh;
  const kh_test::ShellRun get = kh_test::run_shell("KH_TRUSTED_ROOT='" + h.hub.root_file() + "' '" KH_KERNELS_EXE
                                                   "' get " + kSpec + " --hub '" + h.hub.url() + "' --cache '" +
                                                   fresh.path() + "'");
  CHECK_MESSAGE(get.exit_code == 0, get.output);
}

TEST_CASE("kh_trust_root pins without fetching; the same root again is fine; another is refused") {
  Host h;
  kh_test::TempDir fresh;
  const std::string url = h.hub.url(), cache = fresh.path();
  kh_load_options o{};
  o.struct_size = sizeof o;
  o.hub = url.c_str();
  o.cache_dir = cache.c_str();
  CHECK(kh_trust_root(&o) == KH_ERROR_INVALID_ARGUMENT);  // no root given
  o.trusted_root = h.root.data();
  o.trusted_root_size = h.root.size();
  REQUIRE_MESSAGE(kh_trust_root(&o) == KH_OK, kh_last_error());
  REQUIRE_MESSAGE(kh_trust_root(&o) == KH_OK, kh_last_error());
  const std::string other = stranger_root();
  o.trusted_root = other.data();
  o.trusted_root_size = other.size();
  CHECK(kh_trust_root(&o) == KH_ERROR_SIGNATURE);
  o.trusted_root = nullptr;
  ScopedEnv env({{"KH_METADATA_TTL", "0"}, {"KH_PROGRESS", "0"}});
  kh_kernel* k = nullptr;
  CHECK_MESSAGE(kh_load_kernel(kSpec, &o, &k) == KH_OK, kh_last_error());
  kh_kernel_release(k);
}

TEST_CASE("a cached package loads with KH_HUB unset; one not cached says how to name a hub") {
  Host h;
  ScopedEnv env({{"KH_METADATA_TTL", "0"}, {"KH_PROGRESS", "0"}});
  REQUIRE_MESSAGE(h.load(&h.root) == KH_OK, kh_last_error());
  ::unsetenv("KH_HUB");
  ::unsetenv("KH_OFFLINE");
  kh_load_options o{};
  o.struct_size = sizeof o;
  o.cache_dir = h.cache.c_str();
  kh_kernel* k = nullptr;
  REQUIRE_MESSAGE(kh_load_kernel(kSpec, &o, &k) == KH_OK, kh_last_error());
  CHECK(std::string(kh_kernel_name(k)) == "test-org/host-load");
  kh_kernel_release(k);
  CHECK(kh_load_kernel("test-org/not-cached@1", &o, &k) == KH_ERROR_NOT_FOUND);
  const std::string msg = kh_last_error();
  CHECK_MESSAGE(msg.find("test-org/not-cached@1 is not in the cache '" + h.cache +
                         "' and no hub is configured to download it from: pass --hub URL (kh_load_options.hub) or "
                         "set KH_HUB") != std::string::npos, msg);
  CHECK(kh_load_kernel("test-org/host-load@2", &o, &k) == KH_ERROR_NOT_FOUND);  // cached, but not that version
}
