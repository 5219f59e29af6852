// SPDX-License-Identifier: Apache-2.0
// What the GPU tests of a model's CUDA graphs share (model_graph_gpu_test.cpp,
// offload_model_gpu_test.cpp): each runs an eager copy of a model beside one replaying from
// graphs, and every update goes to both.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "constants/constant_map.h"
#include "models/model.h"

namespace wharf_test {

// The same update to the containers of `eager` and then `graph`: the values of `fqn` in
// `weights` scaled by `scale`, into the inactive generation and swapped, or in place. The
// scaled values end in `kept`, which the fixture holds until the test ends. A failure is
// fatal here and names `context`; callers see it through ASSERT_NO_FATAL_FAILURE or
// HasFatalFailure().
inline void scaled_update_both(const wharf::ConstantMap& weights, const std::string& fqn, float scale, bool in_place,
                               wharf::Model& eager, wharf::Model& graph, const std::string& context,
                               std::vector<std::unique_ptr<std::vector<float>>>* kept) {
  const wharf::MapEntry* e = weights.find(fqn);
  ASSERT_NE(e, nullptr) << fqn;
  auto values = std::make_unique<std::vector<float>>(e->meta.nbytes() / 4);
  std::memcpy(values->data(), e->data, e->meta.nbytes());
  for (float& x : *values) x *= scale;
  wharf::ConstantMap u;
  ASSERT_TRUE(u.set(fqn, e->meta, values->data()).ok());
  wharf::UpdateOptions uo;
  uo.in_place = in_place;
  for (wharf::Model* m : {&eager, &graph}) {
    wharf::Status st = m->container()->update(u, uo);
    ASSERT_TRUE(st.ok()) << context << ": " << st.message();
    if (!in_place) ASSERT_TRUE(m->container()->swap().ok()) << context;
  }
  kept->push_back(std::move(values));
}

}  // namespace wharf_test
