// The one way to make DerivedRules: derive() fills the parts, build() puts
// every list in canonical order (sorted, no duplicates).
#pragma once

#include "stockade/rules.h"

namespace stockade {

class RulesBuilder {
 public:
  DerivedRules::Filesystem fs;
  DerivedRules::Network net;
  std::vector<std::string> env;
  Limits limits;

  DerivedRules build() &&;
};

}  // namespace stockade
