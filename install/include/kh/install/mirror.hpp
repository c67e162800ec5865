// `kernels mirror`: copying signed metadata, the root chain and chosen builds from any hub
// (or an air-gapped bundle) to any hub (or a bundle), verifying every byte on the way and
// re-signing nothing, so that the mirror's clients verify against the same pinned root.
#pragma once

#include <string>
#include <vector>

#include "kh/install/session.hpp"
#include "kh/install/settings.hpp"
#include "kh/registry/mirror.hpp"

namespace kh::install {

struct MirrorRequest {
  std::string source;       // a hub URL, or a bundle file (kernels mirror FILE DST)
  std::string destination;  // a hub URL; empty when writing a bundle
  std::string bundle;       // non-empty: write this bundle file instead of a hub
  // What to copy: these specs' releases; else what the lockfile pins; else every repo of
  // the source's catalog, every release. Of each release: the build chosen for this
  // machine, or every build (all_targets), or the build `target`; with neither specs nor
  // a lockfile, every build unless `target`.
  std::vector<std::string> specs;
  std::string lockfile;
  bool all_targets = false;
  std::string target;
  // The root the source is verified against: this root.json; else the root pinned for the
  // source hub in the cache; for a bundle, else the root pinned for the destination.
  std::string trust_root;
  bool allow_expired = false;
  std::string who;  // names this mirror to a publisher waiting for the destination
};

struct MirrorResult {
  registry::MirrorReport report;
  std::vector<std::string> repos;   // whose index was copied
  std::vector<std::string> builds;  // "org/name version variant" copied
  uint64_t bytes = 0;               // of the builds
};

// Throws StatusError naming what failed (no root to verify against, a signature, a blob
// that does not match its signed digest, a destination that would roll back or trusts
// another chain). After writing a hub, reads it back as a client would (every copied index
// verified against the root, every build present) before reporting success.
MirrorResult mirror(const Settings& settings, const MirrorRequest& request, const BuildChooser& chooser);

}  // namespace kh::install
