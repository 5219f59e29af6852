/* SPDX-License-Identifier: Apache-2.0 */
// The model handle of wharf.h's experimental tier, shared by the model and model package
// functions (model_api.cpp, model_package_api.cpp).
#pragma once

#include <memory>

#include "api/handles.h"
#include "models/model.h"

struct wharf_model {
  std::shared_ptr<wharf::Model> m;
  wharf_container container;  // the borrowed handle wharf_model_container returns
};
