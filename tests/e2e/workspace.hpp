// A scratch directory per test with a hub, a cache and a dist folder, plus helpers that
// publish the reference rms-norm package into the hub and run the `kernels` CLI.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace kh::test {

namespace fs = std::filesystem;

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command, capturing its output.
CommandResult run_command(const std::string& command);

class Workspace {
 public:
  explicit Workspace(const std::string& name);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  fs::path root, hub, cache, dist;
  std::string hub_url() const { return "file://" + hub.string(); }

  // `kernels <args>` with KH_CACHE pointing at this workspace's cache.
  CommandResult kernels(const std::string& args) const;
  // Makes a signing key and root of trust for the hub (once), packs and publishes the
  // reference rms-norm CPU build signed, and pins the root in the cache; REQUIREs success.
  void publish_reference() const;

  fs::path index_path() const { return hub / "repos/kernels-community/rms-norm/index.json"; }
  nlohmann::json read_index() const;
  // Writes the index and signs it with the hub's key.
  void write_index(const nlohmann::json& index) const;
  // The (only) variant entry of release 1.0.0 in the index.
  static nlohmann::json& reference_variant(nlohmann::json& index);
  fs::path blob_path(const std::string& sha256) const;
  // Regular files under cache/pkgs and cache/blobs: what a failed fetch must not add to.
  size_t trusted_cache_entries() const;
};

std::string read_text(const fs::path& path);
void write_text(const fs::path& path, const std::string& text);

}  // namespace kh::test
