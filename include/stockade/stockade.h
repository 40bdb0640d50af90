// stockade: the one header a host application includes.
#pragma once

#include "stockade/error.h"
#include "stockade/manager.h"
#include "stockade/policy.h"
#include "stockade/process.h"
#include "stockade/rules.h"
#include "stockade/version.h"
#include "stockade/workspace.h"
#include "stockade/checkpoint.h"
#include "stockade/snapshot.h"
