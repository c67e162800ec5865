// The unlocked core of signing a file hub's index, shared by publish.cpp (which already
// holds the hub's publish lock) and signed_metadata.cpp. Internal to the registry.
#pragma once

#include <string>
#include <vector>

#include "kh/registry/minisign.hpp"

namespace kh::registry::detail {

// Writes repos/<repo>/index.json.minisig (and .sigs with more than one signer; a stale
// .sigs is removed otherwise) for exactly `index_bytes`. Checks the signers against the
// hub's newest root when it has one. Does not write index.json itself.
// Refuses (KH_ERROR_SIGNATURE) signers clients would not accept for an index: keys that
// are not index keys of the hub's newest root (when it has one), or too few of them.
// Refuses no signers at all on a hub that has a root. Returns whether the hub has one.
bool check_index_signers(const std::string& hub_dir, const std::vector<minisign::SecretKey>& signers);

void write_index_signatures(const std::string& hub_dir, const std::string& repo, const std::string& index_bytes,
                            const std::vector<minisign::SecretKey>& signers);

}  // namespace kh::registry::detail
