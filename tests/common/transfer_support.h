/* SPDX-License-Identifier: Apache-2.0 */
// What the transfer engine's host tests share (transfer_test, transfer_trace_test): a host
// device, an engine of given geometry, and a filled buffer.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "device/host/host_device.h"
#include "device/transfer.h"

namespace wharf {
namespace transfer_test {

constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;

inline std::shared_ptr<Device> host_device() {
  std::shared_ptr<Device> d;
  EXPECT_TRUE(create_host_device(DeviceOptions{}, &d).ok());
  return d;
}

// ramp: TransferOptions::ramp_start; tests that count fills or DMAs turn it off, so that every
// fill holds a whole chunk (transfer_trace_test checks the ramp).
inline std::unique_ptr<TransferEngine> make_engine(const std::shared_ptr<Device>& dev, uint32_t threads, uint64_t chunk,
                                                   uint64_t staging, uint64_t block, bool ramp) {
  TransferOptions o;
  o.threads = threads;
  o.chunk_bytes = chunk;
  o.staging_bytes = staging;
  o.block_bytes = block;
  o.ramp_start = ramp;
  std::unique_ptr<TransferEngine> e;
  Status st = TransferEngine::create(dev, o, &e);
  EXPECT_TRUE(st.ok()) << st.message();
  return e;
}

// A workspace buffer of `kind`, every byte `fill`.
inline Buffer alloc(const std::shared_ptr<Device>& dev, MemKind kind, uint64_t bytes, int fill = 0) {
  Buffer b;
  Status st = dev->allocate(kind, MemTag::kWorkspace, bytes, "test buffer", &b);
  EXPECT_TRUE(st.ok()) << st.message();
  if (b.data()) std::memset(b.data(), fill, bytes);
  return b;
}

}  // namespace transfer_test
}  // namespace wharf
