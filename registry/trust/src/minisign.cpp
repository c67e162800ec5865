// minisign key and signature files: strict parsing, formatting, signing and verification
// on top of crypto.hpp. See minisign.hpp for the formats.
#include "kh/registry/minisign.hpp"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <vector>

#include "crypto.hpp"
#include "kh/registry/printable.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry::minisign {
namespace {

constexpr std::string_view kUntrustedPrefix = "untrusted comment: ";
constexpr std::string_view kTrustedPrefix = "trusted comment: ";
constexpr size_t kMaxCommentLine = 1024;       // minisign's COMMENTMAXBYTES
constexpr size_t kMaxTrustedComment = 8192;    // minisign's TRUSTEDCOMMENTMAXBYTES
constexpr size_t kMaxFileBytes = 16 * 1024;    // far past any key or signature file
constexpr size_t kPublicKeyBytes = 2 + 8 + 32;
constexpr size_t kSignatureBytes = 2 + 8 + 64;
constexpr size_t kSecretKeyBytes = 2 + 2 + 2 + 32 + 8 + 8 + 8 + 64 + 32;

[[noreturn]] void bad(std::string_view source, const std::string& what) {
  fail(KH_ERROR_SIGNATURE, std::string(source) + ": " + printable(what, 4096));
}

// The file's lines without their '\n' (and a '\r' before it); trailing empty lines dropped.
std::vector<std::string_view> split_lines(std::string_view text, std::string_view source, const char* kind) {
  if (text.size() > kMaxFileBytes)
    bad(source, std::string("not a minisign ") + kind + ": larger than " + std::to_string(kMaxFileBytes) + " bytes");
  if (text.find('\0') != std::string_view::npos) bad(source, std::string("not a minisign ") + kind + ": it holds a NUL byte");
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view line = text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::string_view comment_line(std::string_view line, std::string_view prefix, size_t max, std::string_view source,
                              const std::string& which) {
  if (!starts_with(line, prefix))
    bad(source, "line " + which + " must start with '" + std::string(prefix) + "'; this is not a minisign file");
  if (line.size() > max) bad(source, "line " + which + " is longer than " + std::to_string(max) + " bytes");
  return line.substr(prefix.size());
}

std::string decode_line(std::string_view line, size_t expected, std::string_view source, const std::string& which) {
  std::string out;
  if (!base64_decode(line, &out)) bad(source, "line " + which + " is not valid base64");
  if (out.size() != expected)
    bad(source, "line " + which + " decodes to " + std::to_string(out.size()) + " bytes, not the " +
                    std::to_string(expected) + " a minisign " + (expected == kSignatureBytes ? "signature" : "key") +
                    " has");
  return out;
}

template <size_t N>
void copy_out(std::array<uint8_t, N>& dst, const std::string& src, size_t offset) {
  std::memcpy(dst.data(), src.data() + offset, N);
}

std::string_view as_view(const std::array<uint8_t, 64>& a) {
  return std::string_view(reinterpret_cast<const char*>(a.data()), a.size());
}

bool all_zero(const uint8_t* p, size_t n) {
  uint8_t acc = 0;
  for (size_t i = 0; i < n; ++i) acc |= p[i];
  return acc == 0;
}

// BLAKE2b-256(sig_alg || key id || seed || pk): minisign's secret-key checksum.
std::array<uint8_t, 32> secret_key_checksum(const SecretKey& key) {
  std::string buf = "Ed";
  buf.append(reinterpret_cast<const char*>(key.key_id.data()), 8);
  buf.append(reinterpret_cast<const char*>(key.seed.data()), 32);
  buf.append(reinterpret_cast<const char*>(key.public_key_bytes.data()), 32);
  std::array<uint8_t, 32> out{};
  crypto::blake2b(out.data(), out.size(), buf);
  crypto::cleanse(buf.data(), buf.size());
  return out;
}

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = (uint32_t(uint8_t(bytes[i])) << 16) | (uint32_t(uint8_t(bytes[i + 1])) << 8) | uint8_t(bytes[i + 2]);
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += kB64[v & 63];
  }
  size_t rest = bytes.size() - i;
  if (rest == 1) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += "==";
  } else if (rest == 2) {
    uint32_t v = (uint32_t(uint8_t(bytes[i])) << 16) | (uint32_t(uint8_t(bytes[i + 1])) << 8);
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

bool base64_decode(std::string_view text, std::string* out) {
  out->clear();
  if (text.size() % 4 != 0) return false;
  size_t pad = 0;
  if (!text.empty() && text.back() == '=') pad = (text.size() >= 2 && text[text.size() - 2] == '=') ? 2 : 1;
  out->reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    bool last = i + 4 == text.size();
    int v[4];
    for (int j = 0; j < 4; ++j) {
      bool is_pad = last && j >= 4 - static_cast<int>(pad);
      v[j] = is_pad ? 0 : b64_value(text[i + j]);
      if (v[j] < 0) return false;
    }
    uint32_t n = (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    out->push_back(static_cast<char>(n >> 16));
    if (!(last && pad == 2)) out->push_back(static_cast<char>((n >> 8) & 0xff));
    if (!(last && pad >= 1)) out->push_back(static_cast<char>(n & 0xff));
    // Canonical only: the bits that padding drops must be zero.
    if (last && pad == 2 && (n & 0xffff) != 0) return false;
    if (last && pad == 1 && (n & 0xff) != 0) return false;
  }
  return true;
}

std::string key_id_hex(const KeyId& id) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (int i = 7; i >= 0; --i) {
    out += kHex[id[i] >> 4];
    out += kHex[id[i] & 15];
  }
  return out;
}

std::string PublicKey::base64() const {
  std::string raw = "Ed";
  raw.append(reinterpret_cast<const char*>(key_id.data()), key_id.size());
  raw.append(reinterpret_cast<const char*>(key.data()), key.size());
  return base64_encode(raw);
}

std::string PublicKey::file_text() const {
  return std::string(kUntrustedPrefix) + "minisign public key " + key_id_hex() + "\n" + base64() + "\n";
}

SecretKey::~SecretKey() { crypto::cleanse(seed.data(), seed.size()); }

std::string SecretKey::file_text() const {
  std::string raw;
  raw.reserve(kSecretKeyBytes);
  raw += "Ed";
  raw.append(2, '\0');  // kdf: none (unencrypted)
  raw += "B2";
  raw.append(32 + 8 + 8, '\0');  // salt, opslimit, memlimit: unused without a kdf
  raw.append(reinterpret_cast<const char*>(key_id.data()), 8);
  raw.append(reinterpret_cast<const char*>(seed.data()), 32);
  raw.append(reinterpret_cast<const char*>(public_key_bytes.data()), 32);
  std::array<uint8_t, 32> chk = secret_key_checksum(*this);
  raw.append(reinterpret_cast<const char*>(chk.data()), chk.size());
  std::string text = std::string(kUntrustedPrefix) + "minisign secret key " + key_id_hex(key_id) +
                     " (unencrypted; keep this file private)\n" + base64_encode(raw) + "\n";
  crypto::cleanse(raw.data(), raw.size());
  return text;
}

SecretKey generate_key() {
  SecretKey key;
  crypto::random_bytes(key.key_id.data(), key.key_id.size());
  crypto::random_bytes(key.seed.data(), key.seed.size());
  key.public_key_bytes = crypto::ed25519_public_key(key.seed);
  return key;
}

PublicKey parse_public_key(std::string_view text, std::string_view source) {
  std::vector<std::string_view> lines = split_lines(text, source, "public key");
  std::string_view b64;
  if (lines.size() == 1) {
    b64 = lines[0];  // the base64 line alone, as `minisign -P` takes it
  } else if (lines.size() == 2) {
    comment_line(lines[0], kUntrustedPrefix, kMaxCommentLine, source, "1");
    b64 = lines[1];
  } else {
    bad(source, "not a minisign public key: expected an 'untrusted comment:' line and a base64 line, found " +
                    std::to_string(lines.size()) + " lines");
  }
  std::string raw = decode_line(b64, kPublicKeyBytes, source, lines.size() == 1 ? "1" : "2");
  if (raw.compare(0, 2, "Ed") != 0) bad(source, "not an Ed25519 minisign public key (its algorithm is not 'Ed')");
  PublicKey pk;
  copy_out(pk.key_id, raw, 2);
  copy_out(pk.key, raw, 10);
  return pk;
}

SecretKey parse_secret_key(std::string_view text, std::string_view source) {
  std::vector<std::string_view> lines = split_lines(text, source, "secret key");
  if (lines.size() != 2)
    bad(source, "not a minisign secret key: expected an 'untrusted comment:' line and a base64 line");
  comment_line(lines[0], kUntrustedPrefix, kMaxCommentLine, source, "1");
  std::string raw = decode_line(lines[1], kSecretKeyBytes, source, "2");
  struct Wipe {
    std::string& s;
    ~Wipe() { crypto::cleanse(s.data(), s.size()); }
  } wipe{raw};
  if (raw.compare(0, 2, "Ed") != 0) bad(source, "not an Ed25519 minisign secret key (its algorithm is not 'Ed')");
  if (raw.compare(2, 2, "Sc") == 0)
    bad(source, "an encrypted minisign secret key; kh reads only unencrypted keys. Sign with `minisign -S` "
                "instead, or make an unencrypted key with `kernels keys generate` (or `minisign -G -W`)");
  if (raw.compare(2, 2, std::string(2, '\0')) != 0) bad(source, "unknown key derivation algorithm in a minisign secret key");
  if (raw.compare(4, 2, "B2") != 0) bad(source, "unknown checksum algorithm in a minisign secret key");
  SecretKey key;
  size_t off = 2 + 2 + 2 + 32 + 8 + 8;
  copy_out(key.key_id, raw, off);
  copy_out(key.seed, raw, off + 8);
  copy_out(key.public_key_bytes, raw, off + 8 + 32);
  const uint8_t* chk = reinterpret_cast<const uint8_t*>(raw.data()) + off + 8 + 64;
  // minisign 0.11 leaves the checksum of an unencrypted key zero; newer ones fill it.
  std::array<uint8_t, 32> want = secret_key_checksum(key);
  if (!all_zero(chk, 32) && std::memcmp(chk, want.data(), 32) != 0)
    bad(source, "the secret key's checksum is wrong: the file is damaged");
  if (crypto::ed25519_public_key(key.seed) != key.public_key_bytes)
    bad(source, "the secret key's public half does not match its private half: the file is damaged");
  return key;
}

Signature parse_signature(std::string_view text, std::string_view source) {
  std::vector<std::string_view> lines = split_lines(text, source, "signature");
  if (lines.size() != 4)
    bad(source, "not a minisign signature: expected 4 lines (untrusted comment, signature, trusted comment, "
                "global signature), found " + std::to_string(lines.size()));
  Signature sig;
  sig.untrusted_comment = std::string(comment_line(lines[0], kUntrustedPrefix, kMaxCommentLine, source, "1"));
  std::string raw = decode_line(lines[1], kSignatureBytes, source, "2");
  if (raw.compare(0, 2, "Ed") == 0)
    bad(source, "a legacy minisign signature (algorithm 'Ed', over the unhashed file); kh accepts only prehashed "
                "signatures (algorithm 'ED'): sign again with a current minisign or kh");
  if (raw.compare(0, 2, "ED") != 0) bad(source, "unknown signature algorithm (not 'ED')");
  copy_out(sig.key_id, raw, 2);
  copy_out(sig.signature, raw, 10);
  sig.trusted_comment =
      std::string(comment_line(lines[2], kTrustedPrefix, kTrustedPrefix.size() + kMaxTrustedComment, source, "3"));
  std::string global = decode_line(lines[3], 64, source, "4");
  copy_out(sig.global_signature, global, 0);
  return sig;
}

void verify(const PublicKey& key, const Signature& sig, std::string_view message, std::string_view source) {
  if (sig.key_id != key.key_id)
    bad(source, "signed by key " + sig.key_id_hex() + ", not by the trusted key " + key.key_id_hex());
  crypto::Blake2b512 digest = crypto::blake2b_512(message);
  if (!crypto::ed25519_verify(key.key, sig.signature, as_view(digest)))
    bad(source, "the signature by key " + key.key_id_hex() +
                    " does not match the signed bytes: they were altered after signing (or signed by another key "
                    "with the same id)");
  std::string global(as_view(sig.signature));
  global += sig.trusted_comment;
  if (!crypto::ed25519_verify(key.key, sig.global_signature, global))
    bad(source, "the trusted comment of the signature by key " + key.key_id_hex() + " was altered");
}

std::string sign(const SecretKey& key, std::string_view message, std::string_view trusted_comment,
                 std::string_view untrusted_comment) {
  if (trusted_comment.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos ||
      trusted_comment.size() > kMaxTrustedComment)
    fail(KH_ERROR_INVALID_ARGUMENT, "minisign: a trusted comment must be one line of at most 8192 bytes");
  if (untrusted_comment.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos ||
      untrusted_comment.size() + kUntrustedPrefix.size() > kMaxCommentLine)
    fail(KH_ERROR_INVALID_ARGUMENT, "minisign: an untrusted comment must be one short line");
  crypto::Blake2b512 digest = crypto::blake2b_512(message);
  crypto::Ed25519Signature s = crypto::ed25519_sign(key.seed, as_view(digest));
  std::string raw = "ED";
  raw.append(reinterpret_cast<const char*>(key.key_id.data()), 8);
  raw.append(as_view(s));
  std::string global(as_view(s));
  global += trusted_comment;
  crypto::Ed25519Signature g = crypto::ed25519_sign(key.seed, global);
  return std::string(kUntrustedPrefix) + std::string(untrusted_comment) + "\n" + base64_encode(raw) + "\n" +
         std::string(kTrustedPrefix) + std::string(trusted_comment) + "\n" + base64_encode(as_view(g)) + "\n";
}

std::string default_trusted_comment(std::string_view file_name) {
  return "timestamp:" + std::to_string(static_cast<long long>(std::time(nullptr))) + "\tfile:" +
         std::string(file_name) + "\thashed";
}

}  // namespace kh::registry::minisign
