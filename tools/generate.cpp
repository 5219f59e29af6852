// SPDX-License-Identifier: Apache-2.0
// `wharf generate PACKAGE --prompt 1,2,3 --max-new-tokens N`: greedy decoding with a model
// package (docs/model-package.md) through the public C API, as a C service would drive it:
// wharf_model_package_load, one session over its methods, `prefill` over the prompt at
// positions 0..T-1, then `decode` one token at a time at position T+t; each token is the
// argmax of the last position's float32 logits, read on the host with wharf_run_copy.
// --update FILE --update-after K: after the K-th generated token, the package's weight store
// is updated from FILE and swapped, and the same session (conversation) goes on with the new
// weights. Inputs are host memory (wharf_model_run copies them to the device). --graphs: the
// decode method replays a CUDA graph; --json then says how many steps it served ("graphs").
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#define WHARF_EXPERIMENTAL
#include "cli.h"
#include "core/text.h"
#include "io/json.h"

namespace wharf_cli {
namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

// The graph statistics of `m` (left as they are when they cannot be read).
void read_graph_stats(wharf_model* m, wharf_graph_stats* out) {
  wharf_status_free(wharf_model_get_graph_stats(m, out));
}

struct RuntimeDeleter {
  void operator()(wharf_runtime* r) const { wharf_runtime_free(r); }
};
struct PackageDeleter {
  void operator()(wharf_model_package* p) const { wharf_model_package_free(p); }
};
struct ModelDeleter {
  void operator()(wharf_model* m) const { wharf_model_free(m); }
};
struct SessionDeleter {
  void operator()(wharf_session* s) const { wharf_session_free(s); }
};

// The error of a generate run: printed as "wharf: generate: CODE: message", or kept for the
// JSON object.
struct Error {
  bool set = false;
  std::string code, message;
  // Takes `st` (freed); true when it is an error.
  bool take(wharf_status* st, const std::string& what) {
    if (!st) return false;
    set = true;
    code = wharf_code_name(wharf_status_code(st));
    message = what.empty() ? wharf_status_message(st) : what + ": " + wharf_status_message(st);
    wharf_status_free(st);
    return true;
  }
  bool fail(const std::string& c, const std::string& m) {
    set = true;
    code = c;
    message = m;
    return true;
  }
};

wharf_tensor_view host_i64(const int64_t* data, int32_t ndim, const int64_t* shape) {
  wharf_tensor_view v;
  std::memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  v.data = const_cast<int64_t*>(data);
  v.dtype = WHARF_DTYPE_I64;
  v.device_type = WHARF_DEVICE_CPU;
  v.ndim = ndim;
  v.shape = shape;
  return v;
}

// One method of the package, with where its token ids and positions go among its inputs.
struct Method {
  std::unique_ptr<wharf_model, ModelDeleter> model;
  size_t index = 0;  // in the package
  int ids = -1, positions = -1;
  size_t num_outputs = 0;
};

bool find_method(wharf_model_package* pkg, const char* name, Method* out, Error* err) {
  const int64_t i = wharf_model_package_find_method(pkg, name);
  if (i < 0)
    return !err->fail("NOT_FOUND", "the package has no method " + wharf::quote_name(name) +
                                       " (greedy decoding needs 'prefill' and 'decode')");
  out->index = size_t(i);
  wharf_model* m = nullptr;
  if (err->take(wharf_model_package_get_method(pkg, name, &m), "")) return false;
  out->model.reset(m);
  const size_t n = wharf_model_package_num_method_inputs(pkg, out->index);
  for (size_t k = 0; k < n; ++k) {
    wharf_model_package_tensor_info ti;
    std::memset(&ti, 0, sizeof ti);
    ti.struct_size = sizeof ti;
    if (err->take(wharf_model_package_get_method_input(pkg, out->index, k, &ti), "")) return false;
    const std::string in = ti.name;
    if (in == "input_ids")
      out->ids = int(k);
    else if (in == "cache_position")
      out->positions = int(k);
    else
      return !err->fail("INVALID_ARGUMENT", "method " + wharf::quote_name(name) + ": input " + wharf::quote_name(in) +
                                                " is not one greedy decoding knows (input_ids, cache_position)");
  }
  if (out->ids < 0 || out->positions < 0)
    return !err->fail("INVALID_ARGUMENT",
                      "method " + wharf::quote_name(name) + " does not take both input_ids and cache_position");
  out->num_outputs = wharf_model_num_outputs(out->model.get());
  if (out->num_outputs == 0)
    return !err->fail("INVALID_ARGUMENT", "method " + wharf::quote_name(name) + " has no output");
  return true;
}

// Runs `m` over `ids` at `positions` in `session`; the argmax of the last position's logits
// (output 0, float32, last dimension the vocabulary) in *token, the run's generation in *gen.
bool step(const Method& m, wharf_session* session, const std::vector<int64_t>& ids,
          const std::vector<int64_t>& positions, int64_t* token, uint64_t* gen, Error* err) {
  wharf_container* c = wharf_model_container(m.model.get());
  wharf_run* run = nullptr;
  if (err->take(wharf_run_begin(c, session, nullptr, &run), "beginning a run")) return false;
  *gen = wharf_run_generation(run);
  const int64_t ids_shape[2] = {1, int64_t(ids.size())}, pos_shape[1] = {int64_t(positions.size())};
  wharf_tensor_view in[2];
  in[m.ids] = host_i64(ids.data(), 2, ids_shape);
  in[m.positions] = host_i64(positions.data(), 1, pos_shape);
  std::vector<wharf_tensor_view> out(m.num_outputs);
  for (wharf_tensor_view& v : out) {
    std::memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
  }
  bool ok = !err->take(wharf_model_run(m.model.get(), run, in, 2, out.data(), out.size()), "running the model");
  std::vector<float> logits;
  if (ok) {
    const wharf_tensor_view& l = out[0];
    if (l.dtype != WHARF_DTYPE_F32 || l.ndim < 1 || l.shape[l.ndim - 1] <= 0) {
      ok = !err->fail("INVALID_ARGUMENT", "the model's first output is not float32 logits [..., vocab]");
    } else {
      const uint64_t vocab = uint64_t(l.shape[l.ndim - 1]);
      uint64_t numel = 1;
      for (int d = 0; d < l.ndim; ++d) numel *= uint64_t(l.shape[d]);
      logits.resize(vocab);
      // The last position's row (outputs are contiguous).
      const char* last = static_cast<const char*>(l.data) + (numel - vocab) * sizeof(float);
      ok = !err->take(wharf_run_copy(run, logits.data(), last, vocab * sizeof(float)), "reading the logits");
    }
  }
  if (err->take(wharf_run_end(run), "ending the run")) ok = false;
  if (!ok) return false;
  *token = int64_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  return true;
}

}  // namespace

int cmd_generate(const GenerateOptions& o) {
  Error err;
  std::vector<int64_t> tokens;
  std::vector<uint64_t> generations;
  std::vector<double> decode_us;
  double prefill_us = 0, update_ms = -1;
  std::string backend, device, name;
  std::unique_ptr<wharf_runtime, RuntimeDeleter> rt;
  std::unique_ptr<wharf_model_package, PackageDeleter> pkg;
  std::unique_ptr<wharf_session, SessionDeleter> session;
  Method prefill, decode;
  [&] {
    wharf_runtime_options ro;
    wharf_runtime_options_init(&ro);
    ro.backend = o.backend == "cuda"   ? WHARF_BACKEND_CUDA
                 : o.backend == "host" ? WHARF_BACKEND_HOST
                                       : WHARF_BACKEND_AUTO;
    wharf_runtime* r = nullptr;
    if (err.take(wharf_runtime_create(&ro, &r), "creating the runtime")) return;
    rt.reset(r);
    wharf_device_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (err.take(wharf_runtime_get_device_info(rt.get(), &info), "reading device info")) return;
    backend = backend_str(info.backend);
    device = info.name;
    wharf_model_package* p = nullptr;
    if (err.take(wharf_model_package_load(rt.get(), o.package.c_str(), nullptr, &p), "")) return;
    pkg.reset(p);
    name = wharf_model_package_name(pkg.get());
    const uint64_t max_seq = wharf_model_package_max_seq_len(pkg.get());
    if (max_seq && o.prompt.size() + uint64_t(o.max_new_tokens) - 1 > max_seq) {
      err.fail("INVALID_ARGUMENT", "a prompt of " + std::to_string(o.prompt.size()) + " tokens and " +
                                       std::to_string(o.max_new_tokens) + " new ones pass the package's max_seq_len " +
                                       std::to_string(max_seq));
      return;
    }
    if (!find_method(pkg.get(), "prefill", &prefill, &err) || !find_method(pkg.get(), "decode", &decode, &err)) return;
    if (o.graphs && err.take(wharf_model_enable_graphs(decode.model.get(), nullptr), "enabling CUDA graphs")) return;
    wharf_session* s = nullptr;
    if (err.take(wharf_model_package_create_session(pkg.get(), nullptr, &s), "creating a session")) return;
    session.reset(s);
    const int64_t plen = int64_t(o.prompt.size());
    for (int t = 0; t < o.max_new_tokens; ++t) {
      if (!o.update.empty() && t == o.update_after) {
        const Clock::time_point t0 = Clock::now();
        wharf_weight_store* store = wharf_model_package_store(pkg.get());
        if (err.take(wharf_weight_store_update_from_file(store, o.update.c_str(), nullptr), "")) return;
        if (err.take(wharf_weight_store_swap(store), "swapping the update in")) return;
        update_ms = us_since(t0) / 1000.0;
      }
      int64_t token = 0;
      uint64_t gen = 0;
      const Clock::time_point t0 = Clock::now();
      if (t == 0) {
        std::vector<int64_t> pos(o.prompt.size());
        for (size_t i = 0; i < pos.size(); ++i) pos[i] = int64_t(i);
        if (!step(prefill, session.get(), o.prompt, pos, &token, &gen, &err)) return;
        prefill_us = us_since(t0);
      } else {
        if (!step(decode, session.get(), {tokens.back()}, {plen + t - 1}, &token, &gen, &err)) return;
        decode_us.push_back(us_since(t0));
      }
      tokens.push_back(token);
      generations.push_back(gen);
    }
  }();

  double median = 0;
  if (!decode_us.empty()) {
    std::vector<double> sorted = decode_us;
    std::sort(sorted.begin(), sorted.end());
    median = sorted[sorted.size() / 2];
  }
  if (o.json) {
    wharf::io::json::Writer w;
    w.begin_object().key("package").string(o.package).key("name").string(name);
    w.key("backend").string(backend).key("device").string(device);
    w.key("prompt").begin_array();
    for (int64_t t : o.prompt) w.sint(t);
    w.end_array().key("tokens").begin_array();
    for (int64_t t : tokens) w.sint(t);
    w.end_array().key("generation").begin_array();
    for (uint64_t g : generations) w.uint(g);
    w.end_array().key("prefill_us").number(prefill_us).key("decode_us_median").number(median);
    w.key("update");
    if (o.update.empty()) {
      w.null();
    } else {
      w.begin_object().key("file").string(o.update).key("after").sint(o.update_after).key("ms");
      if (update_ms < 0)
        w.null();
      else
        w.number(update_ms);
      w.end_object();
    }
    if (o.graphs && decode.model) {
      wharf_graph_stats gs;
      std::memset(&gs, 0, sizeof gs);
      gs.struct_size = sizeof gs;
      read_graph_stats(decode.model.get(), &gs);
      w.key("graphs").begin_object().key("replays").uint(gs.replays).key("eager_runs").uint(gs.eager_runs);
      w.key("last_eager_reason").string(gs.last_eager_reason).end_object();
    }
    w.key("error");
    if (err.set)
      w.begin_object().key("code").string(err.code).key("message").string(err.message).end_object();
    else
      w.null();
    w.end_object();
    std::printf("%s\n", w.text().c_str());
    return err.set ? 1 : 0;
  }
  if (!tokens.empty()) {
    std::string line;
    for (int64_t t : tokens) line += (line.empty() ? "" : ",") + std::to_string(t);
    std::printf("%s\n", line.c_str());
  }
  if (err.set) {
    std::fprintf(stderr, "wharf: generate: %s: %s\n", err.code.c_str(), err.message.c_str());
    return 1;
  }
  std::fprintf(stderr, "%zu tokens; prefill %.0f us, decode median %.0f us/token%s\n", tokens.size(), prefill_us,
               median, update_ms >= 0 ? (", update + swap " + std::to_string(update_ms) + " ms").c_str() : "");
  return 0;
}

}  // namespace wharf_cli
