// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static dev.wharf.TestSupport.assertClosed;
import static dev.wharf.TestSupport.assertWharfError;
import static dev.wharf.TestSupport.floats;
import static dev.wharf.TestSupport.hostRuntime;
import static dev.wharf.TestSupport.readFloats;
import static dev.wharf.TestSupport.readLongs;
import static dev.wharf.TestSupport.writeState;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Collections;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * {@link Session}: per-session state over shared weights. On the host backend a state's
 * storage is host memory; the tests write it through its address as a run's host "kernel"
 * would ({@link TestSupport#writeState}) and read it back with {@link Run#read}.
 */
public class SessionTest {
  private static final float[] KV_INITIAL = {1f, 2f, 3f, 4f};
  private static final float[] ZEROS = new float[4];

  private WharfRuntime runtime;
  private Container model; // constant w; states kv F32[4] (KV_INITIAL) and pos I64 (zeros)

  @Before
  public void setUp() {
    runtime = hostRuntime();
    model = container("lm", ContainerOptions.builder().state("kv", KV_INITIAL, 4).state("pos", DType.I64));
  }

  @After
  public void tearDown() {
    model.close();
    runtime.close();
  }

  /** A container with constant w = [1, 2] and the states of {@code options}. */
  private Container container(String name, ContainerOptions.Builder options) {
    try (ConstantMap map = ConstantMap.create()) {
      map.put("w", new float[] {1f, 2f}, 2);
      return Container.fromMap(runtime, map, name, options.build());
    }
  }

  @Test
  public void runResolvesConstantsAndTheSessionsState() {
    try (Session session = Session.create(runtime, model)) {
      assertSame(runtime, session.runtime());
      assertEquals(Arrays.asList(model), session.containers());
      assertEquals(16 + 8, session.stateBytes());
      try (Run run = model.beginRun(session)) {
        assertSame(session, run.session());
        assertArrayEquals(new float[] {1f, 2f}, floats(run.tensor("w")), 0f);
        TensorView kv = run.tensor("kv");
        assertEquals(DType.F32, kv.dtype());
        assertArrayEquals(new long[] {4}, kv.shape());
        assertEquals(DeviceType.CPU, kv.deviceType());
        assertNotEquals(0, kv.address());
        assertArrayEquals(KV_INITIAL, readFloats(run, "kv"), 0f);
        TensorView pos = run.tensor("pos");
        assertEquals(DType.I64, pos.dtype());
        assertEquals(0, pos.ndim());
        assertArrayEquals(new long[] {0}, readLongs(run, "pos"));
        assertWharfError(WharfException.Code.NOT_FOUND, () -> run.tensor("nope"), "nope");
      }
    }
  }

  @Test
  public void twoSessionsAreIsolated() {
    try (Session a = Session.create(runtime, model); Session b = Session.create(runtime, model)) {
      long aKv;
      try (Run run = model.beginRun(a)) {
        aKv = run.tensor("kv").address();
        writeState(run, "kv", new float[] {10f, 20f, 30f, 40f});
        writeState(run, "pos", new long[] {7});
      }
      try (Run run = model.beginRun(b)) {
        assertNotEquals(aKv, run.tensor("kv").address());
        assertArrayEquals(KV_INITIAL, readFloats(run, "kv"), 0f);
        assertArrayEquals(new long[] {0}, readLongs(run, "pos"));
        writeState(run, "kv", new float[] {-1f, -2f, -3f, -4f});
      }
      try (Run run = model.beginRun(a)) { // a's state persists across its runs
        assertEquals(aKv, run.tensor("kv").address());
        assertArrayEquals(new float[] {10f, 20f, 30f, 40f}, readFloats(run, "kv"), 0f);
        assertArrayEquals(new long[] {7}, readLongs(run, "pos"));
      }
    }
  }

  @Test
  public void sharedStateFqnAcrossContainersIsOneBuffer() {
    // prefill and decode share kv; decode also has its own step. The first container's
    // initial value is the session's.
    try (Container prefill = container("prefill", ContainerOptions.builder().state("kv", KV_INITIAL, 4));
         Container decode = container("decode", ContainerOptions.builder().state("kv", DType.F32, 4)
             .state("step", DType.I64));
         Session chat = Session.create(runtime, prefill, decode)) {
      assertEquals(16 + 8, chat.stateBytes()); // kv once
      long kv;
      try (Run run = prefill.beginRun(chat)) {
        kv = run.tensor("kv").address();
        assertArrayEquals(KV_INITIAL, readFloats(run, "kv"), 0f);
        writeState(run, "kv", new float[] {5f, 6f, 7f, 8f});
      }
      try (Run run = decode.beginRun(chat)) {
        assertEquals(kv, run.tensor("kv").address());
        assertArrayEquals(new float[] {5f, 6f, 7f, 8f}, readFloats(run, "kv"), 0f);
        assertArrayEquals(new long[] {0}, readLongs(run, "step"));
      }
      try (Session reversed = Session.create(runtime, decode, prefill); Run run = prefill.beginRun(reversed)) {
        assertArrayEquals(ZEROS, readFloats(run, "kv"), 0f); // decode's initial value: zeros
      }
      // a session runs only the containers it covers
      assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> model.beginRun(chat).close());
    }
  }

  @Test
  public void disagreeingStateDeclarationsAreRefused() {
    try (Container wide = container("wide", ContainerOptions.builder().state("kv", DType.F32, 8));
         Container half = container("half", ContainerOptions.builder().state("kv", DType.F16, 4))) {
      assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> Session.create(runtime, model, wide), "kv");
      assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> Session.create(runtime, model, half), "kv");
    }
  }

  @Test
  public void badStateDeclarationsAreRefused() {
    assertWharfError(WharfException.Code.INVALID_ARGUMENT,
        () -> container("clash", ContainerOptions.builder().state("w", DType.F32, 2)), "w");
    assertWharfError(WharfException.Code.INVALID_ARGUMENT,
        () -> container("dup", ContainerOptions.builder().state("s", DType.F32, 2).state("s", DType.F32, 2)), "s");
    assertWharfError(WharfException.Code.INVALID_ARGUMENT,
        () -> container("neg", ContainerOptions.builder().state("", DType.F32, 2)));
    // caught in Java
    ContainerOptions.Builder b = ContainerOptions.builder();
    assertThrows(IllegalArgumentException.class, () -> b.state("s", DType.F32, ByteBuffer.allocate(8), 2));
    assertThrows(IllegalArgumentException.class, () -> b.state("s", DType.F32, ByteBuffer.allocateDirect(4), 2));
    assertThrows(IllegalArgumentException.class, () -> b.state("s", new float[3], 2));
    assertThrows(IllegalArgumentException.class, () -> b.state("s", DType.F32, 1, 1, 1, 1, 1, 1, 1, 1, 1));
    assertThrows(IllegalArgumentException.class, () -> b.maxSessionBytes(-1));
    assertThrows(IllegalArgumentException.class, () -> Session.create(runtime));
    assertThrows(NullPointerException.class, () -> Session.create(runtime, (Container) null));
  }

  @Test
  public void initialValueIsReadFromTheBuffersPositionWhenTheContainerIsCreated() {
    ByteBuffer initial = ByteBuffer.allocateDirect(4 + 16).order(ByteOrder.nativeOrder());
    initial.position(4);
    initial.asFloatBuffer().put(new float[] {9f, 8f, 7f, 6f});
    ContainerOptions.Builder options = ContainerOptions.builder().state("kv", DType.F32, initial, 4);
    assertEquals(4, initial.position());
    try (Container c = container("buffered", options); Session s = Session.create(runtime, c)) {
      initial.putFloat(4, -1f); // captured at creation: not seen
      try (Run run = c.beginRun(s)) {
        assertArrayEquals(new float[] {9f, 8f, 7f, 6f}, readFloats(run, "kv"), 0f);
      }
    }
  }

  @Test
  public void forkCopiesThenDiverges() {
    try (Session a = Session.create(runtime, model)) {
      try (Run run = model.beginRun(a)) {
        writeState(run, "kv", new float[] {10f, 20f, 30f, 40f});
        assertWharfError(WharfException.Code.BUSY, a::fork); // a has an open run
      }
      try (Session b = a.fork()) {
        assertEquals(a.stateBytes(), b.stateBytes());
        assertEquals(a.containers(), b.containers());
        try (Run run = model.beginRun(b)) {
          assertArrayEquals(new float[] {10f, 20f, 30f, 40f}, readFloats(run, "kv"), 0f);
          writeState(run, "kv", new float[] {-1f, -1f, -1f, -1f});
        }
        try (Run run = model.beginRun(a)) {
          assertArrayEquals(new float[] {10f, 20f, 30f, 40f}, readFloats(run, "kv"), 0f);
          writeState(run, "kv", new float[] {11f, 11f, 11f, 11f});
        }
        try (Run run = model.beginRun(b)) {
          assertArrayEquals(new float[] {-1f, -1f, -1f, -1f}, readFloats(run, "kv"), 0f);
        }
      }
    }
  }

  @Test
  public void forkOfAFreshSessionStartsFromTheInitialValues() {
    try (Session a = Session.create(runtime, model); Session b = a.fork(); Run run = model.beginRun(b)) {
      assertArrayEquals(KV_INITIAL, readFloats(run, "kv"), 0f);
    }
  }

  @Test
  public void resetRestoresInitialValues() {
    try (Session s = Session.create(runtime, model)) {
      try (Run run = model.beginRun(s)) {
        writeState(run, "kv", new float[] {10f, 20f, 30f, 40f});
        writeState(run, "pos", new long[] {3});
        assertWharfError(WharfException.Code.BUSY, s::reset);
      }
      s.reset();
      try (Run run = model.beginRun(s)) {
        assertArrayEquals(KV_INITIAL, readFloats(run, "kv"), 0f);
        assertArrayEquals(new long[] {0}, readLongs(run, "pos"));
      }
      s.reset(); // twice, and before any write: still the initial values
      s.reset();
      try (Run run = model.beginRun(s)) {
        assertArrayEquals(KV_INITIAL, readFloats(run, "kv"), 0f);
      }
    }
  }

  @Test
  public void oneRunAtATimePerSession() {
    try (Container decode = container("decode", ContainerOptions.builder().state("kv", KV_INITIAL, 4));
         Session s = Session.create(runtime, model, decode); Session other = Session.create(runtime, model)) {
      try (Run first = model.beginRun(s)) {
        assertWharfError(WharfException.Code.BUSY, () -> model.beginRun(s).close());
        assertWharfError(WharfException.Code.BUSY, () -> decode.beginRun(s).close());
        try (Run independent = model.beginRun(other)) {
          assertNotEquals(first.tensor("kv").address(), independent.tensor("kv").address());
        }
      }
      try (Run again = decode.beginRun(s)) {
        assertSame(s, again.session());
      }
    }
  }

  @Test
  public void containerWithStatesNeedsASession() {
    assertWharfError(WharfException.Code.FAILED_PRECONDITION, () -> model.beginRun().close(), "lm");
    assertWharfError(WharfException.Code.FAILED_PRECONDITION, () -> model.beginRun(null).close(), "lm");
    // a container without states runs with or without one
    try (Container plain = container("plain", ContainerOptions.builder()); Session s = Session.create(runtime, plain)) {
      assertEquals(0, s.stateBytes());
      try (Run run = plain.beginRun()) {
        assertNull(run.session());
      }
      try (Run run = plain.beginRun(s)) {
        assertArrayEquals(new float[] {1f, 2f}, floats(run.tensor("w")), 0f);
      }
    }
  }

  @Test
  public void budgetsRefuseSessionsPastThem() {
    // 24 state bytes a session; room for one
    try (Container small = container("small",
        ContainerOptions.builder().state("kv", KV_INITIAL, 4).state("pos", DType.I64).maxSessionBytes(40))) {
      Session first = Session.create(runtime, small);
      assertWharfError(WharfException.Code.RESOURCE_EXHAUSTED, () -> Session.create(runtime, small).close(), "small");
      assertWharfError(WharfException.Code.RESOURCE_EXHAUSTED, () -> first.fork().close());
      first.close(); // its budget is free again
      try (Session second = Session.create(runtime, small)) {
        assertEquals(24, second.stateBytes());
      }
    }
    assertWharfError(WharfException.Code.RESOURCE_EXHAUSTED,
        () -> Session.create(runtime, SessionOptions.builder().maxStateBytes(16).build(), model).close());
    try (Session fits = Session.create(runtime, SessionOptions.builder().maxStateBytes(24).build(), model)) {
      assertEquals(24, fits.stateBytes());
    }
    assertThrows(IllegalArgumentException.class, () -> SessionOptions.builder().maxStateBytes(-1));
  }

  @Test
  public void stateIsAllocatedAtTheFirstRunOrEagerly() {
    // The container's own STATE bytes (the captured initial value of kv) are the baseline.
    long base = runtime.memoryStats().current(MemoryTag.STATE);
    try (Session lazy = Session.create(runtime, model)) {
      assertEquals(24, lazy.stateBytes());
      assertEquals(base, runtime.memoryStats().current(MemoryTag.STATE));
      model.beginRun(lazy).close();
      assertEquals(base + 24, runtime.memoryStats().current(MemoryTag.STATE));
      try (Session eager = Session.create(runtime, SessionOptions.builder().allocateEagerly(true).build(), model)) {
        assertEquals(base + 48, runtime.memoryStats().current(MemoryTag.STATE));
        try (Run run = model.beginRun(eager)) {
          assertArrayEquals(KV_INITIAL, readFloats(run, "kv"), 0f);
        }
      }
    }
    runtime.synchronize();
    assertEquals(base, runtime.memoryStats().current(MemoryTag.STATE));
  }

  @Test
  public void closeTwiceIsANoOpAndUseAfterCloseThrows() {
    Session s = Session.create(runtime, model);
    assertTrue(s.toString(), s.toString().startsWith("Session over 'lm'"));
    s.close();
    s.close();
    assertTrue(s.isClosed());
    assertEquals("Session over 'lm'{closed}", s.toString());
    assertClosed("Session over 'lm'", s::stateBytes);
    assertClosed("Session over 'lm'", s::reset);
    assertClosed("Session over 'lm'", s::fork);
    assertClosed("Session over 'lm'", () -> model.beginRun(s));
    assertFalse(model.isClosed());
    model.close();
    assertClosed("Container 'lm'", () -> Session.create(runtime, model));
  }

  @Test
  public void containersAndRuntimeClosedFirstKeepTheSessionWorking() {
    Session s = Session.create(runtime, model);
    Run run = model.beginRun(s);
    writeState(run, "kv", new float[] {10f, 20f, 30f, 40f});
    model.close();
    runtime.close();
    assertEquals(24, s.stateBytes());
    assertWharfError(WharfException.Code.BUSY, s::reset);
    assertArrayEquals(new float[] {10f, 20f, 30f, 40f}, readFloats(run, "kv"), 0f);
    run.close();
    try (Session branch = s.fork()) { // forks while its containers are closed
      assertEquals(Collections.singletonList(model), branch.containers());
      assertEquals(24, branch.stateBytes());
      s.reset();
    }
    s.close(); // frees the session, then the container, then the runtime
    assertClosed("Session over 'lm'", s::stateBytes);
  }

  @Test
  public void sessionClosedWhileARunIsOpenKeepsTheRunsState() {
    Session s = Session.create(runtime, model);
    try (Run run = model.beginRun(s)) {
      writeState(run, "kv", new float[] {4f, 3f, 2f, 1f});
      s.close();
      assertClosed("Session over 'lm'", s::stateBytes);
      assertSame(s, run.session());
      assertArrayEquals(new float[] {4f, 3f, 2f, 1f}, readFloats(run, "kv"), 0f);
    }
  }

  @Test
  public void sessionsFromManyThreads() throws Exception {
    Thread[] threads = new Thread[4];
    Throwable[] errors = new Throwable[threads.length];
    for (int t = 0; t < threads.length; t++) {
      int index = t;
      threads[t] = new Thread(() -> {
        try (Session mine = Session.create(runtime, model)) {
          for (int i = 0; i < 50; i++) {
            try (Run run = model.beginRun(mine)) {
              float[] expected = i == 0 ? KV_INITIAL : new float[] {index, i - 1, 0f, 0f};
              assertArrayEquals(expected, readFloats(run, "kv"), 0f);
              writeState(run, "kv", new float[] {index, i, 0f, 0f});
            }
          }
        } catch (Throwable e) {
          errors[index] = e;
        }
      });
      threads[t].start();
    }
    for (Thread t : threads) t.join();
    for (Throwable e : errors) {
      if (e != null) throw new AssertionError(e);
    }
  }
}
