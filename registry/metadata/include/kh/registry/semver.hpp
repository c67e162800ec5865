// Semantic versions (semver 2.0.0) and the version requests of a package spec.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kh::registry {

struct Version {
  uint64_t major = 0, minor = 0, patch = 0;
  std::string prerelease;  // without the leading '-'; empty for a release
  std::string build;       // without the leading '+'; ignored for precedence
};

// Strict semver 2.0.0 ("1.2.3", "1.2.3-rc.1+build.5"); nullopt on anything else.
std::optional<Version> parse_version(std::string_view text);
std::string to_string(const Version& v);
// Semver precedence: <0, 0, >0. Build metadata is ignored.
int compare_versions(const Version& a, const Version& b);

// What "@..." in a package spec asks for.
struct VersionRequest {
  enum class Kind {
    Latest,    // "@latest" or no "@": newest non-prerelease, non-yanked
    Partial,   // "@1" (1.x.y) or "@1.2" (1.2.y)
    Caret,     // "@^1.2.0": >=1.2.0, <2.0.0 (for 0.x: <0.(x+1).0, as npm/cargo do)
    Tilde,     // "@~1.2.3": >=1.2.3, <1.3.0
    Exact,     // "@=1.2.3" or "@1.2.3": that version only; may be yanked or a prerelease
    Digest,    // "@sha256:<64 hex>": the build whose blob has that digest
    Range,     // "@>=1.2,<2": every comparator holds (Cargo's comparison requirements)
  };
  // One bound of a Range, its partial versions already widened as Cargo does them
  // (">1.2" is ">=1.3.0", "<=1" is "<2.0.0").
  struct Bound {
    enum class Op { Ge, Gt, Le, Lt, Eq };
    Op op = Op::Ge;
    Version version;
  };
  Kind kind = Kind::Latest;
  Version version;         // lower bound / exact version; for Partial the given parts
  int partial_parts = 0;   // Partial: 1 ("@1") or 2 ("@1.2")
  std::string sha256;      // Digest: the lowercase hex digest
  std::vector<Bound> bounds;  // Range: all must hold
  std::string text;        // as the user wrote it, for messages ("latest" when absent)

  // Does this request accept v? Digest requests accept no version by number.
  // Prereleases match only an Exact request, or a range whose bound has a prerelease
  // on the same major.minor.patch (as npm does).
  bool matches(const Version& v) const;
  bool pins_exactly() const { return kind == Kind::Exact || kind == Kind::Digest; }
};

// Parses the text after '@' (or "" for none). Throws StatusError(KH_ERROR_INVALID_ARGUMENT)
// naming the text and the accepted forms.
VersionRequest parse_version_request(std::string_view text);

}  // namespace kh::registry
