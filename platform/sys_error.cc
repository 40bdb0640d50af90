#include "platform/sys_error.h"

#include <cstring>

namespace stockade::platform {

std::string errnoName(int error) {
  const char* name = strerrorname_np(error);
  return name ? name : "errno " + std::to_string(error);
}

std::string SysError::message() const { return call + " failed: " + errnoName(error); }

}  // namespace stockade::platform
