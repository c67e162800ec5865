// What a hub holds, for the messages that help a user who typed a wrong name or URL: is
// there a kh hub at this URL at all, which packages does it list, which of them is close to
// a mistyped name. Reads kh-hub.json, root/1.root.json and catalog.json (the catalog is
// unsigned: its names only ever feed suggestions and `kernels search`, never what is
// installed, which is verified against the signed index as always).
#pragma once

#include <string>
#include <vector>

#include "kh/registry/hub.hpp"

namespace kh::registry {

// One package the hub's catalog lists.
struct CatalogEntry {
  std::string repo;    // "org/name"
  std::string latest;  // the newest release "@latest" picks, as the publisher recorded it; may be empty
};

// Throws StatusError(KH_ERROR_NOT_FOUND) "no kh hub at URL (tried ...)" unless the hub has
// kh-hub.json or a first root (a hub set up with `kernels trust init` but not yet published
// to). A transfer failure is rethrown as the same kind of error with what was tried.
void require_kh_hub(Hub& hub);

// The packages catalog.json lists (sorted by repo); empty when the hub has no catalog.
// Throws on a catalog that is not valid JSON of the documented shape.
std::vector<CatalogEntry> read_catalog(Hub& hub);

// Names from `known` that `wanted` (an "org/name") is probably a misspelling of, closest
// first, at most three: a small edit distance on the whole name or on the name alone (the
// right package under another org), or the name as a part of a longer one.
std::vector<std::string> similar_repo_names(const std::string& wanted, const std::vector<std::string>& known);

// Words from `known` within a small edit distance of `word` (a third of its length, 1 to 3),
// closest first, at most three: for "did you mean" on mistyped commands and options.
std::vector<std::string> similar_words(const std::string& word, const std::vector<std::string>& known);

// Fails with KH_ERROR_NOT_FOUND for a repo the hub does not have: "no kh hub at URL" when
// there is no hub there, else "hub URL has no repo X", with "did you mean ..." when the
// catalog lists a close name and the command that lists them all. `tried` says which file
// was missing (e.g. "repos/org/name/index.json").
[[noreturn]] void fail_repo_not_found(Hub& hub, const std::string& repo, const std::string& tried);

}  // namespace kh::registry
