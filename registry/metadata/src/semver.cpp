// Semantic versions (semver 2.0.0): strict parsing, precedence, and version requests.
#include "kh/registry/semver.hpp"

#include <vector>

#include "kh/registry/sha256.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}
bool all_digits(std::string_view s) {
  for (char c : s)
    if (!is_digit(c)) return false;
  return !s.empty();
}

// A numeric identifier: digits, no leading zero unless it is "0", fits in 64 bits.
bool parse_numeric(std::string_view s, uint64_t* out) {
  if (!all_digits(s) || (s.size() > 1 && s[0] == '0')) return false;
  uint64_t v = 0;
  for (char c : s) {
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

std::vector<std::string_view> split_dots(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    size_t dot = s.find('.', start);
    if (dot == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, dot - start));
    start = dot + 1;
  }
}

// Dot-separated identifiers, each non-empty [0-9A-Za-z-]; numeric ones of a prerelease
// must not have leading zeros (build metadata may).
bool valid_identifiers(std::string_view s, bool prerelease) {
  for (std::string_view id : split_dots(s)) {
    if (id.empty()) return false;
    for (char c : id)
      if (!is_ident_char(c)) return false;
    if (prerelease && all_digits(id) && id.size() > 1 && id[0] == '0') return false;
  }
  return true;
}

int compare_prerelease_ids(std::string_view a, std::string_view b) {
  bool an = all_digits(a), bn = all_digits(b);
  if (an && bn) {  // numerically; no leading zeros, so length first then text
    if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
    int c = a.compare(b);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (an != bn) return an ? -1 : 1;  // numeric identifiers sort below alphanumeric ones
  int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

bool same_core(const Version& a, const Version& b) {
  return a.major == b.major && a.minor == b.minor && a.patch == b.patch;
}

constexpr const char* kAcceptedForms =
    "accepted forms: 'latest', '1' (newest 1.x), '1.2' (newest 1.2.x), '^1.2.0', '~1.2.3', "
    "'=1.2.3' or '1.2.3' (exactly that version), comparisons joined by commas such as '>=1.2,<2', "
    "'sha256:<64 lowercase hex digits>'";

[[noreturn]] void bad_request(std::string_view text, const std::string& why) {
  fail(KH_ERROR_INVALID_ARGUMENT,
       "invalid version request '" + std::string(text) + "': " + why + "; " + kAcceptedForms);
}


std::string_view trim_spaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

using Bound = VersionRequest::Bound;

// "1", "1.2" or a full version after a comparison operator; parts = 1, 2 or 3.
bool parse_bound_version(std::string_view text, Version* v, int* parts);

// One comparator of a range ("<=1.2", ">1.2.3", "=1.4") as the bounds it means, with partial
// versions widened the way Cargo does.
void append_bounds(std::string_view whole, std::string_view c, std::vector<Bound>* out) {
  using Op = Bound::Op;
  std::string_view op_text;
  for (std::string_view o : {">=", "<=", ">", "<", "=", "^", "~"})
    if (c.substr(0, o.size()) == o) {
      op_text = o;
      break;
    }
  Version v;
  int parts = 0;
  if (!parse_bound_version(trim_spaces(c.substr(op_text.size())), &v, &parts))
    bad_request(whole, "'" + std::string(c) + "' must compare with a version such as 1, 1.2 or 1.2.3");
  // The first version past v's given parts: 1 -> 2.0.0, 1.2 -> 1.3.0.
  auto past = [&](int given) {
    Version n;
    n.major = v.major + (given == 1);
    n.minor = given >= 2 ? v.minor + (given == 2) : 0;
    n.patch = given == 3 ? v.patch + 1 : 0;
    return n;
  };
  if (op_text.empty()) op_text = "^";  // a bare version in a list is a caret requirement (Cargo)
  if (op_text == "^") {
    // The left-most non-zero part of those given stays the same.
    const int keep = v.major != 0 || parts == 1 ? 1 : (v.minor != 0 || parts == 2 ? 2 : 3);
    out->push_back({Op::Ge, v});
    out->push_back({Op::Lt, past(keep)});
  } else if (op_text == "~") {
    out->push_back({Op::Ge, v});
    out->push_back({Op::Lt, past(parts == 1 ? 1 : 2)});
  } else if (parts == 3) {
    const Op op = op_text == ">=" ? Op::Ge : op_text == ">" ? Op::Gt : op_text == "<=" ? Op::Le
                                          : op_text == "<"  ? Op::Lt : Op::Eq;
    out->push_back({op, v});
  } else if (op_text == ">=") {
    out->push_back({Op::Ge, v});
  } else if (op_text == ">") {
    out->push_back({Op::Ge, past(parts)});
  } else if (op_text == "<") {
    out->push_back({Op::Lt, v});
  } else if (op_text == "<=") {
    out->push_back({Op::Lt, past(parts)});
  } else {  // "=1.2": any 1.2.x
    out->push_back({Op::Ge, v});
    out->push_back({Op::Lt, past(parts)});
  }
}

bool parse_bound_version(std::string_view text, Version* v, int* parts) {
  if (std::optional<Version> full = parse_version(text)) {
    *v = *full;
    *parts = 3;
    return true;
  }
  std::vector<std::string_view> p = split_dots(text);
  if (p.size() > 2) return false;
  uint64_t nums[2] = {0, 0};
  for (size_t i = 0; i < p.size(); ++i)
    if (!parse_numeric(p[i], &nums[i]) || nums[i] == UINT64_MAX) return false;
  *v = Version{};
  v->major = nums[0];
  v->minor = nums[1];
  *parts = static_cast<int>(p.size());
  return true;
}

bool bound_holds(const Bound& b, const Version& v) {
  const int c = compare_versions(v, b.version);
  switch (b.op) {
    case Bound::Op::Ge: return c >= 0;
    case Bound::Op::Gt: return c > 0;
    case Bound::Op::Le: return c <= 0;
    case Bound::Op::Lt: return c < 0;
    case Bound::Op::Eq: return c == 0;
  }
  return false;
}

}  // namespace

std::optional<Version> parse_version(std::string_view text) {
  Version v;
  std::string_view rest = text;
  size_t plus = rest.find('+');
  if (plus != std::string_view::npos) {
    v.build = std::string(rest.substr(plus + 1));
    if (!valid_identifiers(v.build, false)) return std::nullopt;
    rest = rest.substr(0, plus);
  }
  size_t dash = rest.find('-');
  if (dash != std::string_view::npos) {
    v.prerelease = std::string(rest.substr(dash + 1));
    if (!valid_identifiers(v.prerelease, true)) return std::nullopt;
    rest = rest.substr(0, dash);
  }
  std::vector<std::string_view> core = split_dots(rest);
  if (core.size() != 3) return std::nullopt;
  if (!parse_numeric(core[0], &v.major) || !parse_numeric(core[1], &v.minor) || !parse_numeric(core[2], &v.patch))
    return std::nullopt;
  return v;
}

std::string to_string(const Version& v) {
  std::string s = std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
  if (!v.prerelease.empty()) s += "-" + v.prerelease;
  if (!v.build.empty()) s += "+" + v.build;
  return s;
}

int compare_versions(const Version& a, const Version& b) {
  if (a.major != b.major) return a.major < b.major ? -1 : 1;
  if (a.minor != b.minor) return a.minor < b.minor ? -1 : 1;
  if (a.patch != b.patch) return a.patch < b.patch ? -1 : 1;
  if (a.prerelease.empty() || b.prerelease.empty()) {
    if (a.prerelease.empty() && b.prerelease.empty()) return 0;
    return a.prerelease.empty() ? 1 : -1;  // a release outranks its prereleases
  }
  std::vector<std::string_view> pa = split_dots(a.prerelease), pb = split_dots(b.prerelease);
  for (size_t i = 0; i < pa.size() && i < pb.size(); ++i) {
    int c = compare_prerelease_ids(pa[i], pb[i]);
    if (c != 0) return c;
  }
  if (pa.size() == pb.size()) return 0;
  return pa.size() < pb.size() ? -1 : 1;
}

bool VersionRequest::matches(const Version& v) const {
  switch (kind) {
    case Kind::Digest:
      return false;
    case Kind::Exact:
      return compare_versions(v, version) == 0;
    case Kind::Latest:
      return v.prerelease.empty();
    case Kind::Range: {
      // A prerelease matches only where a bound names a prerelease of the same 1.2.3 (npm, Cargo).
      bool prerelease_named = v.prerelease.empty();
      for (const Bound& b : bounds) {
        if (!bound_holds(b, v)) return false;
        if (!b.version.prerelease.empty() && same_core(b.version, v)) prerelease_named = true;
      }
      return prerelease_named;
    }
    case Kind::Partial:
      if (!v.prerelease.empty() || v.major != version.major) return false;
      return partial_parts < 2 || v.minor == version.minor;
    case Kind::Caret:
    case Kind::Tilde: {
      if (!v.prerelease.empty() && !(!version.prerelease.empty() && same_core(v, version))) return false;
      if (compare_versions(v, version) < 0) return false;
      if (kind == Kind::Tilde) return v.major == version.major && v.minor == version.minor;
      // Caret: the left-most non-zero part must stay the same (npm, cargo).
      if (version.major != 0) return v.major == version.major;
      if (version.minor != 0) return v.major == 0 && v.minor == version.minor;
      return v.major == 0 && v.minor == 0 && v.patch == version.patch;
    }
  }
  return false;
}

VersionRequest parse_version_request(std::string_view text) {
  VersionRequest r;
  r.text = text.empty() ? "latest" : std::string(text);
  if (text.empty() || text == "latest") return r;

  constexpr std::string_view kDigestPrefix = "sha256:";
  if (text.substr(0, kDigestPrefix.size()) == kDigestPrefix) {
    std::string_view hex = text.substr(kDigestPrefix.size());
    if (!is_sha256_hex(hex)) bad_request(text, "a digest needs exactly 64 lowercase hex digits after 'sha256:'");
    r.kind = VersionRequest::Kind::Digest;
    r.sha256 = std::string(hex);
    return r;
  }

  // Comparisons (Cargo): ">=1.2", "<2", ">=1.2, <1.5", "=1.4" (any 1.4.x).
  const bool comparison = text[0] == '<' || text[0] == '>' || text.find(',') != std::string_view::npos ||
                          (text[0] == '=' && !parse_version(text.substr(1)));
  if (comparison) {
    r.kind = VersionRequest::Kind::Range;
    size_t start = 0;
    for (;;) {
      const size_t comma = text.find(',', start);
      const std::string_view c = trim_spaces(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
      if (c.empty()) bad_request(text, "an empty comparison between commas");
      append_bounds(text, c, &r.bounds);
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return r;
  }

  char op = text[0];
  if (op == '^' || op == '~' || op == '=') {
    std::optional<Version> v = parse_version(text.substr(1));
    if (!v) bad_request(text, std::string("'") + op + "' must be followed by a full semantic version such as 1.2.3");
    r.kind = op == '^' ? VersionRequest::Kind::Caret
                       : (op == '~' ? VersionRequest::Kind::Tilde : VersionRequest::Kind::Exact);
    r.version = *v;
    return r;
  }

  if (std::optional<Version> v = parse_version(text)) {
    r.kind = VersionRequest::Kind::Exact;
    r.version = *v;
    return r;
  }

  std::vector<std::string_view> parts = split_dots(text);
  if (parts.size() <= 2) {
    uint64_t nums[2] = {0, 0};
    bool ok = true;
    for (size_t i = 0; i < parts.size(); ++i) ok = ok && parse_numeric(parts[i], &nums[i]);
    if (ok) {
      r.kind = VersionRequest::Kind::Partial;
      r.partial_parts = static_cast<int>(parts.size());
      r.version.major = nums[0];
      r.version.minor = nums[1];
      return r;
    }
  }
  bad_request(text, "not a version, a range or a digest");
}

}  // namespace kh::registry
