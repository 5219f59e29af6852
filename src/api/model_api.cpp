// SPDX-License-Identifier: Apache-2.0
// Model functions of wharf.h (experimental tier): argument checks and conversions only.
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "api/boundary.h"
#include "api/handles.h"
#include "api/model_api.h"
#include "graphs/model_graphs.h"
#include "api/offload_api.h"
#include "models/model.h"

using namespace wharf;

namespace wharf {
namespace api {

const StructLayout& layout_of(const wharf_model_options*) {
  using T = wharf_model_options;
  static const FieldInfo f[] = {
      WHARF_FIELD(T, struct_size),       WHARF_FIELD(T, name),          WHARF_FIELD(T, store),
      WHARF_FIELD(T, max_session_bytes), WHARF_FIELD(T, shim_path),     WHARF_FIELD(T, offload),
      WHARF_FIELD(T, progress),          WHARF_FIELD(T, progress_user), WHARF_FIELD(T, session_capacity)};
  static const StructLayout l{"wharf_model_options", f, sizeof(f) / sizeof(f[0]), sizeof(T), sizeof(uint32_t)};
  return l;
}

const StructLayout& layout_of(const wharf_graph_options*) {
  using T = wharf_graph_options;
  static const FieldInfo f[] = {WHARF_FIELD(T, struct_size),      WHARF_FIELD(T, max_buckets),
                                WHARF_FIELD(T, max_pool_bytes),   WHARF_FIELD(T, max_concurrent_runs),
                                WHARF_FIELD(T, bucket_dim),       WHARF_FIELD(T, bucket_sizes),
                                WHARF_FIELD(T, num_bucket_sizes), WHARF_FIELD(T, exact_shapes)};
  static const StructLayout l{"wharf_graph_options", f, sizeof(f) / sizeof(f[0]), sizeof(T), sizeof(uint32_t)};
  return l;
}

const StructLayout& layout_of(const wharf_graph_stats*) {
  using T = wharf_graph_stats;
  static const FieldInfo f[] = {
      WHARF_FIELD(T, struct_size),      WHARF_FIELD(T, num_buckets),      WHARF_FIELD(T, captures),
      WHARF_FIELD(T, capture_failures), WHARF_FIELD(T, replays),          WHARF_FIELD(T, repoints),
      WHARF_FIELD(T, nodes_repointed),  WHARF_FIELD(T, eager_runs),       WHARF_FIELD(T, folds),
      WHARF_FIELD(T, pool_bytes),       WHARF_FIELD(T, folded_bytes),     WHARF_FIELD(T, repoint_ns),
      WHARF_FIELD(T, bind_check_ns),    WHARF_FIELD(T, fold_ns),          WHARF_FIELD(T, last_eager_reason),
      WHARF_FIELD(T, padded_replays),   WHARF_FIELD(T, bucket_dim),       WHARF_FIELD(T, num_bucket_sizes),
      WHARF_FIELD(T, select_ns),        WHARF_FIELD(T, wait_ns),          WHARF_FIELD(T, inputs_ns),
      WHARF_FIELD(T, launch_ns),        WHARF_FIELD(T, outputs_ns),       WHARF_FIELD(T, release_ns),
      WHARF_FIELD(T, replay_folds),     WHARF_FIELD(T, prepare_folds),    WHARF_FIELD(T, prepointed_replays),
      WHARF_FIELD(T, prepares),         WHARF_FIELD(T, prepare_failures), WHARF_FIELD(T, prepare_ns)};
  static const StructLayout l{"wharf_graph_stats", f, sizeof(f) / sizeof(f[0]), sizeof(T), sizeof(uint32_t)};
  return l;
}

const StructLayout& layout_of(const wharf_graph_bucket_info*) {
  using T = wharf_graph_bucket_info;
  static const FieldInfo f[] = {
      WHARF_FIELD(T, struct_size),  WHARF_FIELD(T, set),           WHARF_FIELD(T, pool_bytes),
      WHARF_FIELD(T, nodes),        WHARF_FIELD(T, patched_nodes), WHARF_FIELD(T, patches),
      WHARF_FIELD(T, capture_ms),   WHARF_FIELD(T, shapes),        WHARF_FIELD(T, bucket_size),
      WHARF_FIELD(T, bind_fold_ms), WHARF_FIELD(T, warmup_ms),     WHARF_FIELD(T, capture_run_ms),
      WHARF_FIELD(T, scan_ms),      WHARF_FIELD(T, instantiate_ms)};
  static const StructLayout l{"wharf_graph_bucket_info", f, sizeof(f) / sizeof(f[0]), sizeof(T), sizeof(uint32_t)};
  return l;
}

}  // namespace api
}  // namespace wharf

extern "C" {

WHARF_API void wharf_model_options_init_sized(wharf_model_options* opts, size_t struct_size) {
  wharf_model_options o;
  std::memset(&o, 0, sizeof o);
  api::init_sized(opts, struct_size, o);
}

WHARF_API wharf_status* wharf_model_load(wharf_runtime* runtime, const char* so_path, const wharf_constant_map* weights,
                                         const wharf_model_options* opts, wharf_model** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(runtime && so_path && weights && out,
                      "wharf_model_load: runtime, so_path, weights and out must not be NULL");
    *out = nullptr;
    wharf_model_options o;
    wharf_model_options_init(&o);
    WHARF_RETURN_IF_ERROR(api::read_options(opts, &o, "wharf_model_options"));
    ModelOptions mo;
    if (o.name) mo.name = o.name;
    if (o.store) mo.store = o.store->store;
    mo.max_session_bytes = o.max_session_bytes;
    mo.session_capacity = o.session_capacity;
    if (o.shim_path) mo.shim_path = o.shim_path;
    mo.progress = api::progress_from_c(o.progress, o.progress_user);
    if (o.offload) {
      auto oc = std::make_shared<OffloaderConfig>();
      WHARF_RETURN_IF_ERROR(api::offloader_config_from_c(o.offload, "wharf_model_load: offload", oc.get()));
      mo.offload = std::move(oc);
    }
    auto h = std::make_unique<wharf_model>();
    WHARF_RETURN_IF_ERROR(Model::load(runtime->rt, so_path, *weights->map, mo, &h->m));
    h->container.c = h->m->container();
    *out = h.release();
    return Status::Ok();
  });
}

WHARF_API void wharf_model_free(wharf_model* model) { delete model; }

WHARF_API wharf_container* wharf_model_container(wharf_model* model) { return model ? &model->container : nullptr; }

WHARF_API wharf_status* wharf_model_get_offloader(wharf_model* model, wharf_offloader** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(model && out, "wharf_model_get_offloader: model and out must not be NULL");
    *out = nullptr;
    if (model->m->offloader()) *out = new wharf_offloader{model->m->offloader()};
    return Status::Ok();
  });
}

WHARF_API size_t wharf_model_num_inputs(const wharf_model* model) { return model ? model->m->num_inputs() : 0; }

WHARF_API size_t wharf_model_num_outputs(const wharf_model* model) { return model ? model->m->num_outputs() : 0; }

WHARF_API const char* wharf_model_input_name(const wharf_model* model, size_t i) {
  return model && i < model->m->num_inputs() ? model->m->input_name(i).c_str() : nullptr;
}

WHARF_API wharf_status* wharf_model_run(wharf_model* model, wharf_run* run, const wharf_tensor_view* inputs,
                                        size_t num_inputs, wharf_tensor_view* outputs, size_t num_outputs) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(run && run->run && model, "wharf_model_run: model and run must not be NULL");
    WHARF_API_REQUIRE(num_inputs == 0 || inputs, "wharf_model_run: inputs is NULL");
    WHARF_API_REQUIRE(num_outputs == 0 || outputs, "wharf_model_run: outputs is NULL");
    if (num_outputs != model->m->num_outputs())
      return InvalidArgument("wharf_model_run: the model has " + std::to_string(model->m->num_outputs()) +
                             " outputs, " + std::to_string(num_outputs) + " views given");
    std::vector<ModelTensor> in(num_inputs);
    api::StructArray<wharf_tensor_view> views;
    WHARF_RETURN_IF_ERROR(views.init(inputs, num_inputs, "wharf_model_run inputs"));
    for (size_t i = 0; i < num_inputs; ++i) {
      wharf_tensor_view v;
      WHARF_RETURN_IF_ERROR(views.get(i, &v, "wharf_model_run input"));
      WHARF_RETURN_IF_ERROR(api::meta_from_view(v, "input " + std::to_string(i), &in[i].meta, &in[i].data));
    }
    // The views' shape and stride arrays live as long as the run: a graph replay's outputs
    // do by themselves (`held`); others are kept until the run ends.
    std::vector<ModelTensor> copied;
    const std::vector<ModelTensor>* outs = nullptr;
    WHARF_RETURN_IF_ERROR(model->m->run(*run->run, in, &copied, &outs));
    if (!outs) {
      auto keep = std::make_shared<std::vector<ModelTensor>>(std::move(copied));
      run->run->at_end([keep] {});
      outs = keep.get();
    }
    if (outs->size() != num_outputs)
      return Internal("wharf_model_run: the model returned " + std::to_string(outs->size()) + " outputs, not " +
                      std::to_string(num_outputs));
    const api::OutputViewArray out_views(outputs);
    for (size_t i = 0; i < num_outputs; ++i) api::view_from_meta((*outs)[i].meta, (*outs)[i].data, out_views.at(i));
    return Status::Ok();
  });
}

WHARF_API void wharf_graph_options_init_sized(wharf_graph_options* opts, size_t struct_size) {
  wharf_graph_options o;
  std::memset(&o, 0, sizeof o);
  api::init_sized(opts, struct_size, o);
}

WHARF_API wharf_status* wharf_model_enable_graphs(wharf_model* model, const wharf_graph_options* opts) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(model, "wharf_model_enable_graphs: model is NULL");
    wharf_graph_options o;
    wharf_graph_options_init(&o);
    WHARF_RETURN_IF_ERROR(api::read_options(opts, &o, "wharf_graph_options"));
    GraphOptions go;
    if (o.max_buckets) go.max_buckets = o.max_buckets;
    go.max_pool_bytes = o.max_pool_bytes;
    if (o.max_concurrent_runs) go.max_concurrent = o.max_concurrent_runs;
    WHARF_API_REQUIRE(o.num_bucket_sizes == 0 || o.bucket_sizes,
                      "wharf_model_enable_graphs: bucket_sizes is NULL with num_bucket_sizes > 0");
    if (o.bucket_dim) go.bucket_dim = o.bucket_dim;
    if (o.num_bucket_sizes) go.bucket_sizes.assign(o.bucket_sizes, o.bucket_sizes + o.num_bucket_sizes);
    go.exact_shapes = o.exact_shapes != 0;
    return model->m->enable_graphs(go);
  });
}

WHARF_API wharf_status* wharf_model_get_graph_stats(const wharf_model* model, wharf_graph_stats* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(model, "wharf_model_get_graph_stats: model is NULL");
    GraphStats st;
    WHARF_RETURN_IF_ERROR(model->m->graph_stats(&st));
    wharf_graph_stats full;
    std::memset(&full, 0, sizeof(full));
    full.struct_size = sizeof(full);
    full.num_buckets = uint32_t(st.buckets.size());
    full.captures = st.captures;
    full.capture_failures = st.capture_failures;
    full.replays = st.replays;
    full.repoints = st.repoints;
    full.nodes_repointed = st.nodes_repointed;
    full.eager_runs = st.eager_runs;
    full.folds = st.folds;
    full.pool_bytes = st.pool_bytes;
    full.folded_bytes = st.folded_bytes;
    full.repoint_ns = st.repoint_ns;
    full.bind_check_ns = st.bind_check_ns;
    full.fold_ns = st.fold_ns;
    std::snprintf(full.last_eager_reason, sizeof full.last_eager_reason, "%s", st.last_eager_reason.c_str());
    full.padded_replays = st.padded_replays;
    std::snprintf(full.bucket_dim, sizeof full.bucket_dim, "%s", st.bucket_dim.c_str());
    full.num_bucket_sizes = uint32_t(st.bucket_sizes.size());
    full.select_ns = st.select_ns;
    full.wait_ns = st.wait_ns;
    full.inputs_ns = st.inputs_ns;
    full.launch_ns = st.launch_ns;
    full.outputs_ns = st.outputs_ns;
    full.release_ns = st.release_ns;
    full.replay_folds = st.replay_folds;
    full.prepare_folds = st.prepare_folds;
    full.prepointed_replays = st.prepointed_replays;
    full.prepares = st.prepares;
    full.prepare_failures = st.prepare_failures;
    full.prepare_ns = st.prepare_ns;
    return api::write_output(full, out, "wharf_graph_stats");
  });
}

WHARF_API wharf_status* wharf_model_get_graph_bucket(const wharf_model* model, uint32_t index,
                                                     wharf_graph_bucket_info* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(model, "wharf_model_get_graph_bucket: model is NULL");
    GraphStats st;
    WHARF_RETURN_IF_ERROR(model->m->graph_stats(&st));
    if (index >= st.buckets.size())
      return InvalidArgument("wharf_model_get_graph_bucket: index " + std::to_string(index) + " past the model's " +
                             std::to_string(st.buckets.size()) + " graphs");
    const GraphBucketStats& b = st.buckets[index];
    wharf_graph_bucket_info full;
    std::memset(&full, 0, sizeof(full));
    full.struct_size = sizeof(full);
    full.set = b.set;
    full.pool_bytes = b.pool_bytes;
    full.nodes = b.nodes;
    full.patched_nodes = b.patched_nodes;
    full.patches = b.patches;
    full.capture_ms = b.capture_ms;
    std::snprintf(full.shapes, sizeof full.shapes, "%s", b.shapes.c_str());
    full.bucket_size = b.size;
    full.bind_fold_ms = b.bind_fold_ms;
    full.warmup_ms = b.warmup_ms;
    full.capture_run_ms = b.capture_run_ms;
    full.scan_ms = b.scan_ms;
    full.instantiate_ms = b.instantiate_ms;
    return api::write_output(full, out, "wharf_graph_bucket_info");
  });
}

WHARF_API wharf_status* wharf_run_copy(const wharf_run* run, void* dst, const void* src, uint64_t bytes) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(run && run->run, "wharf_run_copy: run must not be NULL");
    if (bytes == 0) return Status::Ok();
    WHARF_API_REQUIRE(dst && src, "wharf_run_copy: dst and src must not be NULL");
    Stream& s = run->run->stream();
    WHARF_RETURN_IF_ERROR(s.copy_async(dst, src, bytes).with_context("wharf_run_copy"));
    return s.synchronize().with_context("wharf_run_copy: waiting for the copy");
  });
}

}  // extern "C"
