// The most bytes kh reads of each kind of hub metadata (and of a package's manifest), defined
// here once. A hub that sends
// more is refused (KH_ERROR_BAD_METADATA) at the cap, so the time a server that drips just
// above the rate floor can hold one fetch is bounded by its cap over the transfer's rate
// (HttpOptions), never by a blob-sized cap. Each is sized from what real hubs hold, with a
// wide margin (docs/trust.md, "Limits on what a hub serves").
#pragma once

#include <cstdint>

namespace kh::registry {

// kh-hub.json: a protocol version and a name, a few hundred bytes.
inline constexpr uint64_t kMaxHubDescriptorBytes = 64u << 10;
// root/<N>.root.json: at most 256 keys (~110 bytes each) and 256 signatures (~450 bytes
// each) is ~150 KB; real roots are 1-3 KB.
inline constexpr uint64_t kMaxRootBytes = 256u << 10;
// index.json.minisig (~350 bytes) and index.json.sigs (at most 256 signatures, ~115 KB).
inline constexpr uint64_t kMaxSignatureFileBytes = 256u << 10;
// repos/<org>/<name>/index.json: each build's entry carries its package's op docs (the
// attention package's are ~24 KB); five builds a release and a hundred releases is ~12 MB.
inline constexpr uint64_t kMaxIndexBytes = 16u << 20;
// catalog.json: one line per repo (search only, never used to resolve).
inline constexpr uint64_t kMaxCatalogBytes = 16u << 20;
// kh-manifest.json, a package's manifest, wherever it is read: the first entry of an archive
// being unpacked or published, an unpacked tree in the cache, a rebuilt archive compared with
// the published one. One value for all, so a package the cache accepted is never refused when
// it is read back. It lists every file (at most ExtractLimits::max_entries, ~150 bytes each)
// with the package's op docs (~24 KB for attention): well under 1 MB in practice.
inline constexpr uint64_t kMaxPackageManifestBytes = 16u << 20;

}  // namespace kh::registry
