// Writing a mirror: signed metadata, the root chain and builds copied to any hub exactly
// as they are (nothing re-signed), so that the mirror's clients verify against the root
// they pinned for the original. What to copy, and its verification on the way in, is
// install/'s (kernels mirror); this is the writing, and the bundle file format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kh/registry/hub_writer.hpp"

namespace kh::registry {

// What a mirror copies, every byte already verified by the caller.
struct MirrorContent {
  std::vector<std::string> roots;  // root/1.root.json, root/2 ... as the source signed them
  std::optional<std::string> hub_json;
  struct Index {
    std::string repo;
    std::string text, minisig, sigs;  // sigs: "" when the index role needs one signature
    uint64_t version = 0;             // the index's "version", for the rollback check
  };
  std::vector<Index> indexes;
  struct Blob {
    std::string sha256;
    uint64_t size = 0;
    std::string path;  // the verified archive on this machine
  };
  std::vector<Blob> blobs;
  std::vector<std::string> catalog_repos;  // with each one's latest, taken from its index
};

struct MirrorReport {
  size_t roots_written = 0, indexes_written = 0, blobs_written = 0, blobs_present = 0;
};

// Writes `content` to `hub` under its publish lock: blobs first, then the roots, then each
// index with its signatures, kh-hub.json when missing, and the catalog (the hub's entries
// kept, the mirrored repos' updated). Refuses (KH_ERROR_SIGNATURE, before writing any
// metadata) a hub whose root N differs from the one copied (it trusts another chain), and
// (KH_ERROR_ROLLBACK) an index the hub holds at a higher version, or at the same version
// with other bytes: a mirror never moves its clients backwards.
MirrorReport write_mirror(HubWriter& hub, const MirrorContent& content, const std::string& who);

// An air-gapped bundle is one file: the .tar.zst of a file:// hub tree (docs/hub.md,
// "Bundles"). Unpacks `bundle` into the empty folder `dir` (regular files and folders
// only, safe names) for reading as a file:// hub; KH_ERROR_BAD_ARCHIVE when it is not one.
void unpack_bundle(const std::string& bundle, const std::string& dir);
// Packs the file hub tree at `dir` into `bundle` (written to a temp name, renamed).
void pack_bundle(const std::string& dir, const std::string& bundle);

}  // namespace kh::registry
