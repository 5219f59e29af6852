package dev.wharf;

import static dev.wharf.TestSupport.assertWharfError;
import static dev.wharf.TestSupport.floats;
import static dev.wharf.TestSupport.hostRuntime;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.nio.FloatBuffer;
import java.util.Arrays;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/** Fold callbacks: derived constants computed in Java, and a callback's status reaching the caller. */
public class FoldTest {
  private WharfRuntime runtime;
  private Container model;
  private ConstantMap weights;

  @Before
  public void setUp() {
    runtime = hostRuntime();
    model = Container.create(runtime, "quantised", Arrays.asList(
        ConstantDecl.of("w", DType.F32, 2, 3),
        ConstantDecl.of("wt", DType.F32, 3, 2).derived()));
    weights = ConstantMap.create();
    weights.put("w", new float[] {0, 1, 2, 3, 4, 5}, 2, 3);
  }

  @After
  public void tearDown() {
    weights.close();
    model.close();
    runtime.close();
  }

  private static void transpose(FoldRun run) {
    float[] w = floats(run.tensor("w"));
    FloatBuffer wt = run.writableBuffer("wt").asFloatBuffer();
    for (int i = 0; i < 2; i++) {
      for (int j = 0; j < 3; j++) wt.put(j * 2 + i, w[i * 3 + j]);
    }
  }

  @Test
  public void foldComputesDerivedConstants() {
    assertTrue(ConstantDecl.of("wt", DType.F32, 3, 2).derived().isDerived());
    assertEquals("quantised", model.name());
    assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> model.update(weights), "fold");
    int[] calls = {0};
    model.update(weights, UpdateOptions.builder().fold(run -> {
      calls[0]++;
      transpose(run);
    }).build());
    assertEquals(1, calls[0]);
    model.swap();
    try (Run run = model.beginRun()) {
      assertArrayEquals(new float[] {0, 3, 1, 4, 2, 5}, floats(run.tensor("wt")), 0f);
    }
  }

  @Test
  public void foldStatusReachesTheCallerWithItsCodeAndMessage() {
    WharfException mine = new WharfException(WharfException.Code.RESOURCE_EXHAUSTED,
        "fold scratch budget of 64 bytes exceeded");
    WharfException e = assertThrows(WharfException.class,
        () -> model.update(weights, UpdateOptions.builder().fold(run -> {
          throw mine;
        }).build()));
    // Made with wharf_status_create in the JNI layer, returned by the library with its context.
    assertEquals(WharfException.Code.RESOURCE_EXHAUSTED, e.code());
    assertEquals("container 'quantised': fold callback: fold scratch budget of 64 bytes exceeded", e.getMessage());
    assertSame(mine, e.getCause());
    // Any other exception crosses as FAILED_PRECONDITION with its text.
    IllegalStateException plain = new IllegalStateException("no calibration table");
    WharfException p = assertThrows(WharfException.class,
        () -> model.update(weights, UpdateOptions.builder().fold(run -> {
          throw plain;
        }).build()));
    assertEquals(WharfException.Code.FAILED_PRECONDITION, p.code());
    assertTrue(p.getMessage(), p.getMessage().endsWith("no calibration table"));
    assertSame(plain, p.getCause());
    // An Error (a failed assertion) is rethrown as it is.
    AssertionError boom = new AssertionError("boom");
    assertSame(boom, assertThrows(AssertionError.class,
        () -> model.update(weights, UpdateOptions.builder().fold(run -> {
          throw boom;
        }).build())));
    // Nothing was staged by the aborted updates.
    assertWharfError(WharfException.Code.FAILED_PRECONDITION, model::swap);
  }

  @Test
  public void foldRunIsInvalidAfterTheCallback() {
    FoldRun[] kept = {null};
    model.update(weights, UpdateOptions.builder().fold(run -> {
      kept[0] = run;
      transpose(run);
      assertEquals(0, run.stream());
    }).build());
    assertThrows(IllegalStateException.class, () -> kept[0].tensor("w"));
  }
}
