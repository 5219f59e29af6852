// SPDX-License-Identifier: Apache-2.0
#include "offload/offloader.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "core/logging.h"
#include "core/text.h"

namespace wharf {
namespace {

constexpr int64_t kMaxLayers = int64_t(1) << 20;  // per-layer tables are dense
constexpr uint64_t kSlotAlign = 256;              // as cudaMalloc: every constant in a slot starts aligned

uint64_t align_up(uint64_t v) { return (v + kSlotAlign - 1) / kSlotAlign * kSlotAlign; }

// The layer number `fqn` carries per pattern prefix{layer}suffix (first match), or -1.
int64_t layer_of(const std::string& fqn, const std::string& prefix, const std::string& suffix) {
  for (size_t at = fqn.find(prefix); at != std::string::npos; at = fqn.find(prefix, at + 1)) {
    size_t p = at + prefix.size();
    size_t q = p;
    while (q < fqn.size() && fqn[q] >= '0' && fqn[q] <= '9' && q - p < 9) ++q;
    if (q == p || (q < fqn.size() && fqn[q] >= '0' && fqn[q] <= '9')) continue;
    if (fqn.compare(q, suffix.size(), suffix) != 0) continue;
    return std::stoll(fqn.substr(p, q - p));
  }
  return -1;
}

const std::vector<OffloadedConstant> kNone;

}  // namespace

Status Offloader::select(const std::vector<ConstantDecl>& decls, const OffloaderConfig& config,
                         const std::string& where, std::vector<int>* chosen_out, std::vector<int64_t>* layers) {
  const std::string marker = "{layer}";
  size_t m = config.layer_pattern.find(marker);
  if (m == std::string::npos || config.layer_pattern.find(marker, m + 1) != std::string::npos)
    return InvalidArgument(where + ": layer_pattern " + quote_name(config.layer_pattern) +
                           " must contain '{layer}' exactly once (e.g. 'layers.{layer}.')");
  const std::string prefix = config.layer_pattern.substr(0, m);
  const std::string suffix = config.layer_pattern.substr(m + marker.size());
  if (config.group_size > 0 && (config.num_in_group == 0 || config.num_in_group > config.group_size))
    return InvalidArgument(where + ": num_in_group " + std::to_string(config.num_in_group) + " must be in 1.." +
                           std::to_string(config.group_size) + " (group_size)");
  const uint32_t k = config.prefetch_step;
  uint32_t cap = config.slot_capacity == 0 ? std::max<uint32_t>(k, 1) : config.slot_capacity;
  if (k > cap)
    return InvalidArgument(where + ": prefetch_step " + std::to_string(k) + " needs slot_capacity >= " +
                           std::to_string(k) + " (got " + std::to_string(cap) + "): the copy of layer i+" +
                           std::to_string(k) + " would overwrite a slot that a layer before it still reads");

  std::vector<int64_t> layer(decls.size(), -1);
  int64_t max_layer = -1;
  for (size_t i = 0; i < decls.size(); ++i) {
    layer[i] = layer_of(decls[i].fqn, prefix, suffix);
    max_layer = std::max(max_layer, layer[i]);
  }
  if (max_layer < 0)
    return InvalidArgument(where + ": no constant's name matches layer_pattern " + quote_name(config.layer_pattern));
  if (max_layer >= kMaxLayers)
    return InvalidArgument(where + ": layer number " + std::to_string(max_layer) + " (per layer_pattern " +
                           quote_name(config.layer_pattern) + ") is above the limit of " +
                           std::to_string(kMaxLayers - 1));

  std::vector<int> chosen;
  if (!config.fqns.empty()) {
    std::unordered_map<std::string, int> index;
    for (size_t i = 0; i < decls.size(); ++i) index.emplace(decls[i].fqn, int(i));
    std::vector<bool> seen(decls.size(), false);
    for (const std::string& f : config.fqns) {
      auto it = index.find(f);
      if (it == index.end())
        return NotFound(where + ": constant " + quote_name(f) + " is not declared by the container");
      const int idx = it->second;
      if (layer[size_t(idx)] < 0)
        return InvalidArgument(where + ": constant " + quote_name(f) + " carries no layer number per layer_pattern " +
                               quote_name(config.layer_pattern));
      if (seen[size_t(idx)]) return AlreadyExists(where + ": constant " + quote_name(f) + " is listed twice");
      seen[size_t(idx)] = true;
      chosen.push_back(idx);
    }
  } else {
    for (size_t i = 0; i < decls.size(); ++i) {
      if (layer[i] < 0) continue;
      uint64_t L = uint64_t(layer[i]);
      if (config.group_size > 0 && L % config.group_size < config.group_size - config.num_in_group) continue;
      chosen.push_back(int(i));
    }
    if (chosen.empty())
      return InvalidArgument(where + ": the group selection (group_size " + std::to_string(config.group_size) +
                             ", num_in_group " + std::to_string(config.num_in_group) + ") selects no layer");
  }
  std::sort(chosen.begin(), chosen.end());  // declaration order within a layer
  *chosen_out = std::move(chosen);
  if (layers) *layers = std::move(layer);
  return Status::Ok();
}

Status Offloader::create(std::shared_ptr<Container> container, const OffloaderConfig& config,
                         std::shared_ptr<Offloader>* out) {
  if (!container) return InvalidArgument("offloader: container is null");
  const std::string where = "offloader over container " + quote_name(container->name());
  const auto& decls = container->decls();
  std::vector<int> chosen;
  std::vector<int64_t> layer;
  WHARF_RETURN_IF_ERROR(select(decls, config, where, &chosen, &layer));
  for (int idx : chosen) {
    const ConstantDecl& d = decls[size_t(idx)];
    if (d.placement != Placement::kHost)
      return FailedPrecondition(where + ": constant " + quote_name(d.fqn) +
                                " is placed on the device; an offloaded constant must be declared with "
                                "WHARF_PLACEMENT_HOST (its generations then live in pinned host memory)");
  }
  const int64_t max_layer = *std::max_element(layer.begin(), layer.end());
  const uint32_t k = config.prefetch_step;
  const uint32_t cap = config.slot_capacity == 0 ? std::max<uint32_t>(k, 1) : config.slot_capacity;

  std::shared_ptr<Offloader> o(new Offloader());
  o->container_ = container;
  o->pattern_ = config.layer_pattern;
  o->num_layers_ = uint32_t(max_layer + 1);
  o->pos_.assign(o->num_layers_, -1);
  o->layers_.resize(o->num_layers_);
  std::map<uint32_t, uint64_t> bytes;
  for (int idx : chosen) {
    uint32_t L = uint32_t(layer[size_t(idx)]);
    OffloadedConstant c;
    c.index = idx;
    c.offset = bytes[L];
    o->layers_[L].push_back(c);
    bytes[L] = align_up(c.offset + decls[size_t(idx)].nbytes);
  }
  for (const auto& [L, b] : bytes) {
    o->pos_[L] = int(o->offloaded_.size());
    o->offloaded_.push_back(L);
    o->slot_bytes_ = std::max(o->slot_bytes_, b);
  }
  const uint32_t n = uint32_t(o->offloaded_.size());
  o->k_ = std::min(k, n);
  o->capacity_ = std::min(cap, n);
  if (o->slot_bytes_ == 0) o->slot_bytes_ = kSlotAlign;  // zero-byte constants still get distinct addresses

  Device& dev = container->runtime().device();
  WHARF_RETURN_IF_ERROR(dev.allocate(MemKind::kDevice, MemTag::kOffload, o->slot_bytes_ * o->capacity_,
                                     where + ": slot pool (" + std::to_string(o->capacity_) + " slots of " +
                                         std::to_string(o->slot_bytes_) + " bytes)",
                                     &o->pool_));
  WHARF_RETURN_IF_ERROR(dev.create_stream(&o->copy_stream_));
  o->copy_done_.resize(n);
  o->released_.resize(n);
  for (uint32_t j = 0; j < n; ++j) {
    WHARF_RETURN_IF_ERROR(dev.create_event(&o->copy_done_[j]));
    WHARF_RETURN_IF_ERROR(dev.create_event(&o->released_[j]));
  }
  WHARF_RETURN_IF_ERROR(dev.create_event(&o->fork_));
  WHARF_RETURN_IF_ERROR(dev.create_event(&o->join_));
  WHARF_RETURN_IF_ERROR(dev.create_event(&o->prev_end_));
  WHARF_RETURN_IF_ERROR(o->check_budget(config, where));
  *out = std::move(o);
  return Status::Ok();
}

namespace {

std::string fixed1(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::string bytes_text(uint64_t b) {
  if (b >= (uint64_t(1) << 30)) return fixed1(double(b) / double(uint64_t(1) << 30)) + " GiB";
  if (b >= (uint64_t(1) << 20)) return fixed1(double(b) / double(uint64_t(1) << 20)) + " MiB";
  if (b >= (uint64_t(1) << 10)) return fixed1(double(b) / double(uint64_t(1) << 10)) + " KiB";
  return std::to_string(b) + " bytes";
}

std::string rate_text(uint64_t bytes_per_second) {
  const double v = double(bytes_per_second);
  return v >= 1e9 ? fixed1(v / 1e9) + " GB/s" : fixed1(v / 1e6) + " MB/s";
}

std::string us_text(double us) { return us >= 1000 ? fixed1(us / 1000) + " ms" : fixed1(us) + " us"; }

}  // namespace

OffloadBudget OffloadBudget::estimate(uint32_t layers, uint64_t bytes, uint64_t h2d_bytes_per_second, H2DSource source,
                                      uint64_t step_compute_us) {
  OffloadBudget b;
  b.offloaded_layers = layers;
  b.bytes_per_step = bytes;
  b.h2d_bytes_per_second = h2d_bytes_per_second;
  b.h2d_source = source;
  b.copy_us = h2d_bytes_per_second ? double(bytes) * 1e6 / double(h2d_bytes_per_second) : 0;
  b.compute_us = double(step_compute_us);
  b.exposed_us = b.checked() && b.copy_us > b.compute_us ? b.copy_us - b.compute_us : 0;
  return b;
}

std::string OffloadBudget::describe() const {
  static const char* const kSource[] = {"given", "measured", "assumed for the host backend"};
  std::string m = "offloading " + std::to_string(offloaded_layers) + (offloaded_layers == 1 ? " layer" : " layers") +
                  " moves " + bytes_text(bytes_per_step) + " per step: " + us_text(copy_us) + " at " +
                  rate_text(h2d_bytes_per_second) + " H2D (" + kSource[int(h2d_source)] + ")";
  if (!checked()) return m + "; no step compute time given (step_compute_us 0), so no budget check";
  const std::string ratio = fixed1(copy_us / compute_us) + "x the " + us_text(compute_us) + " step compute time given";
  if (!exposed()) return m + ", " + ratio + ": prefetch can hide the copies";
  return m + ", " + ratio + "; prefetch cannot hide " + us_text(exposed_us);
}

uint64_t Offloader::slot_offset(uint32_t layer) const {
  if (!is_offloaded_layer(layer)) return 0;
  return uint64_t(uint32_t(pos_[layer]) % capacity_) * slot_bytes_;
}

char* Offloader::slot_base(uint32_t layer) const {
  if (!is_offloaded_layer(layer)) return nullptr;
  return static_cast<char*>(pool_.data()) + slot_offset(layer);
}

size_t Offloader::captured_storage() const {
  MutexLock lock(mu_);
  return captured_slots_.size();
}

Status Offloader::measure_h2d(uint64_t* bytes_per_second) {
  // A copy long enough that launch latency (~10 us) is noise, short enough for creation:
  // up to 32 MiB (about 1 ms at PCIe 5.0 speed) of the pool, best of three after a warm-up.
  const uint64_t bytes = std::min<uint64_t>(pool_.size(), uint64_t(32) << 20);
  Device& dev = container_->runtime().device();
  Buffer src;
  WHARF_RETURN_IF_ERROR(dev.allocate(MemKind::kPinnedHost, MemTag::kStaging, bytes,
                                     "offloader: pinned buffer measuring the H2D bandwidth", &src));
  double best = 0;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    WHARF_RETURN_IF_ERROR(copy_stream_->copy_async(pool_.data(), src.data(), bytes));
    WHARF_RETURN_IF_ERROR(copy_stream_->synchronize());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i > 0 && s > 0) best = std::max(best, double(bytes) / s);
  }
  *bytes_per_second = best > 0 ? uint64_t(best) : kHostAssumedH2D;
  return Status::Ok();
}

Status Offloader::check_budget(const OffloaderConfig& config, const std::string& where) {
  uint64_t bytes = 0;
  for (const auto& layer : layers_)
    for (const OffloadedConstant& c : layer) bytes += container_->decls()[size_t(c.index)].nbytes;
  uint64_t bw = config.h2d_bytes_per_second;
  H2DSource source = H2DSource::kGiven;
  if (bw == 0 && container_->runtime().device().backend() == Backend::kHost) {
    bw = kHostAssumedH2D;
    source = H2DSource::kAssumed;
  } else if (bw == 0) {
    WHARF_RETURN_IF_ERROR(measure_h2d(&bw).with_context(where + ": measuring the H2D bandwidth"));
    source = H2DSource::kMeasured;
  }
  budget_ = OffloadBudget::estimate(num_offloaded_layers(), bytes, bw, source, config.step_compute_us);
  const std::string m = where + ": " + budget_.describe();
  if (budget_.exposed() && config.refuse_if_exposed)
    return ResourceExhausted(m + " (refused: refuse_if_exposed is set)");
  if (budget_.exposed()) {
    WHARF_LOG(kWarn, m);
  } else {
    WHARF_LOG(kInfo, m);
  }
  return Status::Ok();
}

Offloader::~Offloader() {
  // Copies in flight read host storage of generations kept here and write the pool; the last
  // run's kernels may still read the pool (its end is recorded in prev_end_).
  if (copy_stream_) {
    Status st = copy_stream_->synchronize();
    if (!st.ok()) WHARF_LOG(kError, "offloader: draining the copy stream: " + st.message());
  }
  bool wait_last = false;
  {
    MutexLock lock(mu_);
    wait_last = prev_end_valid_;
  }
  if (wait_last) {
    Status st = prev_end_->synchronize();
    if (!st.ok()) WHARF_LOG(kError, "offloader: waiting for the last run: " + st.message());
  }
}

const std::vector<OffloadedConstant>& Offloader::layer_constants(uint32_t layer) const {
  return layer < num_layers_ ? layers_[layer] : kNone;
}

bool Offloader::held() const {
  MutexLock lock(mu_);
  return holder_ != nullptr;
}

uint32_t Offloader::issued_count(const Run& run) const {
  MutexLock lock(mu_);
  return holder_ == &run ? issued_ : 0;
}

std::string Offloader::layer_name(uint32_t layer) const {
  return "layer " + std::to_string(layer) + " of offloader over container " + quote_name(container_->name());
}

Status Offloader::check_holder_locked(const Run& run, const char* what) const {
  if (holder_ == &run) return Status::Ok();
  if (!holder_)
    return FailedPrecondition(std::string(what) +
                              ": the run has not begun offloading (call "
                              "wharf_run_begin_offload first) on the offloader over container " +
                              quote_name(container_->name()));
  return FailedPrecondition(std::string(what) + ": another run holds the offloader over container " +
                            quote_name(container_->name()));
}

void Offloader::reap_locked() {
  if (capturing_) return;  // querying events is not allowed while a capture is in progress
  auto it = retired_.begin();
  while (it != retired_.end()) {
    bool done = false;
    Status st = it->event->query(&done);
    if (!st.ok() || !done) {
      ++it;
      continue;
    }
    it = retired_.erase(it);
  }
}

Status Offloader::begin(Run& run, const OffloadTarget& target) {
  if (run.container().get() != container_.get())
    return InvalidArgument("wharf_run_begin_offload: the run is of container " + quote_name(run.container()->name()) +
                           ", the offloader is over container " + quote_name(container_->name()));
  if (!run.pinned_generation()) return FailedPrecondition("wharf_run_begin_offload: the run has ended");
  Stream& s = target.stream ? *target.stream : run.stream();
  bool capturing = false;
  WHARF_RETURN_IF_ERROR(stream_is_capturing(s, &capturing));
  MutexLock lock(mu_);
  if (holder_ == &run)
    return FailedPrecondition("wharf_run_begin_offload: this run already began offloading over container " +
                              quote_name(container_->name()) + " (end it with wharf_run_end_offload first)");
  if (holder_)
    return Busy("wharf_run_begin_offload: another run holds the offloader over container " +
                quote_name(container_->name()) + " (one run at a time: its slots hold that run's layers)");
  capturing_ = capturing;
  reap_locked();
  // Fork: the copy stream follows the run's stream (under capture this joins it to the capture).
  WHARF_RETURN_IF_ERROR(s.record(*fork_));
  WHARF_RETURN_IF_ERROR(copy_stream_->wait(*fork_));
  // The previous run may still read the slots on another stream. An event recorded outside
  // this capture cannot be waited for inside it: a graph's launch stream orders it instead.
  if (prev_end_valid_ && !capturing) WHARF_RETURN_IF_ERROR(copy_stream_->wait(*prev_end_));
  holder_ = &run;
  stream_ = &s;
  ring_ = target.ring ? target.ring : static_cast<char*>(pool_.data());
  gen_ = run.pinned_generation();
  copied_ = waited_ = issued_ = 0;
  if (capturing && !target.repointed &&
      std::find(captured_gens_.begin(), captured_gens_.end(), gen_) == captured_gens_.end()) {
    // The caller's graph will copy from this generation's host storage at every launch, long
    // after the run: keep it, and hold the offloaded constants' storage as a second owner, so
    // an in-place update (which overwrites only storage nobody else references) gives them
    // fresh storage rather than changing what the graph copies.
    captured_gens_.push_back(gen_);
    for (const auto& layer : layers_)
      for (const OffloadedConstant& c : layer)
        if (const std::shared_ptr<Slot>& slot = gen_->slots[size_t(c.index)]) captured_slots_.push_back(slot);
  }
  Status st;
  for (uint32_t j = 0; j < k_ && st.ok(); ++j) st = issue_copy_locked(j);
  if (!st.ok()) {
    Status s2 = finish_locked(false);
    if (!s2.ok()) WHARF_LOG(kError, "offloader: releasing after a failed begin: " + s2.message());
    return st;
  }
  // The run's end releases the offloader if the caller did not (hook kept by the run).
  // The run keeps the offloader (its pool) alive until it ends.
  std::shared_ptr<Offloader> self = shared_from_this();
  const Run* key = &run;
  run.at_end([self, key] {
    MutexLock lock(self->mu_);
    if (self->holder_ != key) return;
    Status st = self->finish_locked(true);
    if (!st.ok()) WHARF_LOG(kError, "offloader: ending with the run: " + st.message());
  });
  return Status::Ok();
}

Status Offloader::issue_copy_locked(uint32_t j) {
  WHARF_DCHECK(j == copied_, "offloader: copies are issued in order");
  const uint32_t slot = j % capacity_;
  // The slot's previous reader in this run: offloaded index j - capacity (earlier runs are
  // covered by the fork at begin).
  if (j >= capacity_) WHARF_RETURN_IF_ERROR(copy_stream_->wait(*released_[j - capacity_]));
  char* base = ring_ + uint64_t(slot) * slot_bytes_;
  const uint32_t L = offloaded_[j];
  const auto& decls = container_->decls();
  for (const OffloadedConstant& c : layers_[L]) {
    const std::shared_ptr<Slot>& src = gen_->slots[size_t(c.index)];
    if (!src)
      return FailedPrecondition("offloaded constant " + quote_name(decls[size_t(c.index)].fqn) +
                                " has no storage in the run's generation");
    WHARF_RETURN_IF_ERROR(copy_stream_->copy_async(base + c.offset, src->data(), decls[size_t(c.index)].nbytes)
                              .with_context("prefetching " + layer_name(L)));
  }
  WHARF_RETURN_IF_ERROR(copy_stream_->record(*copy_done_[j]));
  ++copied_;
  return Status::Ok();
}

Status Offloader::wait(Run& run, uint32_t layer, char** slot) {
  *slot = nullptr;
  MutexLock lock(mu_);
  WHARF_RETURN_IF_ERROR(check_holder_locked(run, "wharf_run_wait_offload"));
  if (layer >= num_layers_)
    return InvalidArgument("wharf_run_wait_offload: layer " + std::to_string(layer) +
                           " is out of range (the offloader over container " + quote_name(container_->name()) +
                           " spans " + std::to_string(num_layers_) + " layers)");
  const int pj = pos_[layer];
  if (pj < 0) return Status::Ok();  // not offloaded: its constants are where the run's table says
  const uint32_t j = uint32_t(pj);
  if (j + 1 == waited_ && issued_ == j) {
    // Asked again before issuing: the same slot, nothing more to wait for.
  } else if (j == waited_) {
    if (issued_ != j)
      return FailedPrecondition("wharf_run_wait_offload: " + layer_name(layer) + ": the previous offloaded layer " +
                                std::to_string(offloaded_[j - 1]) +
                                " was not marked issued (wharf_run_mark_offload_issued)");
    if (copied_ == j) WHARF_RETURN_IF_ERROR(issue_copy_locked(j));  // prefetch_step 0
    WHARF_RETURN_IF_ERROR(stream_->wait(*copy_done_[j]));
    ++waited_;
  } else if (j < waited_) {
    return FailedPrecondition("wharf_run_wait_offload: " + layer_name(layer) +
                              " was already issued in this run; its slot may now hold another layer");
  } else {
    return FailedPrecondition("wharf_run_wait_offload: " + layer_name(layer) +
                              ": offloaded layers are waited in order; the next is layer " +
                              std::to_string(offloaded_[waited_]));
  }
  *slot = ring_ + uint64_t(j % capacity_) * slot_bytes_;
  return Status::Ok();
}

Status Offloader::issued(Run& run, uint32_t layer) {
  MutexLock lock(mu_);
  WHARF_RETURN_IF_ERROR(check_holder_locked(run, "wharf_run_mark_offload_issued"));
  if (layer >= num_layers_)
    return InvalidArgument("wharf_run_mark_offload_issued: layer " + std::to_string(layer) +
                           " is out of range (the offloader over container " + quote_name(container_->name()) +
                           " spans " + std::to_string(num_layers_) + " layers)");
  const int pj = pos_[layer];
  if (pj < 0) return Status::Ok();
  const uint32_t j = uint32_t(pj);
  if (j < issued_)
    return FailedPrecondition("wharf_run_mark_offload_issued: " + layer_name(layer) +
                              " was already marked issued in this run");
  if (j != issued_ || waited_ != j + 1)
    return FailedPrecondition("wharf_run_mark_offload_issued: " + layer_name(layer) +
                              " was not waited for (wharf_run_wait_offload) before being marked issued");
  WHARF_RETURN_IF_ERROR(stream_->record(*released_[j]));
  ++issued_;
  const uint32_t next = j + k_;
  if (k_ > 0 && next < offloaded_.size()) WHARF_RETURN_IF_ERROR(issue_copy_locked(next));
  return Status::Ok();
}

Status Offloader::end(Run& run) {
  MutexLock lock(mu_);
  WHARF_RETURN_IF_ERROR(check_holder_locked(run, "wharf_run_end_offload"));
  return finish_locked(false);
}

Status Offloader::finish_locked(bool from_run_end) {
  Status st;
  // Join: the run's stream waits for every copy issued (under capture: the copy stream's
  // work joins back into the capture, which cudaStreamEndCapture requires).
  st = copy_stream_->record(*join_);
  if (st.ok()) st = stream_->wait(*join_);
  // The next run orders its copies after this run's end. A captured run's end is no point in
  // time (its graph runs whenever it is launched, ordered by its caller): the run before the
  // capture stays the one the next run waits for, which may still read the slots.
  if (!capturing_) {
    if (st.ok()) st = stream_->record(*prev_end_);
    prev_end_valid_ = st.ok();
  }
  if (from_run_end && copied_ > waited_ && !capturing_) {
    // The run's completion was recorded before this join: keep the generation whose host
    // storage the unwaited copies read until they are done.
    Retired r;
    Status s2 = container_->runtime().device().create_event(&r.event);
    if (s2.ok()) s2 = copy_stream_->record(*r.event);
    if (s2.ok()) {
      r.gen = gen_;
      retired_.push_back(std::move(r));
    } else {
      WHARF_LOG(kError, "offloader: tracking copies after the run's end: " + s2.message());
      captured_gens_.push_back(gen_);  // keep it for the offloader's life rather than risk a read of freed memory
    }
  }
  holder_ = nullptr;
  stream_ = nullptr;
  ring_ = nullptr;
  gen_.reset();
  capturing_ = false;
  return st;
}

}  // namespace wharf
