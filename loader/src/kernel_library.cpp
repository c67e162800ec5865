// dlopen + ABI negotiation of a kernel library; see kernel_library.hpp.
#include "kh/loader/kernel_library.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>
#include <mutex>
#include <vector>

#include "kh/registry/sha256.hpp"
#include "kh/registry/status_error.hpp"

namespace kh::loader {
namespace {

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

std::string descriptor_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// The device and inode of the file mapped at addr, from /proc/self/maps; false if none.
bool mapped_file_identity(const void* addr, dev_t* dev, ino_t* ino) {
  FILE* maps = std::fopen("/proc/self/maps", "re");
  if (maps == nullptr) return false;
  const auto target = reinterpret_cast<uintptr_t>(addr);
  char line[4096];
  bool found = false;
  while (!found && std::fgets(line, sizeof line, maps)) {
    unsigned long long start = 0, end = 0, inode = 0;
    unsigned major = 0, minor = 0;
    if (std::sscanf(line, "%llx-%llx %*s %*s %x:%x %llu", &start, &end, &major, &minor, &inode) == 5 &&
        target >= start && target < end) {
      *dev = makedev(major, minor);
      *ino = static_cast<ino_t>(inode);
      found = true;
    }
  }
  std::fclose(maps);
  return found;
}

// Is the object behind `handle` the file open at fd?
bool handle_is_file(void* handle, int fd) {
  struct stat st {};
  void* entry = ::dlsym(handle, KH_KERNEL_ENTRY_POINT);
  dev_t dev = 0;
  ino_t ino = 0;
  return entry != nullptr && ::fstat(fd, &st) == 0 && mapped_file_identity(entry, &dev, &ino) && dev == st.st_dev &&
         ino == st.st_ino;
}

// dlopen of an open descriptor. glibc knows loaded objects by name, and a name like
// /proc/self/fd/N stays attached to whatever object was loaded (or found again) through
// it even after N is closed and reused. So when the name is already known, check that it
// stands for our very file; if it stands for another, move our descriptor to a number
// whose name is free or ours, and try again.
void* dlopen_descriptor(int& fd, const std::string& path) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    void* known = ::dlopen(descriptor_path(fd).c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (known == nullptr) break;  // a fresh name: dlopen below opens our descriptor
    if (handle_is_file(known, fd)) return known;  // our file, loaded already: share it
    ::dlclose(known);
    const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
    if (moved < 0) fail(KH_ERROR_IO, "cannot duplicate the descriptor of " + path + ": " + std::strerror(errno));
    ::close(fd);
    fd = moved;
  }
  dlerror();
  void* handle = ::dlopen(descriptor_path(fd).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    fail(KH_ERROR_LOAD_FAILED, "cannot load kernel library " + path + ": " + (why ? why : "dlopen failed"));
  }
  // No identity check is needed here (it would read /proc/self/maps on every load): the
  // name was unknown to glibc a moment ago, and while we hold fd no other file can take
  // that name; glibc then either maps our descriptor or finds an object it already has
  // with the same device and inode, which is our very file.
  return handle;
}

// Files this process has already hashed, by identity. Any write to a file, or a chmod,
// moves its ctime, which no unprivileged process can set back, and a replaced file has
// another inode; so an unchanged identity means unchanged bytes, and a library loaded
// again need not be hashed again. Kept in this process's memory only: a stamp stored on
// disk could be forged by whoever can write the cache.
struct FileIdentity {
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime, ctime;
  bool operator==(const FileIdentity& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec && ctime.tv_sec == o.ctime.tv_sec && ctime.tv_nsec == o.ctime.tv_nsec;
  }
};

struct VerifiedFile {
  FileIdentity identity;
  std::string sha256;
};

std::mutex g_verified_mutex;
std::vector<VerifiedFile> g_verified;  // few entries: one per library a process loads

bool identity_of(int fd, FileIdentity* id) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return false;
  *id = FileIdentity{st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
  return true;
}

bool verified_before(int fd, const std::string& sha256) {
  FileIdentity id{};
  if (!identity_of(fd, &id)) return false;
  std::lock_guard<std::mutex> lock(g_verified_mutex);
  for (const auto& v : g_verified)
    if (v.identity == id && v.sha256 == sha256) return true;
  return false;
}

void remember_verified(int fd, const std::string& sha256) {
  FileIdentity id{};
  if (!identity_of(fd, &id)) return;
  std::lock_guard<std::mutex> lock(g_verified_mutex);
  for (auto& v : g_verified)
    if (v.identity.dev == id.dev && v.identity.ino == id.ino) {
      v = VerifiedFile{id, sha256};
      return;
    }
  g_verified.push_back(VerifiedFile{id, sha256});
}

bool nonempty(const char* s) { return s != nullptr && s[0] != '\0'; }

// Whether the module gives kh_op_ext entries (fields appended after ABI 1.0's descriptor).
bool has_op_ext(const kh_module_desc* m) {
  return m->struct_size >= offsetof(kh_module_desc, op_ext_stride) + sizeof(m->op_ext_stride) && m->op_ext != nullptr;
}

// Op i's extension, stepping by the library's stride (kh_op_ext may grow); NULL when none.
const kh_op_ext* op_ext_at(const kh_module_desc* m, uint32_t i) {
  if (!has_op_ext(m)) return nullptr;
  return reinterpret_cast<const kh_op_ext*>(reinterpret_cast<const char*>(m->op_ext) +
                                            static_cast<size_t>(i) * m->op_ext_stride);
}

void validate_module(const kh_module_desc* m, const std::string& path) {
  const std::string where = "kernel library " + path + ": ";
  if (m == nullptr) fail(KH_ERROR_LOAD_FAILED, where + "negotiation succeeded but returned no module descriptor");
  if (m->struct_size < KH_MODULE_DESC_SIZE_1_0)
    fail(KH_ERROR_LOAD_FAILED, where + "module descriptor struct_size " + std::to_string(m->struct_size) +
                                   " is smaller than ABI 1.0's " + std::to_string(KH_MODULE_DESC_SIZE_1_0));
  if (has_op_ext(m) && m->op_ext_stride < offsetof(kh_op_ext, workspace_arg) + sizeof(int32_t))
    fail(KH_ERROR_LOAD_FAILED, where + "op extension stride " + std::to_string(m->op_ext_stride) + " is too small");
  if (!nonempty(m->name) || !nonempty(m->version) || !nonempty(m->variant))
    fail(KH_ERROR_LOAD_FAILED, where + "module descriptor lacks a name, version or variant");
  if (m->num_ops > 0 && m->ops == nullptr) fail(KH_ERROR_LOAD_FAILED, where + "module declares ops but its op table is NULL");
  for (uint32_t i = 0; i < m->num_ops; ++i) {
    const kh_op_desc& op = m->ops[i];
    if (op.struct_size < sizeof(kh_op_desc) || !nonempty(op.name) || !nonempty(op.schema) || op.invoke == nullptr)
      fail(KH_ERROR_LOAD_FAILED, where + "op " + std::to_string(i) + " has an incomplete descriptor");
    for (uint32_t j = 0; j < i; ++j)
      if (std::strcmp(m->ops[j].name, op.name) == 0)
        fail(KH_ERROR_LOAD_FAILED, where + "op name '" + op.name + "' appears twice");
  }
}

}  // namespace

std::string abi_version_text(uint32_t version) {
  return std::to_string(KH_ABI_VERSION_GET_MAJOR(version)) + "." + std::to_string(KH_ABI_VERSION_GET_MINOR(version));
}

std::unique_ptr<KernelLibrary> KernelLibrary::open(const std::string& path, const std::string& expected_sha256) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0)
    fail(errno == ENOENT ? KH_ERROR_NOT_FOUND : KH_ERROR_IO,
         "cannot open kernel library " + path + ": " + std::strerror(errno));
  if (!expected_sha256.empty() && !verified_before(fd.get(), expected_sha256)) {
    const std::string actual = registry::sha256_fd_hex(fd.get());
    if (actual != expected_sha256)
      fail(KH_ERROR_VERIFICATION, "kernel library " + path + " has sha256 " + actual + " but its package manifest says " +
                                      expected_sha256 + "; the cached package was modified. Run `kernels cache verify`"
                                      " or remove the package from the cache and fetch it again");
    remember_verified(fd.get(), expected_sha256);
  }
  // Load the very file we hashed: the path through /proc names our open descriptor, so a
  // file swapped in at `path` meanwhile is not what gets loaded. The descriptor stays open
  // while the library is loaded: glibc knows a loaded object by its name, and a closed
  // number reused for the next library would make dlopen hand back this one.
  std::unique_ptr<KernelLibrary> lib(new KernelLibrary());
  lib->path_ = path;
  lib->fd_ = fd.release();
  lib->handle_ = dlopen_descriptor(lib->fd_, path);
  auto negotiate = reinterpret_cast<kh_kernel_negotiate_fn>(::dlsym(lib->handle_, KH_KERNEL_ENTRY_POINT));
  if (negotiate == nullptr)
    fail(KH_ERROR_LOAD_FAILED, "kernel library " + path + " exports no " KH_KERNEL_ENTRY_POINT
                               "(); it is not a kh kernel library (build it with kh_add_kernel_library)");

  kh_negotiation n{};
  n.struct_size = sizeof(n);
  n.loader_min_abi = kLoaderMinAbi;
  n.loader_max_abi = kLoaderMaxAbi;
  const kh_status status = negotiate(&n);
  const std::string loader_range = abi_version_text(kLoaderMinAbi) + " to " + abi_version_text(kLoaderMaxAbi);
  if (status != KH_OK)
    fail(KH_ERROR_ABI_MISMATCH, "kernel library " + path + " refused ABI negotiation (status " + std::to_string(status) +
                                    "): it speaks no kernel ABI in this loader's range " + loader_range +
                                    "; fetch a build of the package made for kernel ABI " +
                                    std::to_string(KH_ABI_VERSION_MAJOR) + ".x, or upgrade kh");
  if (n.kernel_abi < kLoaderMinAbi || n.kernel_abi > kLoaderMaxAbi ||
      KH_ABI_VERSION_GET_MAJOR(n.kernel_abi) != KH_ABI_VERSION_MAJOR)
    fail(KH_ERROR_ABI_MISMATCH, "kernel library " + path + " chose kernel ABI " + abi_version_text(n.kernel_abi) +
                                    ", outside this loader's range " + loader_range +
                                    "; use a build for kernel ABI " + std::to_string(KH_ABI_VERSION_MAJOR) + ".x or upgrade kh");
  validate_module(n.module, path);
  lib->module_ = n.module;
  lib->abi_version_ = n.kernel_abi;
  lib->ops_.reserve(n.module->num_ops);
  for (uint32_t i = 0; i < n.module->num_ops; ++i) {
    try {
      lib->ops_.push_back(make_checked_op(n.module->ops[i], n.module->device_type, op_ext_at(n.module, i)));
    } catch (const StatusError& e) {
      fail(KH_ERROR_LOAD_FAILED, "kernel library " + path + ": " + e.what());
    }
  }
  return lib;
}

KernelLibrary::~KernelLibrary() {
  if (handle_ != nullptr) ::dlclose(handle_);
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace kh::loader
