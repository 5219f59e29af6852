// SPDX-License-Identifier: Apache-2.0
// `wharf load`: a checkpoint (a safetensors file or a sharded checkpoint's index) loaded into a
// container on the device, then hot updates from further files, each published by a swap;
// with a progress line on a terminal for both.
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <utility>

#include "cli.h"
#include "io/json.h"

namespace wharf_cli {
namespace {

using Clock = std::chrono::steady_clock;

// One line on stderr, rewritten in place, only when stderr is a terminal: piped or redirected
// output gets nothing extra. It is erased when the work is done, so the summary line that
// follows on stdout starts clean.
class Progress {
 public:
  Progress(std::string label, uint64_t total)
      : label_(std::move(label)), total_(total), tty_(isatty(STDERR_FILENO) == 1) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() { finish(); }

  // `done` bytes of the total are written (from the update's progress callback).
  void set(uint64_t done) {
    done_ = done;
    if (!tty_) return;
    const Clock::time_point now = Clock::now();
    // At most ten redraws a second, but always the first and the last.
    if (shown_ && done_ < total_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    shown_ = true;
    const unsigned pct = total_ ? unsigned(done_ * 100 / total_) : 100u;
    std::fprintf(stderr, "\r\033[K%s: %3u%% (%s of %s)", label_.c_str(), pct, human_bytes(done_).c_str(),
                 human_bytes(total_).c_str());
    std::fflush(stderr);
  }

  void finish() {
    if (!shown_) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    shown_ = false;
  }

 private:
  std::string label_;
  uint64_t total_;
  uint64_t done_ = 0;
  bool tty_;
  bool shown_ = false;
  Clock::time_point last_{};
};

struct MapDeleter {
  void operator()(wharf_constant_map* m) const { wharf_constant_map_free(m); }
};
using MapPtr = std::unique_ptr<wharf_constant_map, MapDeleter>;
struct ContainerDeleter {
  void operator()(wharf_container* c) const { wharf_container_free(c); }
};
using ContainerPtr = std::unique_ptr<wharf_container, ContainerDeleter>;
struct RuntimeDeleter {
  void operator()(wharf_runtime* r) const { wharf_runtime_free(r); }
};
using RuntimePtr = std::unique_ptr<wharf_runtime, RuntimeDeleter>;

struct Entry {
  const char* name;  // owned by the map
  wharf_tensor_view view;
  uint64_t bytes;
};

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// What `wharf load` reports: a summary line per file on stdout, errors on stderr; with --json,
// one object at the end instead: {"backend", "device", "steps": [...], "error": null or
// {"file"?, "code", "message"}}.
class Report {
 public:
  explicit Report(bool json) : json_(json) { steps_.begin_array(); }

  void step(const char* verb, const std::string& file, size_t tensors, uint64_t bytes, double ms, uint64_t generation) {
    const double gbps = ms > 0 ? double(bytes) / ms / 1e6 : 0.0;
    if (json_) {
      steps_.begin_object().key("action").string(verb).key("file").string(file).key("tensors").uint(tensors);
      steps_.key("bytes").uint(bytes).key("ms").number(ms).key("gb_per_s").number(gbps);
      steps_.key("generation").uint(generation).end_object();
      return;
    }
    std::printf("%s %s: %zu %s, %s in %.1f ms (%.2f GB/s), generation %llu\n", verb, shown(file).c_str(), tensors,
                tensors == 1 ? "tensor" : "tensors", human_bytes(bytes).c_str(), ms, gbps,
                static_cast<unsigned long long>(generation));
  }

  // Reports the error of `st` (freed) about `file` ("" when no file is at fault); returns true
  // when there was one.
  bool failed(wharf_status* st, const std::string& file, const char* what) {
    if (!st) return false;
    failed_ = true;
    if (!json_) return file.empty() ? wharf_cli::failed(st, what) : failed_on(st, file);
    error_.begin_object();
    if (!file.empty()) error_.key("file").string(file);
    error_.key("code").string(wharf_code_name(wharf_status_code(st))).key("message").string(wharf_status_message(st));
    error_.end_object();
    wharf_status_free(st);
    return true;
  }

  void set_device(const wharf_device_info& info) {
    backend_ = backend_str(info.backend);
    device_ = info.name;
  }

  // Prints the JSON object (nothing without --json); returns the exit status.
  int finish() {
    const int rc = failed_ ? 1 : 0;
    if (!json_) return rc;
    steps_.end_array();
    wharf::io::json::Writer w;
    w.begin_object().key("backend");
    if (backend_.empty())
      w.null();
    else
      w.string(backend_);
    w.key("device");
    if (device_.empty())
      w.null();
    else
      w.string(device_);
    w.key("steps").value(steps_).key("error");
    if (failed_)
      w.value(error_);
    else
      w.null();
    w.end_object();
    std::printf("%s\n", w.text().c_str());
    return rc;
  }

 private:
  bool json_;
  bool failed_ = false;
  std::string backend_, device_;
  wharf::io::json::Writer steps_, error_;
};

// The entries of a loaded map (views into its memory mapping), or false after an error.
bool entries_of(const wharf_constant_map* map, const std::string& file, std::vector<Entry>* out, uint64_t* total,
                Report* report) {
  *total = 0;
  for (size_t i = 0, n = wharf_constant_map_num_entries(map); i < n; ++i) {
    Entry e;
    std::memset(&e.view, 0, sizeof e.view);
    e.view.struct_size = sizeof e.view;
    if (report->failed(wharf_constant_map_get_entry(map, i, &e.name, &e.view), file, nullptr)) return false;
    e.bytes = tensor_bytes(e.view);
    *total += e.bytes;
    out->push_back(e);
  }
  return true;
}

// Writes `file`'s tensors into the inactive generation of `c` in one update, the progress
// line drawn from the update's progress callback, then swaps. Reports a step on success, the
// error otherwise (then false).
bool write_file(wharf_container* c, const std::string& file, const char* verb, Report* report) {
  wharf_constant_map* raw = nullptr;
  if (report->failed(wharf_constant_map_load_safetensors(file.c_str(), &raw), file, nullptr)) return false;
  MapPtr map(raw);
  std::vector<Entry> entries;
  uint64_t total = 0;
  if (!entries_of(map.get(), file, &entries, &total, report)) return false;
  const Clock::time_point t0 = Clock::now();
  {
    Progress progress(std::string(verb) + " " + shown(file), total);
    progress.set(0);
    wharf_update_options uo;
    wharf_update_options_init(&uo);
    uo.progress = [](uint64_t done, uint64_t, void* user) -> int32_t {
      static_cast<Progress*>(user)->set(done);
      return 0;
    };
    uo.progress_user = &progress;
    if (wharf_status* st = wharf_container_update(c, map.get(), &uo)) {
      progress.finish();
      return !report->failed(st, file, nullptr);
    }
  }
  if (report->failed(wharf_container_swap(c), file, nullptr)) return false;
  report->step(verb, file, entries.size(), total, ms_since(t0), wharf_container_generation(c));
  return true;
}

}  // namespace

int cmd_load(const LoadOptions& o) {
  Report report(o.json);
  wharf_runtime_options ro;
  wharf_runtime_options_init(&ro);
  ro.backend = o.backend == "cuda" ? WHARF_BACKEND_CUDA : o.backend == "host" ? WHARF_BACKEND_HOST : WHARF_BACKEND_AUTO;
  wharf_runtime* rt_raw = nullptr;
  if (report.failed(wharf_runtime_create(&ro, &rt_raw), "", "creating the runtime")) return report.finish();
  RuntimePtr rt(rt_raw);
  wharf_device_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  if (report.failed(wharf_runtime_get_device_info(rt.get(), &info), "", "reading device info")) return report.finish();
  report.set_device(info);

  // Declare the container from the checkpoint's tensors (no data yet), then fill it.
  wharf_constant_map* raw = nullptr;
  if (report.failed(wharf_constant_map_load_safetensors(o.file.c_str(), &raw), o.file, nullptr)) return report.finish();
  MapPtr map(raw);
  std::vector<Entry> entries;
  uint64_t total = 0;
  if (!entries_of(map.get(), o.file, &entries, &total, &report)) return report.finish();
  std::vector<wharf_constant_decl> decls(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    std::memset(&decls[i], 0, sizeof decls[i]);
    decls[i].struct_size = sizeof decls[i];
    decls[i].fqn = entries[i].name;
    decls[i].dtype = entries[i].view.dtype;
    decls[i].ndim = entries[i].view.ndim;
    decls[i].shape = entries[i].view.shape;
    decls[i].placement = WHARF_PLACEMENT_DEVICE;
  }
  wharf_container_options co;
  wharf_container_options_init(&co);
  co.name = "checkpoint";
  co.constants = decls.data();
  co.num_constants = decls.size();
  wharf_container* c_raw = nullptr;
  if (report.failed(wharf_container_create(rt.get(), &co, &c_raw), o.file, nullptr)) return report.finish();
  ContainerPtr c(c_raw);
  map.reset();  // the declarations were copied; write_file maps the file again

  if (write_file(c.get(), o.file, "loaded", &report))
    for (const std::string& update : o.updates)
      if (!write_file(c.get(), update, "updated", &report)) break;
  return report.finish();
}

}  // namespace wharf_cli
