// See workspace.hpp.
#include "workspace.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "../servers/server_util.hpp"
#include "kh/registry/sha256.hpp"

namespace kh::test {

CommandResult run_command(const std::string& command) {
  const kh_test::ShellRun run = kh_test::run_shell(command);
  return CommandResult{run.exit_code, run.output};
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  REQUIRE(out.good());
}

Workspace::Workspace(const std::string& name) {
  root = fs::path(KH_TEST_BINARY_DIR) / "test-work" / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(root);
  hub = root / "hub";
  cache = root / "cache";
  dist = root / "dist";
  fs::create_directories(hub);
  fs::create_directories(cache);
  fs::create_directories(dist);
}

Workspace::~Workspace() {
  // Cache trees are read-only; make them writable so they can be removed.
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_directory(ec)) fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(root, ec);
}

CommandResult Workspace::kernels(const std::string& args) const {
  return run_command("KH_CACHE='" + cache.string() + "' '" KH_KERNELS_EXE "' " + args);
}

void Workspace::publish_reference() const {
  // A hub operator's setup: a key, a root of trust naming it, a signed publish; then the
  // client pins that root, as users do with `kernels trust`.
  const std::string keys = (root / "keys").string();
  if (!fs::exists(root / "keys" / "kh.key")) {
    auto gen = kernels("keys generate '" + keys + "'");
    REQUIRE_MESSAGE(gen.exit_code == 0, gen.output);
  }
  if (!fs::exists(hub / "root" / "1.root.json")) {
    auto init = kernels("trust init --hub '" + hub_url() + "' --key '" + keys + "/kh.pub' --sign '" + keys + "/kh.key'");
    REQUIRE_MESSAGE(init.exit_code == 0, init.output);
  }
  auto pack = kernels("pack '" KH_RMS_NORM_LIB "' --package '" KH_TEST_SOURCE_DIR "/kernels-src/rms-norm/kernel.json' --out '" +
                      dist.string() + "'");
  REQUIRE_MESSAGE(pack.exit_code == 0, pack.output);
  auto publish = kernels("publish '" + dist.string() + "' --hub '" + hub_url() + "' --key '" + keys + "/kh.key'");
  REQUIRE_MESSAGE(publish.exit_code == 0, publish.output);
  auto trust = kernels("trust '" + (hub / "root" / "1.root.json").string() + "' --hub '" + hub_url() + "' --replace");
  REQUIRE_MESSAGE(trust.exit_code == 0, trust.output);
}

nlohmann::json Workspace::read_index() const { return nlohmann::json::parse(read_text(index_path())); }

void Workspace::write_index(const nlohmann::json& index) const {
  // Re-signed like an operator's hand edit, so tests reach the check they mean to test.
  write_text(index_path(), index.dump(2));
  auto sign = kernels("keys sign '" + index_path().string() + "' --key '" + (root / "keys" / "kh.key").string() + "'");
  REQUIRE_MESSAGE(sign.exit_code == 0, sign.output);
}

nlohmann::json& Workspace::reference_variant(nlohmann::json& index) {
  auto& variants = index["releases"]["1.0.0"]["variants"];
  REQUIRE(variants.size() == 1);
  return variants.begin().value();
}

fs::path Workspace::blob_path(const std::string& sha256) const {
  return hub / "blobs" / "sha256" / sha256.substr(0, 2) / sha256;
}

size_t Workspace::trusted_cache_entries() const {
  size_t count = 0;
  for (const char* sub : {"pkgs", "blobs"}) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(cache / sub, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_regular_file(ec)) ++count;
  }
  return count;
}

}  // namespace kh::test
