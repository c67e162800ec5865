// Hub trust metadata (TUF-lite, see docs/trust.md): the versioned root of trust
// (root/<N>.root.json) and threshold signatures over it and over repo indexes. Pure
// functions over bytes: no hub, no cache (signed_metadata.hpp adds those).
//
// root/<N>.root.json:
// {
//   "signed": {
//     "type": "root", "version": N, "expires": "2027-01-01T00:00:00Z",
//     "keys":  { "<KEY ID>": { "public_key": "<minisign public key base64 line>" } },
//     "roles": { "root":  { "keyids": ["<KEY ID>", ...], "threshold": k },
//                "index": { "keyids": ["<KEY ID>", ...], "threshold": k } }
//   },
//   "signatures": [ { "keyid": "<KEY ID>", "sig": "<whole minisign signature text>" } ]
// }
// A KEY ID is minisign's: 16 uppercase hex digits, and must be the id inside the key.
// The bytes signed are canonical_json(signed): nlohmann::json's dump() of the parsed
// object (keys sorted, no whitespace, UTF-8 as is).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kh/registry/metadata_limits.hpp"  // kMaxRootBytes, kMaxSignatureFileBytes
#include "kh/registry/minisign.hpp"

namespace kh::registry {

struct RoleKeys {
  std::vector<std::string> keyids;  // each a key of the root, no duplicates
  uint32_t threshold = 1;           // 1 <= threshold <= keyids.size()
};

struct SignatureEntry {
  std::string keyid;   // empty: whichever key the signature names (a bare .minisig file)
  std::string sig;     // a whole minisign signature text
  std::string origin;  // where it came from, for messages (not serialized); may be empty
};

struct RootMetadata {
  uint64_t version = 0;
  std::string expires;
  int64_t expires_unix = 0;
  std::map<std::string, minisign::PublicKey> keys;  // by KEY ID
  RoleKeys root_role, index_role;
  std::string signed_bytes;  // canonical bytes of "signed": what every signature covers
  std::vector<SignatureEntry> signatures;
};

// Parses and checks the structure (types, key ids, roles, thresholds); verifies no
// signature. Throws StatusError(KH_ERROR_BAD_METADATA) naming source and field.
RootMetadata parse_root(std::string_view text, std::string_view source);

// Throws StatusError(KH_ERROR_SIGNATURE) unless at least `role.threshold` distinct keys of
// `role` (looked up in `keys`) made a valid signature over `message` among `signatures`.
// The message lists why each signature did not count. `what` names the signed object.
void verify_threshold(const std::map<std::string, minisign::PublicKey>& keys, const RoleKeys& role,
                      const char* role_name, const std::vector<SignatureEntry>& signatures, std::string_view message,
                      std::string_view what);

// A root the client has no earlier root for (the one it pins): signed by a threshold of
// its own root keys. Throws KH_ERROR_SIGNATURE.
void verify_root_self_signed(const RootMetadata& root, std::string_view source);
// `next` may follow `trusted`: version trusted+1, signed by a threshold of trusted's root
// keys and a threshold of its own. Throws KH_ERROR_SIGNATURE (or KH_ERROR_BAD_METADATA
// for a wrong version number).
void verify_root_update(const RootMetadata& trusted, const RootMetadata& next, std::string_view source);

// An index (exact bytes) signed by a threshold of root's index role.
void verify_index_signatures(const RootMetadata& root, std::string_view index_bytes,
                             const std::vector<SignatureEntry>& signatures, std::string_view source);

// index.json.sigs: {"signatures": [{"keyid": ..., "sig": ...}]} (extra index signatures
// when the index role's threshold is above 1). Throws KH_ERROR_SIGNATURE.
std::vector<SignatureEntry> parse_signature_list(std::string_view text, std::string_view source);
std::string serialize_signature_list(const std::vector<SignatureEntry>& signatures);

// What a new root says; the publisher side.
struct RootSpec {
  uint64_t version = 1;
  int64_t expires_unix = 0;
  std::vector<minisign::PublicKey> root_keys;
  uint32_t root_threshold = 1;
  std::vector<minisign::PublicKey> index_keys;
  uint32_t index_threshold = 1;
};
// A whole root file signed by every one of `signers` (checks nothing about thresholds;
// verify_root_* does). Throws KH_ERROR_INVALID_ARGUMENT for a malformed spec.
std::string make_root(const RootSpec& spec, const std::vector<minisign::SecretKey>& signers);

// The canonical bytes of a root file's "signed" object, e.g. to sign with the stock
// minisign tool: `kernels trust canonical root.json > r.bin && minisign -S -m r.bin`.
std::string root_signed_bytes(std::string_view root_text, std::string_view source);

}  // namespace kh::registry
