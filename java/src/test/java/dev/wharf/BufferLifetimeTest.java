// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import org.junit.Test;

/**
 * Issue 23, defect 2: a buffer a tensor gave out stays readable after its run or its
 * memory-mapped map is closed (it is a copy), instead of crashing the JVM. Each reproducer
 * runs in a child JVM ({@link BufferLifetimeChild}).
 */
public class BufferLifetimeTest {
  @Test
  public void aRunsBufferReadAfterTheRunIsClosed() throws Exception {
    ChildJvm.run(null, "dev.wharf.BufferLifetimeChild", 120, "run-closed").assertOk("run-closed");
  }

  @Test
  public void aMappedMapsBufferReadAfterTheMapIsClosed() throws Exception {
    ChildJvm.run(null, "dev.wharf.BufferLifetimeChild", 120, "map-closed").assertOk("map-closed");
  }
}
