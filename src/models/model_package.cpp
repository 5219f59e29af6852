// SPDX-License-Identifier: Apache-2.0
#include "models/model_package.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <map>
#include <set>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "constants/constant_map.h"
#include "constants/weight_store.h"
#include "core/tensor.h"
#include "core/text.h"
#include "device/runtime.h"
#include "io/read_only_file.h"
#include "models/model.h"

namespace wharf {
namespace {

// Largest manifest read: it lists names and shapes only (a 70B model's is under 1 MiB).
constexpr uint64_t kMaxManifestBytes = 64ull << 20;

std::string errno_text(int err) { return std::generic_category().message(err); }

// The package directory's real path (symbolic links resolved), which must be a directory.
Status real_dir(const std::string& dir, std::string* out) {
  if (dir.empty()) return InvalidArgument("model package: an empty directory path");
  char* rp = ::realpath(dir.c_str(), nullptr);
  if (!rp) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return NotFound("no model package " + quote_path(dir));
    return IoError("model package " + quote_path(dir) + ": " + errno_text(err));
  }
  *out = rp;
  std::free(rp);
  struct stat st;
  if (::stat(out->c_str(), &st) != 0) return IoError("model package " + quote_path(dir) + ": " + errno_text(errno));
  if (!S_ISDIR(st.st_mode))
    return InvalidArgument("model package " + quote_path(dir) +
                           " is not a directory (a package is a directory with "
                           "a manifest.json)");
  return Status::Ok();
}

// The real path of `rel` inside the package at `root` (a real path): NOT_FOUND when missing,
// INVALID_ARGUMENT when a symbolic link takes it out of the package or it is not a regular file.
Status resolve(const std::string& where, const std::string& root, const std::string& field, const std::string& rel,
               std::string* out) {
  const std::string joined = root + "/" + rel;
  char* rp = ::realpath(joined.c_str(), nullptr);
  if (!rp) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR)
      return NotFound(where + ": " + field + ": no file " + quote_path(rel) + " in the package");
    return IoError(where + ": " + field + ": " + quote_path(rel) + ": " + errno_text(err));
  }
  std::string real = rp;
  std::free(rp);
  if (real.compare(0, root.size() + 1, root + "/") != 0)
    return InvalidArgument(where + ": " + field + ": " + quote_path(rel) + " leaves the package (a symbolic link to " +
                           quote_path(real) + ")");
  struct stat st;
  if (::stat(real.c_str(), &st) != 0)
    return IoError(where + ": " + field + ": " + quote_path(rel) + ": " + errno_text(errno));
  if (!S_ISREG(st.st_mode))
    return InvalidArgument(where + ": " + field + ": " + quote_path(rel) + " is not a regular file");
  *out = std::move(real);
  return Status::Ok();
}

Status read_manifest(const std::string& what, const std::string& root, std::string* text) {
  std::string path;
  {
    Status st = resolve(what, root, "manifest.json", "manifest.json", &path);
    if (st.code() == Code::kNotFound) return NotFound(what + ": no manifest.json (not a Wharf model package)");
    WHARF_RETURN_IF_ERROR(st);
  }
  std::shared_ptr<const io::ReadOnlyFile> f;
  WHARF_RETURN_IF_ERROR(io::ReadOnlyFile::open(path, &f).with_context(what));
  if (f->size() > kMaxManifestBytes)
    return InvalidArgument(what + ": manifest.json is " + std::to_string(f->size()) + " bytes (at most " +
                           std::to_string(kMaxManifestBytes) + ")");
  text->resize(size_t(f->size()));
  return f->read_exact(text->data(), f->size(), 0).with_context(what);
}

std::string decl_text(DType d, const std::vector<int64_t>& shape) {
  return std::string(dtype_name(d)) + " " + shape_string(shape);
}

}  // namespace

std::vector<SymbolicDim> package_method_dims(const PackageMethod& pm, const std::string& field) {
  std::vector<SymbolicDim> out;
  auto note = [&out, &pm](const std::vector<PackageTensor>& ts, bool inputs) {
    for (size_t k = 0; k < ts.size(); ++k)
      for (size_t d = 0; d < ts[k].dim_names.size(); ++d) {
        const std::string& name = ts[k].dim_names[d];
        if (name.empty()) continue;
        SymbolicDim* sd = nullptr;
        for (SymbolicDim& x : out)
          if (x.name == name) sd = &x;
        if (!sd) {
          out.emplace_back();
          sd = &out.back();
          sd->name = name;
          sd->min = ts[k].dim_min[d];
          sd->max = ts[k].dim_max[d];
          sd->inputs.assign(pm.inputs.size(), -1);
          sd->outputs.assign(pm.outputs.size(), -1);
        }
        int& at = inputs ? sd->inputs[k] : sd->outputs[k];
        at = at == -1 ? int(d) : -2;
      }
  };
  note(pm.inputs, true);
  note(pm.outputs, false);
  // A batched method's session dimension (the slots input's): rows are independent sessions,
  // padded by default. A dimension marked "pad": "repeat": the exporter's promise that rows
  // are keyed by their own position (its prefill; checked by the exporter before it marks it).
  const std::string* session = nullptr;
  if (pm.session_capacity > 0 && pm.slots_input >= 0 && !pm.inputs[size_t(pm.slots_input)].dim_names.empty())
    session = &pm.inputs[size_t(pm.slots_input)].dim_names[0];
  for (SymbolicDim& x : out) {
    if (session && x.name == *session) {
      x.rows_independent = true;
      x.padded_by_default = true;
      continue;
    }
    for (const std::string& r : pm.repeat_dims)
      if (x.name == r) x.rows_independent = true;
    if (!x.rows_independent)
      x.pad_refusal = "manifest.json's " + field + ".dims." + x.name +
                      " is not marked \"pad\": \"repeat\", so repeating its last row is not known to leave the "
                      "real rows' results unchanged (a prefill exported before tools/export/wharf_export.py placed "
                      "each row's attention mask at its own cache_position gave its last row other logits when "
                      "padded): re-export the package with the current exporter to pad it, or declare exact shapes";
  }
  return out;
}

ModelPackage::~ModelPackage() = default;

Status ModelPackage::get_method(std::string_view name, std::shared_ptr<Model>* out) const {
  const int i = find_method(name);
  if (i < 0) {
    std::string names;
    for (const PackageMethod& m : manifest_.methods) names += (names.empty() ? "" : ", ") + quote_name(m.name);
    return NotFound("model package " + quote_name(manifest_.name) + " has no method " + quote_name(std::string(name)) +
                    " (its methods: " + names + ")");
  }
  if (!methods_[size_t(i)]) {
    const uint32_t s = manifest_.methods[size_t(i)].session_capacity;
    return FailedPrecondition(
        "model package " + quote_name(manifest_.name) + ": method " + quote_name(std::string(name)) +
        " runs over a state arena of " + std::to_string(s) + " sessions (session_capacity " + std::to_string(s) +
        "); the package was loaded without one: load it with session_capacity " + std::to_string(s));
  }
  *out = methods_[size_t(i)];
  return Status::Ok();
}

int ModelPackage::find_method(std::string_view name) const {
  for (size_t i = 0; i < manifest_.methods.size(); ++i)
    if (manifest_.methods[i].name == name) return int(i);
  return -1;
}

Status ModelPackage::create_session(const SessionOptions& opts, std::shared_ptr<Session>* out) const {
  std::vector<std::shared_ptr<Container>> containers;
  for (const auto& m : methods_)
    if (m) containers.push_back(m->container());
  return Session::create(runtime_, std::move(containers), opts, out)
      .with_context("model package " + quote_name(manifest_.name));
}

Status ModelPackage::load(std::shared_ptr<Runtime> runtime, const std::string& dir, const PackageOptions& opts,
                          std::shared_ptr<ModelPackage>* out) {
  out->reset();
  std::shared_ptr<ModelPackage> p(new ModelPackage());
  p->runtime_ = runtime;
  std::string root;
  WHARF_RETURN_IF_ERROR(real_dir(dir, &root));
  p->dir_ = root;
  const std::string what = "model package " + quote_path(dir);
  const std::string mwhat = what + ": manifest.json";
  std::string text;
  WHARF_RETURN_IF_ERROR(read_manifest(what, root, &text));
  WHARF_RETURN_IF_ERROR(parse_manifest(text, mwhat, &p->manifest_));
  const Manifest& m = p->manifest_;
  // A batched method needs the arena it was compiled over; the package loads without it
  // (session_capacity 0: the method is listed, not loaded), never with another one.
  for (size_t i = 0; i < m.methods.size(); ++i) {
    const uint32_t s = m.methods[i].session_capacity;
    if (s > 0 && opts.session_capacity > 0 && opts.session_capacity != s)
      return InvalidArgument(
          mwhat + ": " + manifest_item("methods", i) + " (" + quote_name(m.methods[i].name) + "): session_capacity " +
          std::to_string(s) + ": the method is compiled over a state arena of " + std::to_string(s) +
          " sessions; the package is loaded with session_capacity " + std::to_string(opts.session_capacity) +
          " (load it with " + std::to_string(s) + ", or 0 to leave the method out)");
  }

  // Every file the manifest names exists inside the package.
  std::vector<std::string> method_paths(m.methods.size()), weight_paths(m.weight_files.size());
  for (size_t i = 0; i < m.methods.size(); ++i)
    WHARF_RETURN_IF_ERROR(
        resolve(mwhat, root, manifest_item("methods", i) + ".file", m.methods[i].file, &method_paths[i]));
  for (size_t i = 0; i < m.weight_files.size(); ++i)
    WHARF_RETURN_IF_ERROR(resolve(mwhat, root, manifest_item("weights.files", i), m.weight_files[i], &weight_paths[i]));
  std::string state_path;
  if (!m.state_file.empty()) WHARF_RETURN_IF_ERROR(resolve(mwhat, root, "state_file", m.state_file, &state_path));

  // The weight files' headers against the manifest's parameters: each tensor listed, found
  // once, with the manifest's dtype and shape. The map holds file ranges (read with pread
  // when the first method loads them), in the manifest's order.
  std::unordered_map<std::string, size_t> param_index;
  for (size_t i = 0; i < m.parameters.size(); ++i) param_index.emplace(m.parameters[i].fqn, i);
  std::vector<std::unique_ptr<ConstantMap>> files(m.weight_files.size());
  std::vector<const MapEntry*> found(m.parameters.size(), nullptr);
  std::vector<size_t> found_in(m.parameters.size(), 0);
  for (size_t f = 0; f < m.weight_files.size(); ++f) {
    const std::string fwhat = what + ": weight file " + quote_path(m.weight_files[f]);
    Status st = ConstantMap::open_safetensors(weight_paths[f], &files[f]);
    if (!st.ok()) return Status(st.code(), what + ": " + st.message());
    for (size_t k = 0; k < files[f]->size(); ++k) {
      const MapEntry& e = files[f]->entry(k);
      auto it = param_index.find(e.fqn);
      if (it == param_index.end())
        return InvalidArgument(fwhat + ": tensor " + quote_name(e.fqn) +
                               " is not listed in the manifest's weights.parameters");
      const PackageParameter& pp = m.parameters[it->second];
      if (found[it->second])
        return InvalidArgument(fwhat + ": tensor " + quote_name(e.fqn) + " is in weight file " +
                               quote_path(m.weight_files[found_in[it->second]]) + " too");
      if (e.meta.dtype != pp.dtype || e.meta.shape != pp.shape)
        return InvalidArgument(fwhat + ": tensor " + quote_name(e.fqn) + " is " +
                               decl_text(e.meta.dtype, e.meta.shape) + ", the manifest declares " +
                               decl_text(pp.dtype, pp.shape));
      found[it->second] = &e;
      found_in[it->second] = f;
    }
  }
  auto weights = std::make_unique<ConstantMap>();
  for (size_t i = 0; i < m.parameters.size(); ++i) {
    if (!found[i])
      return InvalidArgument(mwhat + ": " + manifest_item("weights.parameters", i) + ": parameter " +
                             quote_name(m.parameters[i].fqn) + " is in no weight file");
    WHARF_RETURN_IF_ERROR(weights->add_entry(*found[i]));
  }

  // State declarations; initial values from the state file (mapped: they are copied once into
  // each container's template).
  std::unique_ptr<ConstantMap> state_file;
  if (!state_path.empty()) {
    Status st = ConstantMap::load_safetensors(state_path, &state_file);
    if (!st.ok()) return Status(st.code(), what + ": state_file: " + st.message());
  }
  std::vector<StateInit> states;
  for (size_t i = 0; i < m.states.size(); ++i) {
    const PackageState& ps = m.states[i];
    StateInit si;
    si.fqn = ps.fqn;
    si.dtype = ps.dtype;
    si.shape = ps.shape;
    if (!ps.initial_tensor.empty()) {
      const MapEntry* e = state_file->find(ps.initial_tensor);
      if (!e)
        return NotFound(mwhat + ": " + manifest_item("state", i) + ".initial: tensor " + quote_name(ps.initial_tensor) +
                        " is not in the state file " + quote_path(m.state_file));
      if (e->meta.dtype != ps.dtype || e->meta.shape != ps.shape)
        return InvalidArgument(mwhat + ": " + manifest_item("state", i) + ".initial: tensor " +
                               quote_name(ps.initial_tensor) + " of " + quote_path(m.state_file) + " is " +
                               decl_text(e->meta.dtype, e->meta.shape) + ", the state is declared " +
                               decl_text(ps.dtype, ps.shape));
      si.has_initial = true;
      si.meta = e->meta;
      si.data = e->data;
    }
    states.push_back(std::move(si));
  }

  // The device from here on: the weights once into a new store, each method over it.
  p->store_ = std::make_shared<WeightStore>(runtime);
  p->store_->set_aliases(m.aliases);
  uint64_t total = 0;
  for (const PackageParameter& pp : m.parameters) {
    TensorMeta tm;
    tm.dtype = pp.dtype;
    tm.shape = pp.shape;
    total += tm.nbytes();
  }
  // The state arena over every declared state (each method binds a subset), before any method.
  std::shared_ptr<StateArena> arena;
  if (opts.session_capacity > 0) {
    std::vector<StateDecl> decls(states.size());
    for (size_t i = 0; i < states.size(); ++i) {
      TensorMeta tm;
      tm.dtype = states[i].dtype;
      tm.shape = states[i].shape;
      decls[i].fqn = states[i].fqn;
      decls[i].dtype = states[i].dtype;
      decls[i].shape = states[i].shape;
      decls[i].nbytes = tm.nbytes();
    }
    WHARF_RETURN_IF_ERROR(StateArena::create(runtime, m.name, opts.session_capacity, decls, &arena).with_context(what));
  }
  uint64_t base = 0, current_total = 0;  // bytes of the methods loaded before, and of this one's load
  for (size_t i = 0; i < m.methods.size(); ++i) {
    const PackageMethod& pm = m.methods[i];
    if (pm.session_capacity > 0 && !arena) {  // left out: listed, get_method says why
      p->methods_.push_back(nullptr);
      continue;
    }
    ModelOptions mo;
    mo.name = m.name + "/" + pm.name;
    mo.store = p->store_;
    mo.max_session_bytes = opts.max_session_bytes;
    mo.arena = arena;
    mo.shim_path = opts.shim_path;
    mo.declared_states = &states;
    mo.expected_inputs = int64_t(pm.inputs.size());
    mo.expected_outputs = int64_t(pm.outputs.size());
    for (const PackageTensor& t : pm.inputs) mo.input_names.push_back(t.name);
    mo.context = "manifest.json: " + manifest_item("methods", i) + " (" + quote_name(pm.name) +
                 ")";                                                // follows the method's name
    mo.dims = package_method_dims(pm, manifest_item("methods", i));  // what graph buckets may pad
    if (pm.session_capacity > 0) {
      // Its states are the whole arena; the inputs sized by the slots' dimension count sessions.
      mo.whole_arena_states = true;
      mo.slots_input = pm.slots_input;
      const PackageTensor& slots = pm.inputs[size_t(pm.slots_input)];
      mo.batch_dims.assign(pm.inputs.size(), -1);
      for (size_t k = 0; k < pm.inputs.size(); ++k)
        for (size_t d = 0; d < pm.inputs[k].dim_names.size(); ++d)
          if (!slots.dim_names[0].empty() && pm.inputs[k].dim_names[d] == slots.dim_names[0] && mo.batch_dims[k] < 0)
            mo.batch_dims[k] = int(d);
    }
    if (opts.progress) {
      // One total for the package: each method's load copies what the store does not hold yet.
      current_total = 0;
      mo.progress = [&opts, &base, &current_total, total](uint64_t done, uint64_t t) {
        current_total = t;
        return opts.progress(base + done, total);
      };
    }
    std::shared_ptr<Model> model;
    Status st = Model::load(runtime, method_paths[i], *weights, mo, &model);
    if (!st.ok()) {
      if (st.code() == Code::kCancelled) return st;
      return st.with_context(what + ": method " + quote_name(pm.name));
    }
    base += current_total;
    p->methods_.push_back(std::move(model));
  }
  // Every listed parameter is bound by some method: one no method binds would be a weight
  // nothing reads, and a checkpoint update naming it would be refused by the store.
  std::set<std::string> bound;
  for (const auto& model : p->methods_)
    if (model)
      for (const ConstantDecl& d : model->container()->decls()) bound.insert(d.fqn);
  for (size_t i = 0; i < m.parameters.size(); ++i)
    if (!bound.count(m.parameters[i].fqn))
      return InvalidArgument(mwhat + ": " + manifest_item("weights.parameters", i) + ": parameter " +
                             quote_name(m.parameters[i].fqn) + " is bound by no method");
  std::set<std::string> used_states;
  for (const auto& model : p->methods_)
    if (model)
      for (const StateDecl& d : model->container()->states()) used_states.insert(d.fqn);
  for (size_t i = 0; i < m.states.size(); ++i)
    if (!used_states.count(m.states[i].fqn))
      return InvalidArgument(mwhat + ": " + manifest_item("state", i) + ": state " + quote_name(m.states[i].fqn) +
                             " is a buffer of no method");
  *out = std::move(p);
  return Status::Ok();
}

}  // namespace wharf
