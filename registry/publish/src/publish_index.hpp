// Reading a repo's index for a change and writing it back signed, shared by publish() and
// set_release_yanked(): both run under the hub's publish lock and never overwrite an index
// another publisher changed meanwhile (IndexChanged: the caller starts over).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kh/registry/hub_writer.hpp"
#include "kh/registry/publish.hpp"
#include "kh/registry/repo_index.hpp"

namespace kh::registry::detail {

// One touched repo: its index as the hub had it (the bytes, or none), and as changed.
struct RepoState {
  std::optional<std::string> before;
  std::optional<std::string> before_minisig;
  RepoIndex index;
  bool changed = false;
};

// Thrown when another publisher changed an index between its reading and its writing.
struct IndexChanged {
  std::string rel;
};

// The repo's current index, as what is changed must be what clients would accept: a remote
// hub's is verified as a client verifies it (pinned root, signatures, rollback, expiry) and
// the verified copy is what the change builds on; a local hub's files are the operator's own
// and are read as they are. A repo the hub lacks gives an empty index of that name.
RepoState read_repo(HubWriter& hub, const std::string& repo, bool signed_hub, const PublishOptions& options);

// Writes state.index with its "version" bumped and "expires" set to `expires` (unix seconds),
// signed with options' keys (checked against root), after the index signatures; throws
// IndexChanged when the hub's index is no longer state.before, before or right after writing.
void write_repo_index(HubWriter& hub, PublishLock& lock, const std::optional<RootMetadata>& root, RepoState& state,
                      const PublishOptions& options, int64_t expires);

}  // namespace kh::registry::detail
