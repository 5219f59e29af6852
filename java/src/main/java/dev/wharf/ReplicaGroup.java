// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * The same model on several devices of one host (data-parallel replicas,
 * {@code wharf_replica_group}): one {@link Container} per device, each on a
 * {@link WharfRuntime} of its own, updated together (the sources are read once: copied into
 * replica 0, then broadcast with NCCL on CUDA, copied between replicas on the host backend)
 * and swapped together: a run begun on any replica after {@link #swap()} returns sees the
 * new weights, and no run sees old weights on one replica beside new ones on another. A
 * failure anywhere stages nothing on any replica.
 *
 * <p>While a container is in a group it is written only through the group: its own updates,
 * swaps and {@code freeInactive} throw {@link WharfException.Code#FAILED_PRECONDITION}. Runs
 * and sessions of each replica are used as usual. Closing the group lets the containers go
 * their own ways again. Safe to use from many threads (group calls run one at a time).
 *
 * <p>Experimental: part of wharf.h's experimental tier; it may change in any minor release.
 *
 * @since 0.3
 */
public final class ReplicaGroup extends NativeHandle<SWIGTYPE_p_wharf_replica_group> {
  private final List<Container> replicas;

  private ReplicaGroup(SWIGTYPE_p_wharf_replica_group pointer, List<Container> replicas) {
    super(pointer, WharfNative::wharf_replica_group_free, replicas);
    this.replicas = replicas;
    nameForLeaks();
  }

  /**
   * Groups containers, as {@link #create(List)}.
   *
   * @param containers the replicas, replica 0 first
   * @return a new group, owned by the caller
   * @throws WharfException as {@link #create(List)}
   */
  public static ReplicaGroup create(Container... containers) {
    return create(Arrays.asList(Objects.requireNonNull(containers, "containers")));
  }

  /**
   * Groups containers (at least one), each on its own runtime (on CUDA, each on a different
   * GPU), declared alike: the same constants in the same order with the same FQN, dtype,
   * shape and placement, and the same states. They should hold the same weights, or none.
   *
   * @param containers the replicas, replica 0 first
   * @return a new group, owned by the caller
   * @throws WharfException {@link WharfException.Code#INVALID_ARGUMENT} (no containers, one
   *     given twice, two on one runtime, mixed backends, declarations that differ: the first
   *     difference is named), {@link WharfException.Code#UNSUPPORTED} (NCCL cannot be loaded
   *     for a CUDA group of two or more; a weight store member brings its whole store),
   *     {@link WharfException.Code#FAILED_PRECONDITION} (a container already in a group, or
   *     with an update staged), {@link WharfException.Code#BUSY},
   *     {@link WharfException.Code#DEVICE_ERROR}; nothing changes on error
   * @throws IllegalStateException if a container has been closed
   */
  public static ReplicaGroup create(List<Container> containers) {
    List<Container> list = Collections.unmodifiableList(new ArrayList<>(Objects.requireNonNull(containers, "containers")));
    for (Container c : list) Objects.requireNonNull(c, "container");
    return withPointers(list, () -> {
      SWIGTYPE_p_wharf_swig_container_list natives = WharfNative.wharf_swig_container_list_new();
      if (natives == null) throw new OutOfMemoryError("allocating the container list of a replica group");
      try {
        for (Container c : list) {
          if (WharfNative.wharf_swig_container_list_add(natives, c.pointerWhileLocked()) == 0) {
            throw new OutOfMemoryError("adding " + c.describe() + " to a replica group");
          }
        }
        SWIGTYPE_p_wharf_replica_group pointer = WharfNative.wharf_swig_replica_group_create(natives);
        try {
          return new ReplicaGroup(pointer, list);
        } catch (RuntimeException | Error e) {
          WharfNative.wharf_replica_group_free(pointer);
          throw e;
        }
      } finally {
        WharfNative.wharf_swig_container_list_free(natives);
      }
    });
  }

  /**
   * As {@link #createRank(Container, ReplicaGroupId, int, int, Duration)} with the default
   * timeout (30 s).
   *
   * @param container this process's replica
   * @param id the group's id (the same on every rank)
   * @param rank this process's rank, 0 to size - 1
   * @param size the number of ranks (the same on every rank)
   * @return this rank's group, owned by the caller
   * @throws WharfException as {@link #createRank(Container, ReplicaGroupId, int, int, Duration)}
   */
  public static ReplicaGroup createRank(Container container, ReplicaGroupId id, int rank, int size) {
    return createRank(container, id, rank, size, null);
  }

  /**
   * Makes the container (this process's replica; the group keeps it alive) rank {@code rank}
   * of a group of {@code size} processes formed from {@code id}. Blocks until every rank has
   * joined, or fails after the timeout; two ranks in one process (each with its own runtime
   * and container) must call it from different threads. The ranks' containers must be
   * declared alike. While in the group the container refuses writes of its own; runs on it
   * are used as usual. Of this class's methods, {@link #updateRanks}, {@link #freeInactive},
   * {@link #numReplicas} (the size), {@link #stats} (this rank's) and {@link #close} apply;
   * {@link #update} and {@link #swap} throw {@link WharfException.Code#FAILED_PRECONDITION}.
   * Closing the group leaves it (peers still in an update fail naming this rank).
   *
   * @param container this process's replica
   * @param id the group's id (the same on every rank)
   * @param rank this process's rank, 0 to size - 1
   * @param size the number of ranks (the same on every rank)
   * @param timeout bound on forming the group and on every wait of an update (whole
   *     milliseconds, rounded up); null for the default, 30 s
   * @return this rank's group, owned by the caller
   * @throws WharfException {@link WharfException.Code#INVALID_ARGUMENT} (a negative rank or
   *     size, size 0, rank &gt;= size, an id not made for this backend, sizes that differ
   *     between ranks, a rank given twice, declarations unlike rank 0's, a timeout out of
   *     range), {@link WharfException.Code#UNSUPPORTED} (CUDA without a usable
   *     NCCL), {@link WharfException.Code#FAILED_PRECONDITION}
   *     (the container is in a group already, or has an update staged),
   *     {@link WharfException.Code#BUSY}, {@link WharfException.Code#ALREADY_EXISTS} (rank 0:
   *     the id is in use), {@link WharfException.Code#IO_ERROR} (a rank did not join within
   *     the timeout, named), {@link WharfException.Code#DEVICE_ERROR}; nothing changes on
   *     error
   * @throws IllegalStateException if the container has been closed
   */
  public static ReplicaGroup createRank(Container container, ReplicaGroupId id, int rank, int size, Duration timeout) {
    Objects.requireNonNull(container, "container");
    Objects.requireNonNull(id, "id");
    long timeoutMs = 0;
    if (timeout != null) {
      if (timeout.isNegative()) {
        throw new WharfException(WharfException.Code.INVALID_ARGUMENT, "replica group: timeout " + timeout + " is negative");
      }
      try {
        Duration ceil = timeout.plusNanos(999_999);
        timeoutMs = ceil.toMillis();
      } catch (ArithmeticException e) {
        timeoutMs = Long.MAX_VALUE; // refused below, by the helper
      }
    }
    final long ms = timeoutMs;
    List<Container> list = Collections.singletonList(container);
    return container.withPointer(c -> {
      SWIGTYPE_p_wharf_replica_group pointer =
          WharfNative.wharf_swig_replica_group_create_rank(c, id.nativeBytes(), rank, size, ms);
      try {
        return new ReplicaGroup(pointer, list);
      } catch (RuntimeException | Error e) {
        WharfNative.wharf_replica_group_free(pointer);
        throw e;
      }
    });
  }

  /**
   * One update of every rank of a group made by {@link #createRank}, with a two-phase swap:
   * every rank calls it, rank 0 with the map (its sources, read once), every other rank with
   * null (they receive). Only {@link UpdateTarget#INACTIVE} applies; require-full and the
   * {@link ProgressListener} (or an interrupt of the calling thread, which cancels) apply on
   * rank 0. Returns on every rank once the new weights are published everywhere (runs begun
   * after see them). On failure nothing changes anywhere: a refused map fails every rank with
   * rank 0's code; a rank that fails to stage fails with its own error and the others with
   * the same code naming it; a rank that dies or times out fails every survivor with
   * {@link WharfException.Code#IO_ERROR} naming it, and the group is aborted (later calls
   * throw {@link WharfException.Code#FAILED_PRECONDITION}: close it and form a new one).
   *
   * @param map rank 0's tensors, by name; null on every other rank
   * @param options require-full and progress (rank 0), and this rank's fold (every rank
   *     whose containers declare derived constants passes one; it runs before the vote)
   * @throws WharfException {@link WharfException.Code#INVALID_ARGUMENT} (null on rank 0, a
   *     map on another rank), {@link WharfException.Code#FAILED_PRECONDITION} (a group made
   *     by {@link #create(List)}), and the failures above
   * @throws IllegalStateException if the group or the map has been closed
   */
  public void updateRanks(ConstantMap map, UpdateOptions options) {
    Objects.requireNonNull(options, "options");
    withPointer(g -> {
      if (map == null) {
        options.run(this, o -> WharfNative.wharf_replica_group_update_ranks(g, null, o),
            (o, call) -> WharfNative.wharf_swig_replica_group_update_ranks_fold(g, null, o, call));
        return null;
      }
      return map.withPointer(m -> {
        options.run(this, o -> WharfNative.wharf_replica_group_update_ranks(g, m, o),
            (o, call) -> WharfNative.wharf_swig_replica_group_update_ranks_fold(g, m, o, call));
        return null;
      });
    });
  }

  /**
   * The same as {@code updateRanks(map, UpdateOptions.defaults())}.
   *
   * @param map rank 0's tensors, by name; null on every other rank
   * @throws WharfException as {@link #updateRanks(ConstantMap, UpdateOptions)}
   */
  public void updateRanks(ConstantMap map) {
    updateRanks(map, UpdateOptions.defaults());
  }

  @Override
  String describe() {
    return "ReplicaGroup of " + replicas.size();
  }

  /**
   * The replicas, in the order given (replica 0 first).
   *
   * @return the containers
   */
  public List<Container> replicas() {
    return replicas;
  }

  /**
   * The number of replicas.
   *
   * @return the count
   * @throws IllegalStateException if the group has been closed
   */
  public int numReplicas() {
    return withPointer(p -> Math.toIntExact(WharfNative.wharf_replica_group_num_replicas(p)));
  }

  /**
   * Stages the map in the inactive generation of every replica, as
   * {@link Container#update(ConstantMap, UpdateOptions)} would on each (validation first),
   * reading the sources once; {@link #swap()} publishes. Only
   * {@link UpdateTarget#INACTIVE} is supported. The options' {@link ProgressListener} counts
   * each source byte once; it, or an interrupt of the calling thread, cancels the update,
   * which then stages nothing on any replica.
   *
   * @param map the tensors to write, by name
   * @param options require-full, progress, and the fold, run on every replica for the
   *     containers that declare derived constants (required then); group calls on this
   *     group from inside it throw {@link WharfException.Code#FAILED_PRECONDITION}
   * @throws WharfException as {@link Container#update(ConstantMap, UpdateOptions)}, the
   *     replica named; {@link WharfException.Code#UNSUPPORTED} (in-place target);
   *     {@link WharfException.Code#DEVICE_ERROR} (NCCL); on any error no replica changes
   * @throws IllegalStateException if the group or the map has been closed
   */
  public void update(ConstantMap map, UpdateOptions options) {
    Objects.requireNonNull(map, "map");
    Objects.requireNonNull(options, "options");
    withPointer(g -> map.withPointer(m -> {
      options.run(this, o -> WharfNative.wharf_replica_group_update(g, m, o),
          (o, call) -> WharfNative.wharf_swig_replica_group_update_fold(g, m, o, call));
      return null;
    }));
  }

  /**
   * The same as {@code update(map, UpdateOptions.defaults())}.
   *
   * @param map the tensors to write, by name
   * @throws WharfException as {@link #update(ConstantMap, UpdateOptions)}
   */
  public void update(ConstantMap map) {
    update(map, UpdateOptions.defaults());
  }

  /**
   * Publishes what group updates staged on every replica at once or, when nothing is
   * staged, rolls every replica back to its previous generation.
   *
   * @throws WharfException {@link WharfException.Code#FAILED_PRECONDITION} (nothing to swap
   *     in, the replica named; nothing is swapped)
   * @throws IllegalStateException if the group has been closed
   */
  public void swap() {
    withPointer(p -> {
      WharfNative.wharf_replica_group_swap(p);
      return null;
    });
  }

  /**
   * Frees every replica's inactive generation; runs in flight keep what they pinned.
   *
   * @throws IllegalStateException if the group has been closed
   */
  public void freeInactive() {
    withPointer(p -> {
      WharfNative.wharf_replica_group_free_inactive(p);
      return null;
    });
  }

  /**
   * The group's counters.
   *
   * @return the counters
   * @throws IllegalStateException if the group has been closed
   */
  public ReplicaGroupStats stats() {
    return withPointer(p -> {
      wharf_replica_group_stats s = new wharf_replica_group_stats();
      try {
        WharfNative.wharf_replica_group_get_stats(p, s);
        return new ReplicaGroupStats(s.getNum_replicas(), s.getNccl_version(), s.getNum_updates(), s.getNum_swaps(),
            s.getSource_bytes(), s.getBroadcast_bytes(), s.getNum_broadcasts());
      } finally {
        s.delete();
      }
    });
  }

  @Override
  public String toString() {
    return describe() + (isClosed() ? "{closed}" : "");
  }
}
