// Root-of-trust metadata and threshold signatures: parsing, verification and creation.
// See trust.hpp for the format and docs/trust.md for the rules.
#include "kh/registry/trust.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "kh/registry/detail/json_fields.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry {
namespace {

using json = nlohmann::json;
constexpr size_t kMaxKeys = 256;
constexpr size_t kMaxSignatures = 256;

bool is_key_id(std::string_view s) {
  if (s.size() != 16) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); });
}

json parse_json(std::string_view text, std::string_view source, kh_status status) {
  check_json_depth(text, source, status);  // before any recursive step sees the tree
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    fail(status, std::string(source) + ": not valid JSON (" + printable(e.what()) + ")");
  }
}

std::string canonical(const json& j, std::string_view source) {
  try {
    return j.dump();
  } catch (const json::exception& e) {
    fail(KH_ERROR_BAD_METADATA, std::string(source) + ": cannot be put in canonical form (" + e.what() + ")");
  }
}

RoleKeys parse_role(const detail::FieldReader& r, const json& roles, const std::string& name,
                    const std::map<std::string, minisign::PublicKey>& keys) {
  const std::string path = "signed.roles." + name;
  const json& role = r.object_at(roles, "signed.roles", name);
  RoleKeys out;
  const json& ids = r.array_at(role, path, "keyids");
  std::set<std::string> seen;
  for (const json& id : ids) {
    if (!id.is_string()) r.bad(path + ".keyids", "expected strings");
    std::string s = id.get<std::string>();
    if (!keys.count(s)) r.bad(path + ".keyids", "names key " + s + ", which is not in signed.keys");
    if (!seen.insert(s).second) r.bad(path + ".keyids", "names key " + s + " twice");
    out.keyids.push_back(s);
  }
  uint64_t threshold = r.unsigned_at(role, path, "threshold");
  if (threshold < 1 || threshold > out.keyids.size())
    r.bad(path + ".threshold", "must be between 1 and the number of keyids (" + std::to_string(out.keyids.size()) + ")");
  out.threshold = static_cast<uint32_t>(threshold);
  return out;
}

std::vector<SignatureEntry> parse_entries(const json& sigs, std::string_view source, kh_status status) {
  auto bad = [&](const std::string& what) { fail(status, std::string(source) + ": field 'signatures': " + what); };
  if (!sigs.is_array()) bad("expected an array");
  if (sigs.size() > kMaxSignatures) bad("more than " + std::to_string(kMaxSignatures) + " signatures");
  std::vector<SignatureEntry> out;
  for (const json& e : sigs) {
    if (!e.is_object()) bad("expected objects {\"keyid\", \"sig\"}");
    auto k = e.find("keyid");
    auto s = e.find("sig");
    if (k == e.end() || !k->is_string() || s == e.end() || !s->is_string())
      bad("each entry needs string fields \"keyid\" and \"sig\"");
    out.push_back({k->get<std::string>(), s->get<std::string>(), ""});
  }
  return out;
}

json role_json(const std::vector<minisign::PublicKey>& keys, uint32_t threshold) {
  json ids = json::array();
  for (const auto& k : keys) ids.push_back(k.key_id_hex());
  return json{{"keyids", ids}, {"threshold", threshold}};
}

}  // namespace

RootMetadata parse_root(std::string_view text, std::string_view source) {
  if (text.size() > kMaxRootBytes)
    fail(KH_ERROR_BAD_METADATA, std::string(source) + ": larger than " + std::to_string(kMaxRootBytes) + " bytes");
  json doc = parse_json(text, source, KH_ERROR_BAD_METADATA);
  detail::FieldReader r(source);
  if (!doc.is_object()) r.bad("", "the document must be an object");
  const json& s = r.object_at(doc, "", "signed");
  RootMetadata root;
  if (r.string_at(s, "signed", "type") != "root") r.bad("signed.type", "expected \"root\"");
  root.version = r.unsigned_at(s, "signed", "version");
  if (root.version < 1) r.bad("signed.version", "must be at least 1");
  if (root.version > kMaxMetadataVersion)
    r.bad("signed.version", "above the highest version kh accepts (" + std::to_string(kMaxMetadataVersion) + ")");
  root.expires = r.string_at(s, "signed", "expires");
  if (!parse_rfc3339_utc(root.expires, &root.expires_unix))
    r.bad("signed.expires", "expected an RFC 3339 UTC time such as 2027-01-01T00:00:00Z");
  const json& keys = r.object_at(s, "signed", "keys");
  if (keys.size() > kMaxKeys) r.bad("signed.keys", "more than " + std::to_string(kMaxKeys) + " keys");
  std::set<std::array<uint8_t, 32>> seen_keys;
  for (auto it = keys.begin(); it != keys.end(); ++it) {
    const std::string path = "signed.keys." + detail::key_in_path(it.key());
    if (!is_key_id(it.key())) r.bad(path, "a key id must be 16 uppercase hex digits");
    if (!it->is_object()) r.bad(path, "expected an object");
    std::string b64 = r.string_at(*it, path, "public_key");
    minisign::PublicKey pk;
    try {
      pk = minisign::parse_public_key(b64, std::string(source) + " " + path);
    } catch (const StatusError& e) {
      r.bad(path + ".public_key", e.what());
    }
    if (pk.key_id_hex() != it.key()) r.bad(path, "the key inside has id " + pk.key_id_hex() + ", not " + it.key());
    if (!seen_keys.insert(pk.key).second) r.bad(path, "the same public key is listed under two ids");
    root.keys.emplace(it.key(), pk);
  }
  const json& roles = r.object_at(s, "signed", "roles");
  root.root_role = parse_role(r, roles, "root", root.keys);
  root.index_role = parse_role(r, roles, "index", root.keys);
  root.signed_bytes = canonical(s, source);
  root.signatures = parse_entries(r.member(doc, "", "signatures"), source, KH_ERROR_BAD_METADATA);
  return root;
}

void verify_threshold(const std::map<std::string, minisign::PublicKey>& keys, const RoleKeys& role,
                      const char* role_name, const std::vector<SignatureEntry>& signatures, std::string_view message,
                      std::string_view what) {
  std::set<std::string> good;
  std::string why;
  for (size_t i = 0; i < signatures.size(); ++i) {
    const SignatureEntry& e = signatures[i];
    const std::string label =
        !e.origin.empty() ? e.origin : std::string(what) + " signature " + std::to_string(i + 1);
    try {
      minisign::Signature sig = minisign::parse_signature(e.sig, label);
      const std::string id = sig.key_id_hex();
      if (!e.keyid.empty() && e.keyid != id)
        fail(KH_ERROR_SIGNATURE, label + ": listed as by key " + printable(e.keyid) + " but made by key " + id);
      if (std::find(role.keyids.begin(), role.keyids.end(), id) == role.keyids.end())
        fail(KH_ERROR_SIGNATURE, label + ": made by key " + id + ", which is not a key of the " + role_name + " role");
      minisign::verify(keys.at(id), sig, message, label);
      good.insert(id);
    } catch (const StatusError& err) {
      why += "; ";
      why += err.what();
    }
  }
  if (good.size() < role.threshold)
    fail(KH_ERROR_SIGNATURE, std::string(what) + ": " + std::to_string(good.size()) + " valid signature(s) by " +
                                 role_name + " keys, " + std::to_string(role.threshold) + " needed" + why);
}

void verify_root_self_signed(const RootMetadata& root, std::string_view source) {
  verify_threshold(root.keys, root.root_role, "root", root.signatures, root.signed_bytes,
                   std::string(source) + " (root version " + std::to_string(root.version) + ", by its own root keys)");
}

void verify_root_update(const RootMetadata& trusted, const RootMetadata& next, std::string_view source) {
  if (next.version != trusted.version + 1)
    fail(KH_ERROR_BAD_METADATA, std::string(source) + ": holds root version " + std::to_string(next.version) +
                                    " where version " + std::to_string(trusted.version + 1) + " was expected");
  verify_threshold(trusted.keys, trusted.root_role, "root", next.signatures, next.signed_bytes,
                   std::string(source) + " (root version " + std::to_string(next.version) + ", by the root keys of version " +
                       std::to_string(trusted.version) + ")");
  verify_root_self_signed(next, source);
}

void verify_index_signatures(const RootMetadata& root, std::string_view index_bytes,
                             const std::vector<SignatureEntry>& signatures, std::string_view source) {
  verify_threshold(root.keys, root.index_role, "index", signatures, index_bytes,
                   std::string(source) + " (checked against root version " + std::to_string(root.version) + ")");
}

std::vector<SignatureEntry> parse_signature_list(std::string_view text, std::string_view source) {
  if (text.size() > kMaxSignatureFileBytes)
    fail(KH_ERROR_SIGNATURE, std::string(source) + ": larger than " + std::to_string(kMaxSignatureFileBytes) + " bytes");
  json doc = parse_json(text, source, KH_ERROR_SIGNATURE);
  if (!doc.is_object() || !doc.contains("signatures"))
    fail(KH_ERROR_SIGNATURE, std::string(source) + ": expected an object with a \"signatures\" array");
  return parse_entries(doc["signatures"], source, KH_ERROR_SIGNATURE);
}

std::string serialize_signature_list(const std::vector<SignatureEntry>& signatures) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& s : signatures) arr.push_back({{"keyid", s.keyid}, {"sig", s.sig}});
  return nlohmann::ordered_json{{"signatures", arr}}.dump(2) + "\n";
}

std::string make_root(const RootSpec& spec, const std::vector<minisign::SecretKey>& signers) {
  auto bad = [](const std::string& what) { fail(KH_ERROR_INVALID_ARGUMENT, "cannot make a root: " + what); };
  if (spec.version < 1) bad("version must be at least 1");
  if (spec.root_keys.empty() || spec.index_keys.empty()) bad("the root and index roles each need at least one key");
  if (spec.root_threshold < 1 || spec.root_threshold > spec.root_keys.size())
    bad("the root threshold must be between 1 and the number of root keys");
  if (spec.index_threshold < 1 || spec.index_threshold > spec.index_keys.size())
    bad("the index threshold must be between 1 and the number of index keys");
  json keys = json::object();
  for (const auto* list : {&spec.root_keys, &spec.index_keys})
    for (const auto& k : *list) {
      auto it = keys.find(k.key_id_hex());
      if (it != keys.end() && (*it)["public_key"] != k.base64()) bad("two different keys have id " + k.key_id_hex());
      keys[k.key_id_hex()] = json{{"public_key", k.base64()}};
    }
  json s{{"type", "root"},
         {"version", spec.version},
         {"expires", format_rfc3339_utc(spec.expires_unix)},
         {"keys", keys},
         {"roles", {{"root", role_json(spec.root_keys, spec.root_threshold)},
                    {"index", role_json(spec.index_keys, spec.index_threshold)}}}};
  const std::string bytes = s.dump();
  json sigs = json::array();
  for (const auto& k : signers) {
    std::string comment = "kh root version " + std::to_string(spec.version);
    sigs.push_back(json{{"keyid", k.public_key().key_id_hex()}, {"sig", minisign::sign(k, bytes, comment)}});
  }
  nlohmann::ordered_json doc;
  doc["signed"] = s;  // sorted, as signed; the pretty form below is only for people
  doc["signatures"] = sigs;
  std::string text = doc.dump(2) + "\n";
  parse_root(text, "the root being made");  // refuse what a reader would refuse
  return text;
}

std::string root_signed_bytes(std::string_view root_text, std::string_view source) {
  return parse_root(root_text, source).signed_bytes;
}

}  // namespace kh::registry
