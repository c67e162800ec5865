// What every Hub shares: rewinding a resumed download, fetching a file that may be absent.
#include <unistd.h>

#include <cerrno>

#include "kh/registry/detail/internal.hpp"
#include "kh/registry/hub.hpp"
#include "kh/registry/hub_writer.hpp"
#include "kh/registry/repo_index.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::registry {

void Hub::rewind_for_restart(const BlobRequest& b) {
  const off_t end = ::lseek(b.out_fd, 0, SEEK_CUR);
  const off_t start = end - static_cast<off_t>(b.resume_from);
  if (end < 0 || start < 0 || ::ftruncate(b.out_fd, start) != 0 || ::lseek(b.out_fd, start, SEEK_SET) != start)
    detail::fail_errno("cannot rewind the partial download of sha256:" + b.sha256, errno);
}

std::optional<std::string> fetch_metadata_if_present(Hub& hub, const std::string& relative_path, uint64_t max_bytes) {
  try {
    return hub.fetch_metadata(relative_path, max_bytes);
  } catch (const StatusError& e) {
    if (e.status() == KH_ERROR_NOT_FOUND) return std::nullopt;
    throw;
  }
}

void HubWriter::put_index(const std::string& repo, const std::string& index, const std::string& minisig,
                          const std::string& sigs) {
  const std::string rel = repo_index_path(repo);
  if (sigs.empty())
    remove_metadata(rel + ".sigs");
  else
    put_metadata(rel + ".sigs", sigs);
  if (minisig.empty())
    remove_metadata(rel + ".minisig");  // a signature of the old index would not verify the new one
  else
    put_metadata(rel + ".minisig", minisig);
  put_metadata(rel, index);
}

}  // namespace kh::registry
