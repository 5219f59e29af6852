// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static dev.wharf.TestSupport.assertWharfError;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import org.junit.Test;

/**
 * CUDA graphs (experimental): what can be checked without a GPU (a model needs one): the
 * options' validation, the conversion of the library's structs, and the library's own
 * argument checks reached through the SWIG helpers.
 */
public class GraphTest {
  @Test
  public void optionsAreValidated() {
    GraphOptions d = GraphOptions.defaults();
    assertEquals(0, d.maxBuckets());
    assertEquals(0, d.maxPoolBytes());
    assertEquals(0, d.maxConcurrentRuns());
    GraphOptions o = GraphOptions.builder().maxBuckets(3).maxPoolBytes(1L << 40).maxConcurrentRuns(2).build();
    assertEquals(3, o.maxBuckets());
    assertEquals(1L << 40, o.maxPoolBytes());
    assertEquals(2, o.maxConcurrentRuns());
    assertTrue(o.toString(), o.toString().contains("maxBuckets=3"));
    assertThrows(IllegalArgumentException.class, () -> GraphOptions.builder().maxBuckets(-1));
    assertThrows(IllegalArgumentException.class, () -> GraphOptions.builder().maxBuckets(1L << 32));
    assertThrows(IllegalArgumentException.class, () -> GraphOptions.builder().maxConcurrentRuns(-2));
    assertThrows(IllegalArgumentException.class, () -> GraphOptions.builder().maxPoolBytes(-1));
    assertEquals(0xFFFF_FFFFL, GraphOptions.builder().maxBuckets(0xFFFF_FFFFL).build().maxBuckets());
    // Buckets: copied in and out; too many refused before the library.
    assertEquals(null, d.bucketDim());
    assertEquals(0, d.bucketSizes().length);
    assertEquals(false, d.exactShapes());
    long[] sizes = {16, 8};
    GraphOptions b = GraphOptions.builder().buckets("T", sizes).build();
    sizes[0] = 99;
    assertEquals("T", b.bucketDim());
    org.junit.Assert.assertArrayEquals(new long[] {16, 8}, b.bucketSizes());
    b.bucketSizes()[0] = 99;
    org.junit.Assert.assertArrayEquals(new long[] {16, 8}, b.bucketSizes());
    assertTrue(b.toString(), b.toString().contains("bucketSizes=[16, 8]"));
    assertTrue(GraphOptions.builder().exactShapes(true).build().exactShapes());
    assertThrows(IllegalArgumentException.class,
        () -> GraphOptions.builder().buckets("N", new long[GraphOptions.MAX_BUCKET_SIZES + 1]));
    assertThrows(NullPointerException.class, () -> GraphOptions.builder().buckets("N", (long[]) null));
  }

  @Test
  public void statsAndBucketsConvertEveryField() {
    wharf_graph_stats s = new wharf_graph_stats();
    try {
      assertEquals("", GraphStats.of(s).lastEagerReason());
      // The struct the library fills is this header's, with the replay phases appended
      // (440 bytes before them, 488 with them on LP64) and the preparation counters after
      // those (536).
      assertEquals(536, s.getStruct_size());
      s.setNum_buckets(2);
      s.setCaptures(3);
      s.setCapture_failures(4);
      s.setReplays(5);
      s.setRepoints(6);
      s.setNodes_repointed(7);
      s.setEager_runs(8);
      s.setFolds(9);
      s.setPool_bytes(10);
      s.setFolded_bytes(11);
      s.setRepoint_ns(12);
      s.setBind_check_ns(13);
      s.setFold_ns(1L << 40);
      s.setPadded_replays(14);
      s.setNum_bucket_sizes(4);
      s.setSelect_ns(15);
      s.setWait_ns(16);
      s.setInputs_ns(17);
      s.setLaunch_ns(18);
      s.setOutputs_ns(19);
      s.setRelease_ns(1L << 41);
      s.setReplay_folds(20);
      s.setPrepare_folds(21);
      s.setPrepointed_replays(22);
      s.setPrepares(23);
      s.setPrepare_failures(24);
      s.setPrepare_ns(1L << 42);
      GraphStats g = GraphStats.of(s);
      assertEquals(2, g.numBuckets());
      assertEquals(3, g.captures());
      assertEquals(4, g.captureFailures());
      assertEquals(5, g.replays());
      assertEquals(6, g.repoints());
      assertEquals(7, g.nodesRepointed());
      assertEquals(8, g.eagerRuns());
      assertEquals(9, g.folds());
      assertEquals(10, g.poolBytes());
      assertEquals(11, g.foldedBytes());
      assertEquals(12, g.repointNanos());
      assertEquals(13, g.bindCheckNanos());
      assertEquals(1L << 40, g.foldNanos());
      assertEquals("", g.lastEagerReason());
      assertEquals(14, g.paddedReplays());
      assertEquals(4, g.numBucketSizes());
      assertEquals("", g.bucketDim());
      assertEquals(15, g.selectNanos());
      assertEquals(16, g.waitNanos());
      assertEquals(17, g.inputsNanos());
      assertEquals(18, g.launchNanos());
      assertEquals(19, g.outputsNanos());
      assertEquals(1L << 41, g.releaseNanos());
      assertEquals(20, g.replayFolds());
      assertEquals(21, g.prepareFolds());
      assertEquals(22, g.prepointedReplays());
      assertEquals(23, g.prepares());
      assertEquals(24, g.prepareFailures());
      assertEquals(1L << 42, g.prepareNanos());
      assertTrue(g.toString(), g.toString().contains("selectNanos=15, waitNanos=16"));
      assertTrue(g.toString(), g.toString().contains("releaseNanos=" + (1L << 41) + ", replayFolds=20"));
      assertTrue(g.toString(), g.toString().endsWith("prepareNanos=" + (1L << 42) + "}"));
    } finally {
      s.delete();
    }
    wharf_graph_bucket_info b = new wharf_graph_bucket_info();
    try {
      b.setSet(1);
      b.setPool_bytes(4096);
      b.setNodes(120);
      b.setPatched_nodes(30);
      b.setPatches(45);
      b.setCapture_ms(2.5);
      b.setBucket_size(-1);
      b.setBind_fold_ms(0.5);
      b.setWarmup_ms(1.5);
      b.setCapture_run_ms(2.5);
      b.setScan_ms(3.5);
      b.setInstantiate_ms(4.5);
      GraphBucket g = GraphBucket.of(b);
      assertEquals(1, g.set());
      assertEquals(4096, g.poolBytes());
      assertEquals(120, g.nodes());
      assertEquals(30, g.patchedNodes());
      assertEquals(45, g.patches());
      assertEquals(2.5, g.captureMillis(), 0);
      assertEquals("", g.shapes());
      assertEquals(-1, g.bucketSize());
      assertEquals(0.5, g.bindFoldMillis(), 0);
      assertEquals(1.5, g.warmupMillis(), 0);
      assertEquals(2.5, g.captureRunMillis(), 0);
      assertEquals(3.5, g.scanMillis(), 0);
      assertEquals(4.5, g.instantiateMillis(), 0);
    } finally {
      b.delete();
    }
  }

  @Test
  public void theLibraryRefusesANullModel() {
    assertWharfError(WharfException.Code.INVALID_ARGUMENT,
        () -> WharfNative.wharf_swig_model_enable_graphs(null, 1, 0, 0, null, null, 0), "wharf_model_enable_graphs",
        "NULL");
    // Sizes reach the library through the helper's array typemap (null: none).
    assertWharfError(WharfException.Code.INVALID_ARGUMENT,
        () -> WharfNative.wharf_swig_model_enable_graphs(null, 0, 0, 0, "T", new long[] {8, 16}, 0),
        "wharf_model_enable_graphs");
    assertThrows(IllegalArgumentException.class,
        () -> WharfNative.wharf_swig_model_enable_graphs(null, 0, 0, 0, "T",
            new long[GraphOptions.MAX_BUCKET_SIZES + 1], 0));
    wharf_graph_stats s = new wharf_graph_stats();
    wharf_graph_bucket_info b = new wharf_graph_bucket_info();
    try {
      assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> WharfNative.wharf_model_get_graph_stats(null, s),
          "wharf_model_get_graph_stats", "NULL");
      assertWharfError(WharfException.Code.INVALID_ARGUMENT,
          () -> WharfNative.wharf_model_get_graph_bucket(null, 0, b), "wharf_model_get_graph_bucket", "NULL");
    } finally {
      s.delete();
      b.delete();
    }
  }
}
