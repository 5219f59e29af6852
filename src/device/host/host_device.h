/* SPDX-License-Identifier: Apache-2.0 */
// The host backend: "device" memory is host memory, and each stream is a worker thread that
// runs its work in order, so asynchronous semantics (a copy is not done until its event
// fires) hold exactly as on a GPU. It serves CPU deployments and lets every container,
// session and lease rule be tested without a GPU.
#pragma once

#include <memory>

#include "device/device.h"

namespace wharf {

Status create_host_device(const DeviceOptions& opts, std::shared_ptr<Device>* out);

}  // namespace wharf
