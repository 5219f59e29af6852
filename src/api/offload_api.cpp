// SPDX-License-Identifier: Apache-2.0
// Offloader functions of wharf.h (experimental tier): argument checks and conversions only.
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "api/offload_api.h"

#include "api/boundary.h"
#include "api/handles.h"
#include "offload/offloader.h"

using namespace wharf;

namespace {

const api::StructLayout& offloader_options_layout() {
  using T = wharf_offloader_options;
  static const api::FieldInfo f[] = {WHARF_FIELD(T, struct_size),      WHARF_FIELD(T, fqns),
                                     WHARF_FIELD(T, num_fqns),         WHARF_FIELD(T, layer_pattern),
                                     WHARF_FIELD(T, group_size),       WHARF_FIELD(T, num_in_group),
                                     WHARF_FIELD(T, prefetch_step),    WHARF_FIELD(T, slot_capacity),
                                     WHARF_FIELD(T, step_compute_us),  WHARF_FIELD(T, h2d_bytes_per_second),
                                     WHARF_FIELD(T, refuse_if_exposed)};
  static const api::StructLayout l{"wharf_offloader_options", f, sizeof(f) / sizeof(f[0]), sizeof(T), sizeof(uint32_t)};
  return l;
}

const api::StructLayout& budget_layout() {
  using T = wharf_offloader_budget;
  static const api::FieldInfo f[] = {WHARF_FIELD(T, struct_size),    WHARF_FIELD(T, num_offloaded_layers),
                                     WHARF_FIELD(T, bytes_per_step), WHARF_FIELD(T, h2d_bytes_per_second),
                                     WHARF_FIELD(T, h2d_source),     WHARF_FIELD(T, copy_us),
                                     WHARF_FIELD(T, compute_us),     WHARF_FIELD(T, exposed_us)};
  static const api::StructLayout l{"wharf_offloader_budget", f, sizeof(f) / sizeof(f[0]), sizeof(T), sizeof(uint32_t)};
  return l;
}

wharf_offloader_options default_options() {
  wharf_offloader_options o;
  std::memset(&o, 0, sizeof o);
  o.num_in_group = 1;
  o.prefetch_step = 1;
  return o;
}

// api::read_options for this struct (its layout lives here, not in boundary.h).
Status read_offloader_options(const wharf_offloader_options* in, wharf_offloader_options* out) {
  *out = default_options();
  if (!in) return Status::Ok();
  const api::StructLayout& L = offloader_options_layout();
  const uint32_t size = api::stated_size(in);
  if (size < L.min_size)
    return InvalidArgument("wharf_offloader_options: struct_size " + std::to_string(size) +
                           " is too small; call wharf_offloader_options_init first");
  WHARF_RETURN_IF_ERROR(api::check_input_size(in, size, L, "wharf_offloader_options"));
  std::memcpy(static_cast<void*>(out), in, size < sizeof *out ? size : sizeof *out);
  out->struct_size = sizeof *out;
  return Status::Ok();
}

Status offloader_run(wharf_run* run, wharf_offloader* offloader, const char* fn, Run** out) {
  if (!run || !run->run || !offloader) return InvalidArgument(std::string(fn) + ": run and offloader must not be NULL");
  if (!run->owned)
    return FailedPrecondition(std::string(fn) + ": a fold callback's run cannot offload (it is no lease)");
  *out = run->run;
  return Status::Ok();
}

}  // namespace

Status wharf::api::offloader_config_from_c(const wharf_offloader_options* opts, const char* fn, OffloaderConfig* out) {
  wharf_offloader_options o;
  WHARF_RETURN_IF_ERROR(read_offloader_options(opts, &o));
  if (o.num_fqns > 0 && !o.fqns) return InvalidArgument(std::string(fn) + ": fqns is NULL with num_fqns > 0");
  OffloaderConfig cfg;
  for (size_t i = 0; i < o.num_fqns; ++i) {
    if (!o.fqns[i]) return InvalidArgument(std::string(fn) + ": fqns[" + std::to_string(i) + "] is NULL");
    cfg.fqns.emplace_back(o.fqns[i]);
  }
  if (o.layer_pattern) cfg.layer_pattern = o.layer_pattern;
  cfg.group_size = o.group_size;
  cfg.num_in_group = o.num_in_group;
  cfg.prefetch_step = o.prefetch_step;
  cfg.slot_capacity = o.slot_capacity;
  cfg.step_compute_us = o.step_compute_us;
  cfg.h2d_bytes_per_second = o.h2d_bytes_per_second;
  cfg.refuse_if_exposed = o.refuse_if_exposed != 0;
  *out = std::move(cfg);
  return Status::Ok();
}

extern "C" {

WHARF_API void wharf_offloader_options_init_sized(wharf_offloader_options* opts, size_t struct_size) {
  api::init_sized(opts, struct_size, default_options());
}

WHARF_API wharf_status* wharf_offloader_create(wharf_container* container, const wharf_offloader_options* opts,
                                               wharf_offloader** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(container && out, "wharf_offloader_create: container and out must not be NULL");
    *out = nullptr;
    OffloaderConfig cfg;
    WHARF_RETURN_IF_ERROR(api::offloader_config_from_c(opts, "wharf_offloader_create", &cfg));
    auto h = std::make_unique<wharf_offloader>();
    WHARF_RETURN_IF_ERROR(Offloader::create(container->c, cfg, &h->o));
    *out = h.release();
    return Status::Ok();
  });
}

WHARF_API void wharf_offloader_free(wharf_offloader* offloader) { delete offloader; }

WHARF_API wharf_status* wharf_offloader_get_budget(const wharf_offloader* offloader, wharf_offloader_budget* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(offloader && out, "wharf_offloader_get_budget: offloader and out must not be NULL");
    const uint32_t size = out->struct_size;
    if (size < sizeof(uint32_t))
      return InvalidArgument("wharf_offloader_budget: output struct_size " + std::to_string(size) +
                             " is too small; set it to sizeof the struct");
    size_t n = 0;
    WHARF_RETURN_IF_ERROR(api::check_output_size(size, budget_layout(), "wharf_offloader_budget", &n));
    const OffloadBudget& b = offloader->o->budget();
    wharf_offloader_budget full;
    std::memset(&full, 0, sizeof full);
    full.num_offloaded_layers = b.offloaded_layers;
    full.bytes_per_step = b.bytes_per_step;
    full.h2d_bytes_per_second = b.h2d_bytes_per_second;
    full.h2d_source = int32_t(b.h2d_source);
    full.copy_us = b.copy_us;
    full.compute_us = b.compute_us;
    full.exposed_us = b.exposed_us;
    std::memcpy(static_cast<void*>(out), &full, n);
    out->struct_size = size;
    return Status::Ok();
  });
}

WHARF_API uint32_t wharf_offloader_num_layers(const wharf_offloader* offloader) {
  return offloader ? offloader->o->num_layers() : 0;
}

WHARF_API size_t wharf_offloader_num_layer_constants(const wharf_offloader* offloader, uint32_t layer) {
  return offloader ? offloader->o->layer_constants(layer).size() : 0;
}

WHARF_API const char* wharf_offloader_layer_constant(const wharf_offloader* offloader, uint32_t layer, size_t i) {
  if (!offloader) return nullptr;
  const auto& cs = offloader->o->layer_constants(layer);
  if (i >= cs.size()) return nullptr;
  return offloader->o->container()->decls()[size_t(cs[i].index)].fqn.c_str();
}

WHARF_API wharf_status* wharf_run_begin_offload(wharf_run* run, wharf_offloader* offloader) {
  return api::guarded(__func__, [&]() -> Status {
    Run* r = nullptr;
    WHARF_RETURN_IF_ERROR(offloader_run(run, offloader, "wharf_run_begin_offload", &r));
    return offloader->o->begin(*r);
  });
}

WHARF_API wharf_status* wharf_run_wait_offload(wharf_run* run, wharf_offloader* offloader, uint32_t layer,
                                               wharf_tensor_view* views, size_t num_views) {
  return api::guarded(__func__, [&]() -> Status {
    Run* r = nullptr;
    WHARF_RETURN_IF_ERROR(offloader_run(run, offloader, "wharf_run_wait_offload", &r));
    WHARF_API_REQUIRE(num_views == 0 || views, "wharf_run_wait_offload: views is NULL with num_views > 0");
    const size_t need = offloader->o->layer_constants(layer).size();
    if (views && num_views < need)
      return InvalidArgument("wharf_run_wait_offload: layer " + std::to_string(layer) + " has " + std::to_string(need) +
                             " offloaded constants; views holds " + std::to_string(num_views));
    char* slot = nullptr;
    WHARF_RETURN_IF_ERROR(offloader->o->wait(*r, layer, &slot));
    if (!views || !slot) return Status::Ok();
    const Container& c = *offloader->o->container();
    const std::vector<OffloadedConstant>& cs = offloader->o->layer_constants(layer);
    const api::OutputViewArray out_views(views);
    for (size_t i = 0; i < cs.size(); ++i) {
      const ConstantDecl& d = c.decls()[size_t(cs[i].index)];
      BoundTensor b;
      b.data = slot + cs[i].offset;
      b.dtype = d.dtype;
      b.shape = &d.shape;
      b.nbytes = d.nbytes;
      b.read_only = true;  // a copy of a constant that later layers' prefetches reuse
      b.device_type = c.device_type_of(Placement::kDevice);
      b.device_index = b.device_type == DeviceType::kCuda ? offloader->o->container()->runtime().device().index() : 0;
      api::view_from_bound(b, out_views.at(i));
    }
    return Status::Ok();
  });
}

WHARF_API wharf_status* wharf_run_mark_offload_issued(wharf_run* run, wharf_offloader* offloader, uint32_t layer) {
  return api::guarded(__func__, [&]() -> Status {
    Run* r = nullptr;
    WHARF_RETURN_IF_ERROR(offloader_run(run, offloader, "wharf_run_mark_offload_issued", &r));
    return offloader->o->issued(*r, layer);
  });
}

WHARF_API wharf_status* wharf_run_end_offload(wharf_run* run, wharf_offloader* offloader) {
  return api::guarded(__func__, [&]() -> Status {
    Run* r = nullptr;
    WHARF_RETURN_IF_ERROR(offloader_run(run, offloader, "wharf_run_end_offload", &r));
    return offloader->o->end(*r);
  });
}

}  // extern "C"
