// The error type every internal layer throws: a kh_status plus a message that says what
// failed, on which input, and what to do. The C API maps it to a status and last-error.
#pragma once

#include <stdexcept>
#include <string>

#include "kh/status.h"

namespace kh {

class StatusError : public std::runtime_error {
 public:
  StatusError(kh_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  kh_status status() const noexcept { return status_; }

 private:
  kh_status status_;
};

[[noreturn]] inline void fail(kh_status status, const std::string& message) { throw StatusError(status, message); }

}  // namespace kh
