/* SPDX-License-Identifier: Apache-2.0 */
// The opaque replica group handle of wharf.h (experimental tier), shared by the API layer
// and the unit tests that build a group around an internal broadcaster.
#pragma once

#include <memory>

#include "replicas/replica_group.h"

struct wharf_replica_group {
  std::shared_ptr<wharf::ReplicaGroup> g;
};
