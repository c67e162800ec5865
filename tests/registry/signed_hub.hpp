// A signed file hub in a scratch folder, for the tests that drive whole gets and loads: a
// root of trust (root/1.root.json) and packages published to it, signed by the hub's key.
// Served as it is (file://) or through a loopback server (tests/servers).
#pragma once

#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "test_util.hpp"
#include "kh/registry/package_manifest.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/signed_metadata.hpp"

namespace kh_test {

struct SignedHub {
  TempDir tmp;
  std::string dir = tmp.path(), hub_dir = dir + "/hub";
  kh::registry::minisign::SecretKey key = kh::registry::minisign::generate_key();

  SignedHub() {
    kh::registry::RootSpec spec;
    spec.root_keys = {key.public_key()};
    spec.index_keys = {key.public_key()};
    spec.expires_unix = static_cast<int64_t>(std::time(nullptr)) + 86400;
    kh::registry::write_next_root_to_file_hub(hub_dir, spec, {key});
  }
  std::string url() const { return "file://" + hub_dir; }
  std::string root_file() const { return hub_dir + "/root/1.root.json"; }
  std::string root_text() const { return read_text(root_file()); }

  // Packs `library` (a file) as repo@version for `variant` with one op (and extra files:
  // {path in the package, content}), and publishes it. Returns the blob's sha256.
  std::string publish(const std::string& library, const std::string& repo, const std::string& version = "1.0.0",
                      const std::string& variant = "cpu-x86_64-abi1-x86_64-linux",
                      const std::vector<std::pair<std::string, std::string>>& extra_files = {}) {
    kh::registry::PackageManifest m;
    m.name = repo;
    m.version = version;
    m.variant = variant;
    m.abi = "1.0";
    m.ops = {{"noop", "noop(Tensor(a!) out) -> ()"}};
    const std::string dist = dir + "/dist-" + std::to_string(++published_);
    kh::registry::pack_package(library, m, dist, extra_files);
    return kh::registry::publish_to_file_hub(dist, hub_dir, 30, {key}).front().sha256;
  }
  // The same with a library of `size` random bytes (never loaded: for gets, not loads).
  std::string publish_bytes(size_t size, const std::string& repo, const std::string& version = "1.0.0") {
    const std::string library = dir + "/build-" + std::to_string(published_ + 1) + "/libkh_bytes.so";
    kh::registry::make_directories(dir + "/build-" + std::to_string(published_ + 1));
    std::string bytes(size, '\0');
    uint64_t x = 0x9e3779b97f4a7c15ull ^ size;  // random enough not to compress
    for (char& c : bytes) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      c = static_cast<char>(x);
    }
    write_text(library, bytes, 0755);
    return publish(library, repo, version);
  }

 private:
  int published_ = 0;
};

}  // namespace kh_test
