// oci:// hubs: a kh hub kept in one repository of an OCI registry (distribution spec
// v1.1; docs/hub.md, "A hub in an OCI registry"). oci://host[:port]/namespace is the
// repository <namespace> of https://host:port. Build archives are its blobs, under their
// sha256 digests; each metadata file is a layer of an artifact manifest reachable by tag:
//   kh-hub.json          tag kh-hub
//   catalog.json         tag catalog
//   root/<N>.root.json   tag root-<N>
//   repos/<o>/<n>/index.json, .minisig, .sigs
//                        tag index-<o>.<n>-<16 hex of sha256("<o>/<n>")>, one manifest: the
//                        index, its signatures and every build it names (so that the
//                        registry keeps them and `skopeo copy` of the tag moves them)
//   kh-publish.lease     tag kh-publish-lease
// Reads go through the shared HttpClient (retries, deadlines, Range resume, redirects to
// other hosts without credentials); writes are the spec's pushes: HEAD before upload,
// monolithic or chunked uploads closed with their digest, manifests checked against the
// digest the registry gives back.
#include <curl/curl.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "http_call.hpp"
#include "http_client.hpp"
#include "http_url.hpp"
#include "kh/registry/detail/internal.hpp"
#include "kh/registry/fs.hpp"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/json_limits.hpp"
#include "kh/registry/printable.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/sha256.hpp"
#include "kh/registry/status_error.hpp"
#include "oci_auth.hpp"
#include "publish_lease.hpp"

namespace kh::registry {
namespace {

constexpr const char* kManifestType = "application/vnd.oci.image.manifest.v1+json";
constexpr const char* kEmptyType = "application/vnd.oci.empty.v1+json";
constexpr const char* kEmptyConfig = "{}";
constexpr const char* kPackageType = "application/vnd.kh.package.v1.tar+zstd";
constexpr const char* kTitle = "org.opencontainers.image.title";
constexpr const char* kPathAnnotation = "dev.kh.path";  // the hub path a manifest holds
// An OCI image manifest (the registry's wrapping of one hub file), not kh's package manifest
// (kMaxPackageManifestBytes): 4 MiB is the distribution registry's own limit on what it stores.
constexpr uint64_t kMaxOciImageManifestBytes = 4u << 20;

using json = nlohmann::ordered_json;

// Where a metadata file of the hub lives in the registry.
struct OciFile {
  std::string tag;
  std::string title;       // the layer's file name
  std::string primary;     // the hub path the manifest is for (the index, for its signatures)
  std::string media_type;  // the layer's
  bool signature = false;  // an index's .minisig or .sigs: written with put_index
};

std::optional<OciFile> oci_file(const std::string& rel) {
  auto file = [&](std::string tag, std::string title, std::string type) {
    return OciFile{std::move(tag), std::move(title), rel, std::move(type), false};
  };
  if (rel == "kh-hub.json") return file("kh-hub", rel, "application/vnd.kh.hub.v1+json");
  if (rel == "catalog.json") return file("catalog", rel, "application/vnd.kh.catalog.v1+json");
  if (rel == detail::kPublishLeasePath) return file("kh-publish-lease", rel, "application/vnd.kh.lease.v1+json");
  const std::string root_suffix = ".root.json";
  if (rel.rfind("root/", 0) == 0 && rel.size() > 5 + root_suffix.size() &&
      rel.compare(rel.size() - root_suffix.size(), root_suffix.size(), root_suffix) == 0) {
    const std::string n = rel.substr(5, rel.size() - 5 - root_suffix.size());
    if (n.size() <= 18 && n.find_first_not_of("0123456789") == std::string::npos && n[0] != '0')
      return file("root-" + n, n + root_suffix, "application/vnd.kh.root.v1+json");
    return std::nullopt;
  }
  // repos/<org>/<name>/index.json[.minisig|.sigs]
  if (rel.rfind("repos/", 0) != 0) return std::nullopt;
  const size_t a = rel.find('/', 6), b = a == std::string::npos ? a : rel.find('/', a + 1);
  if (b == std::string::npos) return std::nullopt;
  const std::string org = rel.substr(6, a - 6), name = rel.substr(a + 1, b - a - 1), leaf = rel.substr(b + 1);
  const std::string index = "repos/" + org + "/" + name + "/index.json";
  OciFile f;
  // Tags are [A-Za-z0-9_][A-Za-z0-9._-]{0,127}: the names as they are, cut to fit, and a
  // digest of the exact repo so that no two repos share a tag.
  const std::string readable = (org + "." + name).substr(0, 80);
  f.tag = "index-" + readable + "-" + sha256_hex(org + "/" + name).substr(0, 16);
  f.primary = index;
  if (leaf == "index.json") {
    f.title = leaf;
    f.media_type = "application/vnd.kh.index.v1+json";
  } else if (leaf == "index.json.minisig") {
    f.title = leaf;
    f.media_type = "application/vnd.kh.minisign.v1";
    f.signature = true;
  } else if (leaf == "index.json.sigs") {
    f.title = leaf;
    f.media_type = "application/vnd.kh.signatures.v1+json";
    f.signature = true;
  } else {
    return std::nullopt;
  }
  return f;
}

struct Layer {
  std::string media_type, digest, title;
  uint64_t size = 0;
};

struct Manifest {
  std::string digest;  // sha256:<hex> of its bytes
  std::string path;    // its dev.kh.path annotation
  std::vector<Layer> layers;
  const Layer* find(const std::string& title) const {
    for (const Layer& l : layers)
      if (l.title == title) return &l;
    return nullptr;
  }
};

bool is_digest(const std::string& d) { return d.rfind("sha256:", 0) == 0 && is_sha256_hex(d.substr(7)); }

// A manifest as the registry sent it; throws KH_ERROR_BAD_METADATA naming what is wrong.
Manifest parse_manifest(const std::string& text, const std::string& source) {
  check_json_depth(text, source);
  Manifest m;
  m.digest = "sha256:" + sha256_hex(text);
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (j.value("schemaVersion", 0) != 2 || (j.contains("mediaType") && j["mediaType"] != kManifestType))
      fail(KH_ERROR_BAD_METADATA, source + " is not an OCI image manifest (schemaVersion 2, " + kManifestType + ")");
    if (j.contains("annotations") && j["annotations"].contains(kPathAnnotation))
      m.path = j["annotations"][kPathAnnotation].get<std::string>();
    for (const auto& l : j.at("layers")) {
      Layer layer;
      layer.media_type = l.at("mediaType").get<std::string>();
      layer.digest = l.at("digest").get<std::string>();
      layer.size = l.at("size").get<uint64_t>();
      if (l.contains("annotations") && l["annotations"].contains(kTitle)) layer.title = l["annotations"][kTitle].get<std::string>();
      if (!is_digest(layer.digest))
        fail(KH_ERROR_BAD_METADATA, source + ": layer digest '" + printable(layer.digest) + "' is not sha256:<64 hex>");
      m.layers.push_back(std::move(layer));
    }
  } catch (const nlohmann::json::exception& e) {
    fail(KH_ERROR_BAD_METADATA, source + " is not a manifest kh can read (" + printable(e.what()) + ")");
  }
  return m;
}

// Parses oci://host[:port]/namespace.
struct OciUrl {
  std::string url;         // normalised, as the hub is named
  std::string origin;      // https://host:port
  std::string repository;  // the namespace
  detail::UrlParts parts;
};

OciUrl parse_oci_url(const std::string& given) {
  const std::string url = detail::strip_slashes(given);
  auto fail_url = [&](const std::string& why) {
    fail(KH_ERROR_INVALID_ARGUMENT, "hub URL '" + sanitize_url(url) + "': " + why +
                                        "; an OCI registry hub is oci://host[:port]/namespace, e.g. oci://ghcr.io/org/kernels");
  };
  if (url.rfind("oci://", 0) != 0) fail_url("not an oci:// URL");
  auto parts = detail::parse_url("https://" + url.substr(6));
  if (!parts || parts->host.empty()) fail_url("no registry host");
  if (parts->has_user) fail_url("it carries credentials (use KH_REGISTRY_AUTH or a Docker config.json)");
  if (parts->has_query || parts->has_fragment) fail_url("it has a query or fragment");
  std::string repo = parts->path;
  while (!repo.empty() && repo.front() == '/') repo.erase(0, 1);
  if (repo.empty()) fail_url("no namespace (the repository that holds the hub)");
  // The distribution spec's repository names: [a-z0-9]+([._-][a-z0-9]+)* components joined by '/'.
  bool ok = repo.size() <= 200;
  bool start = true;
  for (size_t i = 0; ok && i < repo.size(); ++i) {
    const char c = repo[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (alnum) {
      start = false;
    } else if ((c == '.' || c == '_' || c == '-' || c == '/') && !start) {
      start = true;
    } else {
      ok = false;
    }
  }
  if (!ok || start) fail_url("namespace '" + printable(repo) + "' is not an OCI repository name (lowercase [a-z0-9] words joined by . _ - /)");
  OciUrl u;
  u.url = url;
  u.origin = parts->origin();
  u.repository = repo;
  u.parts = *parts;
  return u;
}

class OciHub final : public detail::HttpClientHub {
 public:
  OciHub(const OciUrl& u, const HttpOptions& options, std::shared_ptr<detail::HttpAuthorizer> auth)
      : HttpClientHub(u.url, u.parts, options, std::move(auth)), u_(u) {}

  // The file's manifest (the one just read for an index's signatures, so that an index and
  // its signatures always come from one manifest), then its layer, checked against its digest.
  MetadataFetch fetch_metadata_conditional(const std::string& rel, uint64_t max_bytes,
                                           const std::string& cached_etag) override {
    const std::optional<OciFile> f = oci_file(rel);
    if (!f) fail(KH_ERROR_NOT_FOUND, "hub " + url() + " has no '" + rel + "' (an OCI registry hub holds only kh's own files)");
    std::optional<Manifest> m;
    if (f->signature && last_ && last_tag_ == f->tag) {
      m = last_;
    } else {
      detail::GetResult got = get_manifest(f->tag, f->signature ? "" : cached_etag);
      if (got.fetch.not_modified) return got.fetch;
      m = parse_manifest(got.fetch.text, "tag " + f->tag + " of hub " + url());
      if (!got.docker_content_digest.empty() && got.docker_content_digest != m->digest)
        fail(KH_ERROR_VERIFICATION, "tag " + f->tag + " of hub " + url() + ": the registry says the manifest is " +
                                        printable(got.docker_content_digest) + " but sent " + m->digest);
      if (m->path != f->primary)
        fail(KH_ERROR_BAD_METADATA, "tag " + f->tag + " of hub " + url() + " holds '" + printable(m->path) + "', not '" +
                                        f->primary + "'; the registry's tags are not kh's: check the hub URL");
      last_ = m;
      last_tag_ = f->tag;
    }
    const Layer* layer = m->find(f->title);
    if (layer == nullptr) fail(KH_ERROR_NOT_FOUND, "hub " + url() + " has no '" + rel + "' (tag " + f->tag + " lacks it)");
    if (layer->size > max_bytes)
      fail(KH_ERROR_BAD_METADATA, "hub " + url() + ": '" + rel + "' is larger than the " + std::to_string(max_bytes) +
                                      " bytes allowed for it");
    MetadataFetch out;
    out.text = client_.get(blob_url(layer->digest.substr(7)), rel, layer->size, "").fetch.text;
    if ("sha256:" + sha256_hex(out.text) != layer->digest)
      fail(KH_ERROR_VERIFICATION, "hub " + url() + ": '" + rel + "' does not match its digest " + layer->digest +
                                      " in tag " + f->tag + "; the registry is damaged: report it to its operator");
    out.etag = m->digest;  // the manifest's digest: a 304 on it means the same files
    return out;
  }

  // The tag's manifest now, nullopt when there is none (for the writer).
  std::optional<Manifest> current_manifest(const std::string& tag) {
    try {
      detail::GetResult got = get_manifest(tag, "");
      return parse_manifest(got.fetch.text, "tag " + tag + " of hub " + url());
    } catch (const StatusError& e) {
      if (e.status() == KH_ERROR_NOT_FOUND) return std::nullopt;
      throw;
    }
  }
  void forget_manifests() { last_.reset(); }

  std::string blob_url(const std::string& sha256) const override {
    return u_.origin + "/v2/" + u_.repository + "/blobs/sha256:" + sha256;
  }
  std::string manifest_url(const std::string& reference) const {
    return u_.origin + "/v2/" + u_.repository + "/manifests/" + reference;
  }
  const OciUrl& where() const { return u_; }
  const HttpOptions& options() const { return client_.options(); }

 private:
  detail::GetResult get_manifest(const std::string& tag, const std::string& etag) {
    return client_.get(manifest_url(tag), "tag " + tag, kMaxOciImageManifestBytes, etag, kManifestType);
  }

  OciUrl u_;
  std::optional<Manifest> last_;
  std::string last_tag_;
};

// ---- Pushing ----

class OciHubWriter final : public HubWriter {
 public:
  OciHubWriter(const OciUrl& u, const HubAccess& access)
      : auth_(std::make_shared<detail::OciAuthorizer>(u.origin, "repository:" + u.repository + ":pull,push",
                                                      access.registry, access.http)),
        reader_(std::make_unique<OciHub>(u, access.http, auth_)),
        opt_(access.http),
        chunk_(std::max<uint64_t>(access.upload_chunk_bytes, 64 * 1024)),
        lease_(access.lease) {
    detail::global_init();
    easy_ = curl_easy_init();
    if (easy_ == nullptr) fail(KH_ERROR_OUT_OF_MEMORY, "libcurl: out of memory opening hub " + u.url);
  }
  ~OciHubWriter() override { curl_easy_cleanup(static_cast<CURL*>(easy_)); }
  OciHubWriter(const OciHubWriter&) = delete;
  OciHubWriter& operator=(const OciHubWriter&) = delete;

  const std::string& url() const override { return reader_->url(); }
  Hub& reader() override { return *reader_; }

  bool has_blob(const std::string& sha256, uint64_t size) override {
    detail::Call c;
    c.method = "HEAD";
    c.url = reader_->blob_url(sha256);
    const detail::Answer a = send(c, "HEAD blob sha256:" + sha256);
    if (a.status == 404) return false;
    expect(a, {200}, "HEAD blob sha256:" + sha256);
    const std::string digest = a.header("docker-content-digest");
    return a.content_length == static_cast<int64_t>(size) && (digest.empty() || digest == "sha256:" + sha256);
  }

  void put_blob(const std::string& sha256, uint64_t size, const std::string& archive_path) override {
    detail::CallBody body;
    body.file = archive_path;
    upload("sha256:" + sha256, body, size);
  }

  void put_metadata(const std::string& rel, const std::string& bytes) override {
    const std::optional<OciFile> f = oci_file(rel);
    if (!f) fail(KH_ERROR_INVALID_ARGUMENT, "hub " + url() + ": an OCI registry hub holds only kh's own files, not '" + rel + "'");
    if (f->signature || f->title == "index.json")
      fail(KH_ERROR_INTERNAL, "hub " + url() + ": '" + rel + "' is written with its index (HubWriter::put_index)");
    json layers = json::array({layer_of(bytes, f->media_type, f->title)});
    put_manifest(*f, f->media_type, std::move(layers));
  }

  void put_index(const std::string& repo, const std::string& index, const std::string& minisig,
                 const std::string& sigs) override {
    const std::string rel = repo_index_path(repo);
    const OciFile f = *oci_file(rel);
    json layers = json::array({layer_of(index, f.media_type, f.title)});
    if (!minisig.empty()) layers.push_back(layer_of(minisig, oci_file(rel + ".minisig")->media_type, "index.json.minisig"));
    if (!sigs.empty()) layers.push_back(layer_of(sigs, oci_file(rel + ".sigs")->media_type, "index.json.sigs"));
    // Every build the index names that the registry holds is a layer too: the registry
    // keeps what a manifest references (its garbage collector removes the rest), and a copy
    // of the tag moves them. (A mirror of some builds only names the others without them.)
    const RepoIndex parsed = parse_repo_index(index, "the index being written to " + url());
    for (const Release& r : parsed.releases)
      for (const VariantEntry& v : r.variants)
        if (has_blob(v.sha256, v.size))
          layers.push_back(json{{"mediaType", kPackageType},
                              {"digest", "sha256:" + v.sha256},
                              {"size", v.size},
                              {"annotations", {{kTitle, to_string(r.version) + "/" + v.key}}}});
    put_manifest(f, f.media_type, std::move(layers));
  }

  void remove_metadata(const std::string& rel) override {
    const std::optional<OciFile> f = oci_file(rel);
    if (!f) return;
    if (f->signature) fail(KH_ERROR_INTERNAL, "hub " + url() + ": '" + rel + "' is written with its index (put_index)");
    const std::optional<Manifest> m = reader_->current_manifest(f->tag);
    if (!m) return;
    detail::Call c;
    c.method = "DELETE";
    c.url = reader_->manifest_url(m->digest);
    const detail::Answer a = send(c, "DELETE tag " + f->tag);
    if (a.status == 405)
      fail(KH_ERROR_UNSUPPORTED, "hub " + url() + ": the registry does not allow deletes (distribution: "
                                                  "storage.delete.enabled); '" + rel + "' stays");
    if (a.status != 404) expect(a, {200, 202}, "DELETE tag " + f->tag);
    reader_->forget_manifests();
  }

  std::unique_ptr<PublishLock> lock_publishers(const std::string& who) override {
    return detail::acquire_lease(*this, who, lease_);
  }

 private:
  // One layer of bytes: uploaded unless the registry has it already.
  json layer_of(const std::string& bytes, const std::string& media_type, const std::string& title) {
    const std::string sha = sha256_hex(bytes);
    if (!has_blob(sha, bytes.size())) {
      detail::CallBody body;
      body.bytes = &bytes;
      upload("sha256:" + sha, body, bytes.size());
    }
    return json{{"mediaType", media_type}, {"digest", "sha256:" + sha}, {"size", bytes.size()},
                {"annotations", {{kTitle, title}}}};
  }

  void put_manifest(const OciFile& f, const std::string& artifact_type, json layers) {
    const std::string empty = kEmptyConfig;
    const std::string empty_sha = sha256_hex(empty);
    if (!has_blob(empty_sha, empty.size())) {
      detail::CallBody body;
      body.bytes = &empty;
      upload("sha256:" + empty_sha, body, empty.size());
    }
    const json manifest{{"schemaVersion", 2},
                        {"mediaType", kManifestType},
                        {"artifactType", artifact_type},
                        {"config", {{"mediaType", kEmptyType}, {"digest", "sha256:" + empty_sha}, {"size", empty.size()}}},
                        {"layers", std::move(layers)},
                        {"annotations", {{kPathAnnotation, f.primary}}}};
    const std::string text = manifest.dump();
    detail::Call c;
    c.method = "PUT";
    c.url = reader_->manifest_url(f.tag);
    c.headers = {std::string("Content-Type: ") + kManifestType};
    c.has_body = true;
    c.body.bytes = &text;
    c.body.length = text.size();
    const std::string what = "PUT tag " + f.tag + " (" + f.primary + ")";
    const detail::Answer a = send(c, what);
    expect(a, {200, 201}, what);
    const std::string digest = a.header("docker-content-digest");
    if (!digest.empty() && digest != "sha256:" + sha256_hex(text))
      fail(KH_ERROR_VERIFICATION, what + ": the registry stored manifest " + printable(digest) + ", not the one sent (sha256:" +
                                      sha256_hex(text) + ")");
    reader_->forget_manifests();
  }

  // The spec's push: POST an upload, then either PUT the whole body with its digest, or
  // PATCH it in chunks (each acknowledged with the range the registry holds) and close
  // with an empty PUT carrying the digest; the registry refuses a body whose digest differs.
  void upload(const std::string& digest, const detail::CallBody& body, uint64_t size) {
    const std::string what = "push of blob " + digest + " to " + url();
    detail::Call post;
    post.method = "POST";
    post.url = reader_->where().origin + "/v2/" + reader_->where().repository + "/blobs/uploads/";
    post.has_body = true;  // an empty body: Content-Length 0
    detail::Answer a = send(post, what + " (POST)");
    expect(a, {202}, what + " (POST)");
    std::string location = absolute(a.header("location"), what);
    if (size > chunk_) {
      for (uint64_t at = 0; at < size;) {
        const uint64_t n = std::min(chunk_, size - at);
        detail::Call patch;
        patch.method = "PATCH";
        patch.url = location;
        patch.headers = {"Content-Type: application/octet-stream",
                         "Content-Range: " + std::to_string(at) + "-" + std::to_string(at + n - 1)};
        patch.has_body = true;
        patch.body = slice(body, at, n);
        a = send(patch, what + " (PATCH)");
        expect(a, {202}, what + " (PATCH " + std::to_string(at) + "-" + std::to_string(at + n - 1) + ")");
        // The registry says what it holds: "0-<last byte>".
        if (a.header("range") != "0-" + std::to_string(at + n - 1))
          fail(KH_ERROR_NETWORK, what + ": after bytes " + std::to_string(at) + "-" + std::to_string(at + n - 1) +
                                     " the registry holds '" + printable(a.header("range")) + "'; try again");
        location = absolute(a.header("location"), what);
        at += n;
      }
    }
    detail::Call put;
    put.method = "PUT";
    put.url = location + (location.find('?') == std::string::npos ? "?" : "&") + "digest=" + digest;
    put.headers = {"Content-Type: application/octet-stream"};
    put.has_body = true;
    if (size <= chunk_) put.body = slice(body, 0, size);  // else an empty body closes the chunks
    a = send(put, what + " (PUT)");
    expect(a, {201}, what + " (PUT)");
    const std::string stored = a.header("docker-content-digest");
    if (!stored.empty() && stored != digest)
      fail(KH_ERROR_VERIFICATION, what + ": the registry stored " + printable(stored) + " instead");
  }

  // Bytes [at, at + n) of a body (a file's range, or bytes in memory).
  static detail::CallBody slice(const detail::CallBody& body, uint64_t at, uint64_t n) {
    detail::CallBody s = body;
    s.offset = body.offset + at;
    s.length = n;
    return s;
  }

  // A Location header made absolute (registries may send a path).
  std::string absolute(const std::string& location, const std::string& what) const {
    if (location.empty()) fail(KH_ERROR_NETWORK, what + ": the registry sent no Location for the upload");
    if (location.rfind("https://", 0) == 0 || location.rfind("http://", 0) == 0) {
      auto p = detail::parse_url(location);
      if (!p || p->origin() != reader_->where().origin)
        fail(KH_ERROR_NETWORK, what + ": the registry sends the upload to another host (" + sanitize_url(location) +
                                   "); kh uploads only to the registry itself");
      return location;
    }
    if (location[0] != '/') fail(KH_ERROR_NETWORK, what + ": the registry's upload Location '" + printable(location) + "' is not a URL");
    return reader_->where().origin + location;
  }

  // One request: the registry's authorization, renewed once or twice on a 401; retried with
  // backoff on connection failures, 408, 429 and 5xx.
  detail::Answer send(detail::Call call, const std::string& what) {
    const std::vector<std::string> headers = call.headers;
    int renewals = 0;
    for (int failures = 0;;) {
      call.headers = headers;
      const std::string authorization = auth_->authorization(call.url);
      if (!authorization.empty()) call.headers.push_back("Authorization: " + authorization);
      detail::Answer a = detail::perform_call(easy_, opt_, call);
      if (a.status == 401 && renewals < 2 && auth_->renew(call.url, a.header("www-authenticate"))) {
        ++renewals;
        continue;
      }
      if (a.status == 401 || a.status == 403)
        fail(KH_ERROR_NETWORK, what + ": HTTP " + std::to_string(a.status) + registry_error(a) + auth_->refused_hint());
      if (a.status != 0 && !detail::is_retryable_status(a.status)) return a;
      if (++failures >= opt_.max_attempts)
        fail(KH_ERROR_NETWORK, what + ": " + (a.status == 0 ? a.error : "HTTP " + std::to_string(a.status)) + " (" +
                                   std::to_string(failures) + " attempts); try again later");
      const int ms = std::min(opt_.backoff_max_ms, opt_.backoff_initial_ms << std::min(failures - 1, 16));
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
  }

  static void expect(const detail::Answer& a, std::initializer_list<long> ok, const std::string& what) {
    if (std::find(ok.begin(), ok.end(), a.status) != ok.end()) return;
    fail(KH_ERROR_NETWORK, what + ": unexpected HTTP " + std::to_string(a.status) + registry_error(a));
  }

  // The registry's own words ({"errors": [{"code", "message"}]}), if it sent any.
  static std::string registry_error(const detail::Answer& a) {
    try {
      check_json_depth(a.body, "the registry's answer", KH_ERROR_NETWORK);
      const nlohmann::json j = nlohmann::json::parse(a.body);
      const auto& e = j.at("errors").at(0);
      return " (" + printable(e.value("code", "")) + ": " + printable(e.value("message", ""), 300) + ")";
    } catch (...) {
      return "";
    }
  }

  std::shared_ptr<detail::OciAuthorizer> auth_;
  std::unique_ptr<OciHub> reader_;
  HttpOptions opt_;
  uint64_t chunk_;
  LeaseTiming lease_;
  void* easy_ = nullptr;
};

}  // namespace

std::unique_ptr<Hub> open_oci_hub(const std::string& url, const HubAccess& access) {
  const OciUrl u = parse_oci_url(url);
  if (!access.http.ca_bundle.empty() && !path_exists(access.http.ca_bundle))
    fail(KH_ERROR_INVALID_ARGUMENT, "CA bundle '" + access.http.ca_bundle + "' (KH_CA_BUNDLE) does not exist");
  auto auth = std::make_shared<detail::OciAuthorizer>(u.origin, "repository:" + u.repository + ":pull", access.registry,
                                                      access.http);
  return std::make_unique<OciHub>(u, access.http, std::move(auth));
}

std::unique_ptr<HubWriter> open_oci_hub_writer(const std::string& url, const HubAccess& access) {
  const OciUrl u = parse_oci_url(url);
  return std::make_unique<OciHubWriter>(u, access);
}

}  // namespace kh::registry

