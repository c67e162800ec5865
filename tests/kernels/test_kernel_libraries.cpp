// test_kernel_libraries.cpp: what every built kernel library promises the loader, checked on
// the files: the one export, no STB_GNU_UNIQUE symbols, only libc-family dependencies, the
// negotiation rule through the real entry point, an op table that is its kernel.json's; and
// that each fixture misbehaves exactly as its name says. The libraries are every package's
// (kernel_packages.hpp, generated from kernels-src's manifests).
#include <doctest/doctest.h>
#include <dlfcn.h>

#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernel_packages.hpp"
#include "kh/kernel_abi.h"
#include "kh/registry/fs.hpp"
#include "kh/registry/op_docs.hpp"

namespace {

const std::vector<const char*> kKernelLibs = [] {
  std::vector<const char*> libs;
  for (const KernelPackage& p : kKernelPackages) libs.push_back(p.library);
  return libs;
}();

// stdout of a command, or nullopt-like empty + ok=false when it cannot run.
std::string run(const std::string& cmd, bool* ok) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    *ok = false;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *ok = pclose(p) == 0;
  return out;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) v.push_back(l);
  return v;
}

struct Library {
  void* handle = nullptr;
  kh_kernel_negotiate_fn negotiate = nullptr;
  explicit Library(const char* path) {
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    INFO(path << ": " << (handle ? "" : dlerror()));
    REQUIRE(handle != nullptr);
    negotiate = reinterpret_cast<kh_kernel_negotiate_fn>(dlsym(handle, KH_KERNEL_ENTRY_POINT));
  }
  ~Library() {
    if (handle) dlclose(handle);
  }
  kh_status call(uint32_t lo, uint32_t hi, kh_negotiation* n) const {
    *n = kh_negotiation{};
    n->struct_size = sizeof *n;
    n->loader_min_abi = lo;
    n->loader_max_abi = hi;
    return negotiate(n);
  }
};

}  // namespace

TEST_CASE("kernel libraries export only kh_kernel_negotiate") {
  for (const char* path : kKernelLibs) {
    CAPTURE(path);
    bool ok = false;
    const std::string syms = run(std::string("nm -D --defined-only '") + path + "' 2>/dev/null", &ok);
    if (!ok) {
      MESSAGE("nm not available; skipped");
      return;
    }
    std::vector<std::string> exported;
    for (const std::string& l : lines(syms)) {
      std::istringstream f(l);
      std::string addr, type, name;
      f >> addr >> type >> name;
      if (type != "A") exported.push_back(name);  // "A": version nodes
    }
    CHECK(exported == std::vector<std::string>{"kh_kernel_negotiate"});
    const std::string dyn = run(std::string("readelf -W --dyn-syms '") + path + "'", &ok);
    CHECK(dyn.find("UNIQUE") == std::string::npos);
  }
}

TEST_CASE("kernel libraries need only the C runtime") {
  const std::set<std::string> allowed = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0",
                                         "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"};
  for (const char* path : kKernelLibs) {
    CAPTURE(path);
    bool ok = false;
    const std::string dyn = run(std::string("readelf -d '") + path + "' 2>/dev/null", &ok);
    if (!ok) {
      MESSAGE("readelf not available; skipped");
      return;
    }
    // Sanitizer builds link the shared C++ runtime (see KhKernelLibrary.cmake).
    const bool sanitized = dyn.find("[libasan") != std::string::npos;
    for (const std::string& l : lines(dyn)) {
      if (l.find("(NEEDED)") == std::string::npos) continue;
      const size_t a = l.find('['), b = l.find(']');
      const std::string lib = l.substr(a + 1, b - a - 1);
      CAPTURE(lib);
      const bool sanitizer = lib.rfind("libasan", 0) == 0 || lib.rfind("libubsan", 0) == 0 ||
                             (sanitized && (lib == "libstdc++.so.6" || lib == "libgcc_s.so.1"));
      CHECK((allowed.count(lib) == 1 || sanitizer));
    }
  }
}

TEST_CASE("kernel libraries negotiate ABI 1.x only") {
  for (const char* path : kKernelLibs) {
    CAPTURE(path);
    Library lib(path);
    REQUIRE(static_cast<bool>(lib.negotiate));
    kh_negotiation n;
    REQUIRE(lib.call(KH_ABI_VERSION, KH_ABI_VERSION, &n) == KH_OK);
    CHECK(n.kernel_abi == KH_ABI_VERSION);
    REQUIRE(n.module != nullptr);
    CHECK(n.module->abi_version == KH_ABI_VERSION);
    CHECK(n.module->device_type == kDLCPU);
    CHECK(std::string(n.module->variant) == KH_EXPECTED_CPU_VARIANT);
    CHECK(n.module->num_ops >= 1);
    for (uint32_t i = 0; i < n.module->num_ops; ++i) {
      const kh_op_desc& op = n.module->ops[i];
      CHECK(op.struct_size == sizeof(kh_op_desc));
      CHECK(static_cast<bool>(op.invoke));
      CHECK(op.arg_constraints != nullptr);
      CHECK(std::string(op.schema).rfind(std::string(op.name) + "(", 0) == 0);
    }
    CHECK(lib.call(KH_MAKE_ABI_VERSION(1, 0), KH_MAKE_ABI_VERSION(1, 9), &n) == KH_OK);
    CHECK(lib.call(KH_MAKE_ABI_VERSION(2, 0), KH_MAKE_ABI_VERSION(2, 3), &n) == KH_ERROR_ABI_MISMATCH);
    CHECK(n.module == nullptr);
    CHECK(lib.negotiate(nullptr) == KH_ERROR_INVALID_ARGUMENT);
    n = kh_negotiation{};
    n.struct_size = 8;  // a loader whose struct ends before the out fields
    n.loader_min_abi = n.loader_max_abi = KH_ABI_VERSION;
    CHECK(lib.negotiate(&n) == KH_ERROR_ABI_MISMATCH);
  }
}

// The schema strings of kernel.json and of the op table must not drift (kernels pack refuses a
// library whose table differs; a package built by kh_add_kernel_package takes its table from
// the manifest): checked here on every package, converted or not.
TEST_CASE("each library's op table is its kernel.json's ops") {
  for (const KernelPackage& p : kKernelPackages) {
    CAPTURE(p.dir);
    const kh::registry::PackageSource src =
        kh::registry::parse_package_source(kh::registry::read_file(p.manifest, 1u << 20), p.manifest);
    if (!src.declares_ops) {
      MESSAGE(p.manifest << " declares no ops yet; its op table is not compared");
      continue;
    }
    Library lib(p.library);
    kh_negotiation n;
    REQUIRE(lib.call(KH_ABI_VERSION, KH_ABI_VERSION, &n) == KH_OK);
    REQUIRE(n.module->num_ops == src.ops.size());
    for (uint32_t i = 0; i < n.module->num_ops; ++i) {
      CAPTURE(i);
      CHECK(std::string(n.module->ops[i].name) == src.ops[i].name);
      CHECK(std::string(n.module->ops[i].schema) == src.ops[i].schema);
    }
  }
}

TEST_CASE("fixtures misbehave as named") {
  kh_negotiation n;
  SUBCASE("wrong_abi speaks 2.0 and refuses 1.x") {
    Library lib(KH_FIXTURE_WRONG_ABI);
    REQUIRE(static_cast<bool>(lib.negotiate));
    CHECK(lib.call(KH_ABI_VERSION, KH_ABI_VERSION, &n) == KH_ERROR_ABI_MISMATCH);
    CHECK(n.kernel_abi == KH_MAKE_ABI_VERSION(2, 0));
    CHECK(n.module == nullptr);
    CHECK(lib.call(KH_MAKE_ABI_VERSION(2, 0), KH_MAKE_ABI_VERSION(2, 0), &n) == KH_OK);
  }
  SUBCASE("newer_minor claims 1.9 to a 1.0 loader") {
    Library lib(KH_FIXTURE_NEWER_MINOR);
    REQUIRE(static_cast<bool>(lib.negotiate));
    CHECK(lib.call(KH_MAKE_ABI_VERSION(1, 0), KH_MAKE_ABI_VERSION(1, 0), &n) == KH_OK);
    CHECK(n.kernel_abi == KH_MAKE_ABI_VERSION(1, 9));
    REQUIRE(n.module != nullptr);
    CHECK(n.module->abi_version == KH_MAKE_ABI_VERSION(1, 9));
  }
  SUBCASE("null_module answers OK without a module") {
    Library lib(KH_FIXTURE_NULL_MODULE);
    REQUIRE(static_cast<bool>(lib.negotiate));
    CHECK(lib.call(KH_ABI_VERSION, KH_ABI_VERSION, &n) == KH_OK);
    CHECK(n.module == nullptr);
  }
  SUBCASE("no_entry has no entry point") {
    Library lib(KH_FIXTURE_NO_ENTRY);
    CHECK(!lib.negotiate);
    CHECK(dlsym(lib.handle, "kh_fixture_not_an_entry_point") != nullptr);
  }
}
