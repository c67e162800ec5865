// The ops a package exports and their reference documentation. A package's kernel.json
// (kernels-src/<pkg>/kernel.json; kernels-src/README.md) declares them; `kernels pack` copies
// them into kh-manifest.json and `kernels publish` into each build's entry of the signed index,
// as the same JSON object per op:
//
//   { "name": "rms_norm", "schema": "rms_norm(Tensor(a!) out, ...) -> ()",
//     "summary": "One sentence.", "description": "Paragraphs, \n\n between them.",
//     "args": [ { "name": "out", "shape": "(..., hidden)", "dtypes": ["f32", "f16"], "doc": "..." } ],
//     "notes": ["..."], "errors": ["KH_ERROR_INVALID_ARGUMENT: ..."] }
//
// Everything but name and schema is optional (metadata written before kh carried op docs has
// none). Hub metadata is hostile, so the docs are parsed strictly and bounded: the sizes and
// counts below, every string printable UTF-8 (no control character; '\n' only in the
// multi-line fields: description, an argument's doc, notes, errors), dtypes from a fixed set.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kh::registry {

inline constexpr size_t kMaxOpsPerPackage = 1024;
inline constexpr size_t kMaxOpSummaryBytes = 512;
inline constexpr size_t kMaxOpDescriptionBytes = 16384;
inline constexpr size_t kMaxOpArgs = 64;
inline constexpr size_t kMaxOpArgNameBytes = 64;
inline constexpr size_t kMaxOpArgShapeBytes = 256;
inline constexpr size_t kMaxOpArgDocBytes = 4096;
inline constexpr size_t kMaxOpListItems = 64;       // notes, errors
inline constexpr size_t kMaxOpListItemBytes = 4096;
inline constexpr size_t kMaxPackageDescriptionBytes = 8192;

struct OpArgDoc {
  std::string name;                 // the schema's name of the argument
  std::string shape;                // tensors: e.g. "(..., hidden)"; empty for scalars
  std::vector<std::string> dtypes;  // tensors: f32 f16 bf16 f64 i32 i64 u8 i8 bool
  std::string doc;
};

struct OpDoc {
  std::string summary;      // one sentence: what the op computes
  std::string description;  // paragraphs separated by "\n\n"
  std::vector<OpArgDoc> args;
  std::vector<std::string> notes;   // rules a caller must know
  std::vector<std::string> errors;  // what is refused before launch, with which status
};

struct OpInfo {
  std::string name;
  std::string schema;
  std::optional<OpDoc> doc;  // absent: the metadata carries no docs for the op
};

// One of the dtype names op docs use: f32 f16 bf16 f64 i32 i64 u8 i8 bool.
bool is_op_dtype_name(std::string_view name);

// A package's kernel.json as `kernels pack` and `kernels docs` read it: its identity, its
// description and its ops with their docs. The "build" section (CMake's) is not read here.
// Stricter than hub metadata, since an author wrote it: unknown fields of an op or argument
// are refused (a misspelt "note" would vanish otherwise). Throws
// StatusError(KH_ERROR_BAD_METADATA) naming the file and the field.
struct PackageSource {
  std::string name, version, description;
  std::vector<OpInfo> ops;  // empty when the manifest declares none
  bool declares_ops = false;  // it has an "ops" array (an old manifest has none)
};
PackageSource parse_package_source(std::string_view json_text, std::string_view source);

}  // namespace kh::registry
