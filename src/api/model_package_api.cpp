// SPDX-License-Identifier: Apache-2.0
// Model package functions of wharf.h (experimental tier): argument checks and conversions
// only; the loader is models/model_package.h.
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

#define WHARF_EXPERIMENTAL
#include "api/boundary.h"
#include "api/handles.h"
#include "api/model_api.h"
#include "core/text.h"
#include "models/model_package.h"

using namespace wharf;

struct wharf_model_package {
  std::shared_ptr<ModelPackage> p;
  wharf_weight_store store;  // the borrowed handle wharf_model_package_store returns
};

namespace wharf {
namespace api {

const StructLayout& layout_of(const wharf_model_package_options*) {
  using T = wharf_model_package_options;
  static const FieldInfo f[] = {WHARF_FIELD(T, struct_size),       WHARF_FIELD(T, shim_path),
                                WHARF_FIELD(T, max_session_bytes), WHARF_FIELD(T, progress),
                                WHARF_FIELD(T, progress_user),     WHARF_FIELD(T, session_capacity)};
  static const StructLayout l{"wharf_model_package_options", f, sizeof(f) / sizeof(f[0]), sizeof(T), sizeof(uint32_t)};
  return l;
}

const StructLayout& layout_of(const wharf_model_package_tensor_info*) {
  using T = wharf_model_package_tensor_info;
  static const FieldInfo f[] = {WHARF_FIELD(T, struct_size), WHARF_FIELD(T, name),   WHARF_FIELD(T, dtype),
                                WHARF_FIELD(T, ndim),        WHARF_FIELD(T, shape),  WHARF_FIELD(T, dim_names),
                                WHARF_FIELD(T, dim_min),     WHARF_FIELD(T, dim_max)};
  static const StructLayout l{"wharf_model_package_tensor_info", f, sizeof(f) / sizeof(f[0]), sizeof(T),
                              sizeof(uint32_t)};
  return l;
}

}  // namespace api
}  // namespace wharf

namespace {

const PackageMethod* method_at(const wharf_model_package* package, size_t method) {
  if (!package || method >= package->p->manifest().methods.size()) return nullptr;
  return &package->p->manifest().methods[method];
}

Status tensor_info(const wharf_model_package* package, size_t method, size_t i, bool input,
                   wharf_model_package_tensor_info* out, const char* fn) {
  WHARF_API_REQUIRE(package && out, std::string(fn) + ": package and out must not be NULL");
  const PackageMethod* m = method_at(package, method);
  if (!m)
    return InvalidArgument(std::string(fn) + ": method index " + std::to_string(method) + " out of range (" +
                           std::to_string(package->p->num_methods()) + " methods)");
  const auto& list = input ? m->inputs : m->outputs;
  if (i >= list.size())
    return InvalidArgument(std::string(fn) + ": index " + std::to_string(i) + " out of range (method " +
                           quote_name(m->name) + " has " + std::to_string(list.size()) +
                           (input ? " inputs)" : " outputs)"));
  const PackageTensor& t = list[i];
  wharf_model_package_tensor_info full;
  std::memset(&full, 0, sizeof full);
  full.struct_size = sizeof full;
  full.name = t.name.c_str();
  full.dtype = static_cast<wharf_dtype>(t.dtype);
  full.ndim = int32_t(t.shape.size());
  full.shape = t.shape.empty() ? nullptr : t.shape.data();
  full.dim_names = t.dim_name_c.empty() ? nullptr : t.dim_name_c.data();
  full.dim_min = t.dim_min.empty() ? nullptr : t.dim_min.data();
  full.dim_max = t.dim_max.empty() ? nullptr : t.dim_max.data();
  return api::write_output(full, out, "wharf_model_package_tensor_info");
}

}  // namespace

extern "C" {

WHARF_API void wharf_model_package_options_init_sized(wharf_model_package_options* opts, size_t struct_size) {
  wharf_model_package_options o;
  std::memset(&o, 0, sizeof o);
  api::init_sized(opts, struct_size, o);
}

WHARF_API wharf_status* wharf_model_package_load(wharf_runtime* runtime, const char* dir,
                                                 const wharf_model_package_options* opts, wharf_model_package** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(runtime && dir && out, "wharf_model_package_load: runtime, dir and out must not be NULL");
    *out = nullptr;
    wharf_model_package_options o;
    wharf_model_package_options_init(&o);
    WHARF_RETURN_IF_ERROR(api::read_options(opts, &o, "wharf_model_package_options"));
    PackageOptions po;
    if (o.shim_path) po.shim_path = o.shim_path;
    po.max_session_bytes = o.max_session_bytes;
    po.session_capacity = o.session_capacity;
    po.progress = api::progress_from_c(o.progress, o.progress_user);
    auto h = std::make_unique<wharf_model_package>();
    WHARF_RETURN_IF_ERROR(ModelPackage::load(runtime->rt, dir, po, &h->p));
    h->store.store = h->p->store();
    *out = h.release();
    return Status::Ok();
  });
}

WHARF_API void wharf_model_package_free(wharf_model_package* package) { delete package; }

WHARF_API const char* wharf_model_package_name(const wharf_model_package* package) {
  return package ? package->p->manifest().name.c_str() : nullptr;
}

WHARF_API uint64_t wharf_model_package_max_seq_len(const wharf_model_package* package) {
  return package ? package->p->manifest().max_seq_len : 0;
}

WHARF_API wharf_weight_store* wharf_model_package_store(wharf_model_package* package) {
  return package ? &package->store : nullptr;
}

WHARF_API size_t wharf_model_package_num_methods(const wharf_model_package* package) {
  return package ? package->p->num_methods() : 0;
}

WHARF_API const char* wharf_model_package_method_name(const wharf_model_package* package, size_t i) {
  const PackageMethod* m = method_at(package, i);
  return m ? m->name.c_str() : nullptr;
}

WHARF_API int64_t wharf_model_package_find_method(const wharf_model_package* package, const char* name) {
  if (!package || !name) return -1;
  return package->p->find_method(name);
}

WHARF_API wharf_status* wharf_model_package_get_method(wharf_model_package* package, const char* name,
                                                       wharf_model** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(package && name && out, "wharf_model_package_get_method: package, name and out must not be NULL");
    *out = nullptr;
    auto h = std::make_unique<wharf_model>();
    WHARF_RETURN_IF_ERROR(package->p->get_method(name, &h->m).with_context("wharf_model_package_get_method"));
    h->container.c = h->m->container();
    *out = h.release();
    return Status::Ok();
  });
}

WHARF_API wharf_status* wharf_model_package_create_session(wharf_model_package* package,
                                                           const wharf_session_options* opts, wharf_session** out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(package && out, "wharf_model_package_create_session: package and out must not be NULL");
    *out = nullptr;
    wharf_session_options o;
    wharf_session_options_init(&o);
    WHARF_RETURN_IF_ERROR(api::read_options(opts, &o, "wharf_session_options"));
    SessionOptions so;
    so.max_state_bytes = o.max_state_bytes;
    so.allocate_eagerly = o.allocate_eagerly != 0;
    auto h = std::make_unique<wharf_session>();
    WHARF_RETURN_IF_ERROR(package->p->create_session(so, &h->s));
    *out = h.release();
    return Status::Ok();
  });
}

WHARF_API size_t wharf_model_package_num_method_inputs(const wharf_model_package* package, size_t method) {
  const PackageMethod* m = method_at(package, method);
  return m ? m->inputs.size() : 0;
}

WHARF_API size_t wharf_model_package_num_method_outputs(const wharf_model_package* package, size_t method) {
  const PackageMethod* m = method_at(package, method);
  return m ? m->outputs.size() : 0;
}

WHARF_API wharf_status* wharf_model_package_get_method_input(const wharf_model_package* package, size_t method,
                                                             size_t i, wharf_model_package_tensor_info* out) {
  return api::guarded(
      __func__, [&]() { return tensor_info(package, method, i, true, out, "wharf_model_package_get_method_input"); });
}

WHARF_API wharf_status* wharf_model_package_get_method_output(const wharf_model_package* package, size_t method,
                                                              size_t i, wharf_model_package_tensor_info* out) {
  return api::guarded(
      __func__, [&]() { return tensor_info(package, method, i, false, out, "wharf_model_package_get_method_output"); });
}

}  // extern "C"
