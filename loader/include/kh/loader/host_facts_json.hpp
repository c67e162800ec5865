// Host facts as JSON: what `kernels doctor --json` prints as "host", and what a test
// describes a machine with (KH_TEST_HOST_FACTS, in KH_TEST_HOOKS builds).
//   {"cpu": "x86_64", "os": "linux", "x86_isa_level": 3, "glibc": "2.36",
//    "cuda_driver": "13.0", "cuda_status": "...", "rocm": "6.2", "rocm_status": "...",
//    "gpus": [{"backend": "cuda", "index": 0, "name": "NVIDIA H100", "arch": "sm90"}, ...]}
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "kh/loader/host_facts.hpp"

namespace kh::loader {

nlohmann::json host_facts_json(const HostFacts& facts);
// Throws StatusError(KH_ERROR_INVALID_ARGUMENT) naming `source` and the field. A GPU's
// major/minor come from its arch; status texts default to a summary of the GPUs given.
HostFacts host_facts_from_json(const nlohmann::json& doc, const std::string& source);

}  // namespace kh::loader
