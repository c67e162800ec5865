// Which backend serves a hub URL: one table of schemes, each row naming the constructors
// of a hub's read half (Hub) and write half (HubWriter). get, info, search, publish, trust
// and mirror all open hubs here, so a new backend is one file and one row
// (transport/src/hub_schemes.cpp), plus its tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kh/registry/fs.hpp"
#include "kh/registry/http_options.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/hub_writer.hpp"

namespace kh::registry {

// How uploads authenticate. Sent only to the hub's own origin: uploads follow no redirect.
struct WriteCredentials {
  std::string bearer;          // "Authorization: Bearer <bearer>"
  std::string user, password;  // HTTP basic auth, when user is not empty
};

// How kh authenticates to an OCI registry (reads and writes alike): a user and password
// (KH_REGISTRY_AUTH, or the `auths` of a Docker config.json) for Basic and for the token
// flow; or a bearer token for the registry itself (KH_TOKEN). Empty: anonymous.
struct RegistryCredentials {
  std::string user, password;
  std::string bearer;
};

// Everything opening a hub may need, gathered from the settings by the caller
// (install::Settings::hub_access): no backend reads the environment itself.
struct HubAccess {
  HttpOptions http;        // read token, CA bundle, deadlines, parallelism, progress line
  WriteCredentials write;  // uploads: publish, trust init|rotate, mirror
  LockPolicy locks;        // how a file hub's publish lock waits
  LeaseTiming lease;       // how the publish lock of a hub without locks (http, oci) is taken
  RegistryCredentials registry;              // oci:// hubs
  uint64_t upload_chunk_bytes = 16u << 20;   // oci:// pushes: larger blobs go up in chunks of this size
};

struct HubScheme {
  const char* scheme;   // "file", "http", ...
  const char* example;  // a URL of that form, for messages
  std::unique_ptr<Hub> (*open)(const std::string& url, const HubAccess& access);
  // nullptr: hubs of this scheme cannot be written to.
  std::unique_ptr<HubWriter> (*open_writer)(const std::string& url, const HubAccess& access);
};

// Every scheme kh knows, in the order messages list them.
const std::vector<HubScheme>& hub_schemes();

// The hub at url. Throws StatusError(KH_ERROR_INVALID_ARGUMENT) for a malformed URL or an
// unknown scheme (the message lists the known ones, with an example of each).
std::unique_ptr<Hub> open_hub(const std::string& url, const HubAccess& access);
// The same with the built-in defaults (no token, the system's CAs).
std::unique_ptr<Hub> open_hub(const std::string& url);
// The hub at url, to write to. The same errors, and KH_ERROR_UNSUPPORTED for a scheme
// that cannot be written to.
std::unique_ptr<HubWriter> open_hub_writer(const std::string& url, const HubAccess& access = {});

}  // namespace kh::registry
