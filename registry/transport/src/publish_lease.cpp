// The publish lease of hubs without a lock; see publish_lease.hpp and docs/hub.md ("Two
// publishers"). Fischer's algorithm: read the lease; when there is none (or a stale one),
// write ours, and only if that write completed within settle_s of the read, wait longer
// than settle_s and read again. If ours is still there, every other publisher that found
// the hub free wrote before our second read (their writes are bounded the same way), so
// none of them holds it: the lease is ours alone.
#include "publish_lease.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "kh/registry/detail/internal.hpp"
#include "kh/registry/json_limits.hpp"
#include "kh/registry/printable.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry::detail {
namespace {

constexpr uint64_t kMaxLeaseBytes = 4096;
// A lease is stale this long after its own expiry: room for clocks that differ a little.
constexpr int64_t kStaleMarginS = 60;

struct Lease {
  std::string owner, token;
  int64_t taken = 0, expires = 0;
};

// A lease is given back by writing it released, not by deleting it: not every hub allows
// deletes (an OCI registry may not).
std::string lease_text(const Lease& l, bool released) {
  nlohmann::json j{{"owner", l.owner}, {"token", l.token}, {"taken", l.taken}, {"expires", l.expires}};
  if (released) j["released"] = true;
  return j.dump() + "\n";
}

int64_t unix_now() { return static_cast<int64_t>(std::time(nullptr)); }

std::string when(int64_t t) { return format_rfc3339_utc(t); }

// The lease in the hub, nullopt when there is none. A lease that is not one of ours (not
// JSON of the shape below) is reported, never silently taken over.
std::optional<Lease> read_lease(HubWriter& hub) {
  const std::optional<std::string> found = fetch_metadata_if_present(hub.reader(), kPublishLeasePath, kMaxLeaseBytes);
  if (!found) return std::nullopt;
  const std::string& text = *found;
  try {
    check_json_depth(text, kPublishLeasePath, KH_ERROR_BAD_METADATA);
    const nlohmann::json j = nlohmann::json::parse(text);
    Lease l;
    l.owner = j.at("owner").get<std::string>();
    l.token = j.at("token").get<std::string>();
    l.taken = j.at("taken").get<int64_t>();
    l.expires = j.at("expires").get<int64_t>();
    if (j.value("released", false)) return std::nullopt;  // given back: the hub is free
    return l;
  } catch (const nlohmann::json::exception&) {
    fail(KH_ERROR_BAD_METADATA, "hub " + hub.url() + ": " + kPublishLeasePath + " is not a kh publish lease ('" +
                                    printable(text, 200) + "'); remove it if no publish is running");
  }
}

class HeldLease final : public PublishLock {
 public:
  HeldLease(HubWriter& hub, Lease lease) : hub_(hub), lease_(std::move(lease)) {}
  ~HeldLease() override {
    try {  // best effort: a lease left behind expires by itself
      std::optional<Lease> now = read_lease(hub_);
      if (now && now->token == lease_.token) hub_.put_metadata(kPublishLeasePath, lease_text(lease_, true));
    } catch (...) {
    }
  }
  void check_held() override {
    std::optional<Lease> now = read_lease(hub_);
    if (!now || now->token != lease_.token)
      fail(KH_ERROR_NETWORK, "publish to " + hub_.url() + ": the publish lease is no longer ours (" +
                                 (now ? "taken by " + printable(now->owner) : std::string("removed")) +
                                 "); nothing more was written: publish again");
    if (unix_now() >= lease_.expires)
      fail(KH_ERROR_NETWORK, "publish to " + hub_.url() + ": the publish lease ran out (at " + when(lease_.expires) +
                                 ") before the publish finished; nothing more was written: publish again");
  }

 private:
  HubWriter& hub_;
  Lease lease_;
};

}  // namespace

std::unique_ptr<PublishLock> acquire_lease(HubWriter& hub, const std::string& who, const LeaseTiming& timing) {
  using clock = std::chrono::steady_clock;
  auto secs = [](double s) { return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(s)); };
  const auto give_up_at = clock::now() + secs(timing.wait_s);
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> jitter(0.2, 1.0);
  Lease mine;
  mine.owner = who;
  mine.token = random_hex(16);
  bool told = false;
  for (;;) {
    const auto read_at = clock::now();
    std::optional<Lease> held = read_lease(hub);
    const bool stale = held && unix_now() > held->expires + kStaleMarginS;
    if (held && held->token != mine.token && !stale) {
      if (clock::now() >= give_up_at)
        fail(KH_ERROR_NETWORK, "publish to " + hub.url() + ": another publisher (" + printable(held->owner) +
                                   ") has held the hub's publish lease since " + when(held->taken) + " (until " +
                                   when(held->expires) + "); waited " + std::to_string(static_cast<int>(timing.wait_s)) +
                                   " s. Publish again once it is done; if no publish is running, remove " + hub.url() +
                                   "/" + kPublishLeasePath + " (it also expires by itself)");
      if (!told) {
        told = true;
        std::fprintf(stderr, "kh: waiting for the publish lease of %s, held by %s since %s\n", hub.url().c_str(),
                     printable(held->owner).c_str(), when(held->taken).c_str());
      }
      std::this_thread::sleep_for(secs(jitter(rng)));
      continue;
    }
    if (stale)
      std::fprintf(stderr, "kh: taking over the stale publish lease of %s (held by %s, expired %s)\n",
                   hub.url().c_str(), printable(held->owner).c_str(), when(held->expires).c_str());
    mine.taken = unix_now();
    mine.expires = mine.taken + static_cast<int64_t>(timing.ttl_s);
    hub.put_metadata(kPublishLeasePath, lease_text(mine, false));
    if (clock::now() - read_at > secs(timing.settle_s)) {
      // Too slow to be sure no one else found the hub free meanwhile: read it again.
      std::this_thread::sleep_for(secs(timing.settle_s * jitter(rng)));
      continue;
    }
    std::this_thread::sleep_for(secs(timing.settle_s * 1.25));
    std::optional<Lease> now = read_lease(hub);
    if (now && now->token == mine.token) return std::make_unique<HeldLease>(hub, mine);
    // Another publisher's lease replaced ours: it holds the hub; wait for it as above.
  }
}

}  // namespace kh::registry::detail
