/* SPDX-License-Identifier: Apache-2.0 */
// The opaque replica group handle of wharf.h (experimental tier), shared by the API layer
// and the unit tests that build a group around an internal broadcaster.
#pragma once

#include <memory>

#include "replicas/rank_group.h"
#include "replicas/replica_group.h"

// Exactly one of the two is set: `g` for a group of one process, `rg` for a rank of a group
// spanning processes.
struct wharf_replica_group {
  std::shared_ptr<wharf::ReplicaGroup> g;
  std::shared_ptr<wharf::RankGroup> rg;
};
