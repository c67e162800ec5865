// Strict JSON field access shared by the index and manifest parsers: every error names
// the source and the field path. Internal to the registry; includes nlohmann/json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kh/registry/json_limits.hpp"
#include "kh/registry/op_docs.hpp"
#include "kh/registry/printable.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry::detail {

// A map key (a version, a variant key) in a field path, quoted because it may hold '.':
// releases."1.0.0".variants."cpu-x86_64-abi1-x86_64-linux".size
inline std::string key_in_path(const std::string& key) { return "\"" + key + "\""; }

using json = nlohmann::json;

inline constexpr std::string_view kHubMetadataFix = "the hub's metadata is malformed: ask its publisher to republish it";

class FieldReader {
 public:
  // fix: what the reader of an error should do, e.g. kHubMetadataFix.
  explicit FieldReader(std::string_view source, std::string_view fix = kHubMetadataFix) : source_(source), fix_(fix) {}

  // path and what may quote the metadata (keys, names): escaped here, once for all.
  [[noreturn]] void bad(const std::string& path, const std::string& what) const {
    fail(KH_ERROR_BAD_METADATA, std::string(source_) + ": field '" + printable(path) + "': " + printable(what, 4096) +
                                    "; " + std::string(fix_));
  }

  const json& member(const json& obj, const std::string& parent, const std::string& key) const {
    auto it = obj.find(key);
    std::string path = parent.empty() ? key : parent + "." + key;
    if (it == obj.end()) bad(path, "missing");
    return *it;
  }
  std::string string_at(const json& obj, const std::string& parent, const std::string& key) const {
    const json& v = member(obj, parent, key);
    if (!v.is_string()) bad(join(parent, key), "expected a string");
    // Tools print these fields as they are (`kernels info`): no escape sequences from a hub.
    if (!is_printable_text(v.get_ref<const std::string&>()))
      bad(join(parent, key), "holds a control character or invalid UTF-8 ('" + printable(v.get<std::string>()) + "')");
    return v.get<std::string>();
  }
  uint64_t unsigned_at(const json& obj, const std::string& parent, const std::string& key) const {
    const json& v = member(obj, parent, key);
    if (!v.is_number_unsigned()) bad(join(parent, key), "expected an unsigned integer");
    return v.get<uint64_t>();
  }
  const json& object_at(const json& obj, const std::string& parent, const std::string& key) const {
    const json& v = member(obj, parent, key);
    if (!v.is_object()) bad(join(parent, key), "expected an object");
    return v;
  }
  const json& array_at(const json& obj, const std::string& parent, const std::string& key) const {
    const json& v = member(obj, parent, key);
    if (!v.is_array()) bad(join(parent, key), "expected an array");
    return v;
  }
  static std::string join(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
  }

 private:
  std::string_view source_;
  std::string_view fix_;
};


// The parsers' common opening: text (its depth checked first) parsed as JSON whose top level is
// an object, else KH_ERROR_BAD_METADATA naming source. `fix`, when not empty, ends the message
// for text that is not JSON at all (what its reader should do: repack, ask the publisher).
json parse_json_object(std::string_view text, std::string_view source, std::string_view fix);
// The top-level "schema" member of doc: an integer, equal to `expected`; another one fails
// naming `what` ("manifest", "index") and `upgrade`, what the user does about it.
void check_schema(const FieldReader& r, const json& doc, std::string_view source, int64_t expected,
                  std::string_view what, std::string_view upgrade);
// The top-level string member `key` of doc, a valid "<org>/<name>" (package_spec.hpp's parts), or bad().
std::string repo_name_at(const FieldReader& r, const json& doc, const std::string& key);

// Non-empty [a-z0-9._-]: a variant key.
bool is_variant_key(std::string_view s);
// "<major>.<minor>", both decimal: an ABI version.
bool is_abi_text(std::string_view s);
// The optional "glibc" member of obj: "" when absent, else a valid glibc version, or bad().
std::string optional_glibc_at(const FieldReader& r, const nlohmann::json& obj, const std::string& parent);
// The optional "runtime" ("major.minor") and "code_object" (1-99) members of obj, or bad().
void optional_runtime_floor_at(const FieldReader& r, const nlohmann::json& obj, const std::string& parent,
                               std::string* runtime, uint32_t* code_object);
void write_runtime_floor(nlohmann::ordered_json& obj, const std::string& runtime, uint32_t code_object);
// An "ops" array: [{"name": ..., "schema": ..., and the optional docs of op_docs.hpp}]. With
// strict_keys (an author's kernel.json) unknown fields of an op or argument are refused; hub
// metadata may carry fields a newer kh writes, which are ignored.
std::vector<OpInfo> parse_ops(const FieldReader& r, const nlohmann::json& ops, const std::string& path,
                              bool strict_keys = false);
// The same array written back: what parse_ops reads, every empty doc field left out.
nlohmann::ordered_json ops_json(const std::vector<OpInfo>& ops);
// The optional multi-line text member `key` of obj: "" when absent; else a string of at most
// max_bytes, printable but for '\n' between lines, or bad().
std::string optional_text_at(const FieldReader& r, const nlohmann::json& obj, const std::string& parent,
                             const std::string& key, size_t max_bytes);

}  // namespace kh::registry::detail
