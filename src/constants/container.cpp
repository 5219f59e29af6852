// SPDX-License-Identifier: Apache-2.0
#include "constants/container.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include <utility>

#include "core/text.h"
#include "core/checked.h"
#include "core/logging.h"
#include "core/test_hooks.h"
#include "constants/weight_store.h"
#include "sessions/state_arena.h"

namespace wharf {
namespace {

std::string quoted(const std::string& fqn) { return "constant " + quote_name(fqn) + ""; }

// Whether dropping `g` (held only by the caller) would free storage: a slot nothing else holds.
bool holds_last_storage(const Generation& g) {
  for (const std::shared_ptr<Slot>& s : g.slots)
    if (s && s.use_count() == 1) return true;
  return false;
}

std::string hex_u32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", unsigned(v));
  return buf;
}

}  // namespace

Status Container::create(std::shared_ptr<Runtime> runtime, ContainerConfig config, std::shared_ptr<Container>* out) {
  std::shared_ptr<Container> c(new Container());
  c->runtime_ = std::move(runtime);
  c->name_ = config.name.empty() ? "model" : std::move(config.name);
  c->max_session_bytes_ = config.max_session_bytes;
  WHARF_RETURN_IF_ERROR(check_fqn("container name", c->name_));
  std::vector<ConstantDecl>& decls = config.constants;
  for (size_t i = 0; i < decls.size(); ++i) {
    ConstantDecl& d = decls[i];
    if (d.fqn.empty())
      return InvalidArgument("container " + quote_name(c->name_) + ": constant declaration " + std::to_string(i) +
                             " has an empty FQN");
    WHARF_RETURN_IF_ERROR(check_fqn("container " + quote_name(c->name_) + ": constant", d.fqn));
    std::string what = quoted(d.fqn);
    if (d.placement != Placement::kDevice && d.placement != Placement::kHost)
      return InvalidArgument(what + ": unknown placement " + std::to_string(int(d.placement)));
    if (d.flags & ~kConstantDerived)
      return InvalidArgument(what + ": unknown flags " + hex_u32(d.flags) + " (known: WHARF_CONSTANT_DERIVED 0x1)");
    TensorMeta m;
    m.dtype = d.dtype;
    m.shape = d.shape;
    WHARF_RETURN_IF_ERROR(m.validate(what));
    d.nbytes = m.nbytes();
    if (!c->index_.emplace(d.fqn, int(i)).second)
      return InvalidArgument("container " + quote_name(c->name_) + ": " + what + " is declared twice");
    c->has_derived_ |= d.derived();
  }
  c->decls_ = std::move(decls);

  // States: validated completely before anything is allocated.
  for (size_t i = 0; i < config.states.size(); ++i) {
    const StateInit& si = config.states[i];
    if (si.fqn.empty())
      return InvalidArgument("container " + quote_name(c->name_) + ": state declaration " + std::to_string(i) +
                             " has an empty FQN");
    WHARF_RETURN_IF_ERROR(check_fqn("container " + quote_name(c->name_) + ": state", si.fqn));
    std::string what = "state " + quote_name(si.fqn) + "";
    if (c->index_.count(si.fqn))
      return InvalidArgument("container " + quote_name(c->name_) + ": " + what + " has the FQN of a constant");
    if (!c->state_index_.emplace(si.fqn, int(i)).second)
      return InvalidArgument("container " + quote_name(c->name_) + ": " + what + " is declared twice");
    TensorMeta m;
    m.dtype = si.dtype;
    m.shape = si.shape;
    WHARF_RETURN_IF_ERROR(m.validate(what));
    if (si.has_initial) {
      ConstantDecl as_decl;
      as_decl.fqn = si.fqn;
      as_decl.dtype = si.dtype;
      as_decl.shape = si.shape;
      as_decl.nbytes = m.nbytes();
      Status st = validate_constant_source(*c->runtime_, as_decl, si.meta, si.data);
      if (!st.ok())
        return InvalidArgument("container " + quote_name(c->name_) + ": initial value of " + what + ": " +
                               st.message());
    }
    StateDecl sd;
    sd.fqn = si.fqn;
    sd.dtype = si.dtype;
    sd.shape = si.shape;
    sd.nbytes = m.nbytes();
    c->states_.push_back(std::move(sd));
  }

  // The state arena: allocated (or joined) before the container is visible to a store.
  if (config.session_capacity > 0 && config.arena)
    return InvalidArgument("container " + quote_name(c->name_) +
                           ": both a session_capacity and another container's state arena to join");
  if (config.arena) {
    if (&config.arena->runtime() != c->runtime_.get())
      return InvalidArgument("container " + quote_name(c->name_) +
                             ": the state arena it joins belongs to another runtime");
    WHARF_RETURN_IF_ERROR(config.arena->check_subset(c->name_, c->states_));
    c->arena_ = std::move(config.arena);
  } else if (config.session_capacity > 0) {
    WHARF_RETURN_IF_ERROR(StateArena::create(c->runtime_, c->name_, config.session_capacity, c->states_, &c->arena_));
  }

  c->loading_.store(config.loading, std::memory_order_release);  // before the store can see it
  if (config.store) {
    if (&config.store->runtime() != c->runtime_.get())
      return InvalidArgument("container " + quote_name(c->name_) + ": its weight store belongs to another runtime");
    WHARF_RETURN_IF_ERROR(config.store->join(c.get(), c->name_, c->decls_));
    c->store_ = std::move(config.store);       // from here on ~Container leaves the store
    test_hook("container.create.after_join");  // a member of the store, not loaded yet
  }

  // Capture initial values into device templates: one copy now, device-to-device copies
  // at every session's first run and reset.
  std::vector<CopyRequest> reqs;
  for (size_t i = 0; i < config.states.size(); ++i) {
    const StateInit& si = config.states[i];
    StateDecl& sd = c->states_[i];
    if (!si.has_initial || sd.nbytes == 0) continue;
    WHARF_RETURN_IF_ERROR(c->runtime_->device().allocate(
        MemKind::kDevice, MemTag::kState, sd.nbytes, "initial value of state " + quote_name(sd.fqn) + "", &sd.initial));
    reqs.push_back({sd.initial.data(), si.data, sd.nbytes});
  }
  if (!reqs.empty()) {
    TransferEngine* engine = nullptr;
    WHARF_RETURN_IF_ERROR(c->runtime_->transfers(&engine));
    WHARF_RETURN_IF_ERROR(
        engine->copy(reqs, {}).with_context("container " + quote_name(c->name_) + ": capturing initial state values"));
  }
  *out = std::move(c);
  return Status::Ok();
}

int Container::find_state(const std::string& fqn) const {
  auto it = state_index_.find(fqn);
  return it == state_index_.end() ? -1 : it->second;
}

Status Container::reserve_session_bytes(uint64_t bytes) {
  uint64_t cur = session_bytes_.load();
  for (;;) {
    if (max_session_bytes_ != 0 && (bytes > max_session_bytes_ || cur > max_session_bytes_ - bytes))
      return ResourceExhausted("container " + quote_name(name_) + ": a session of " + std::to_string(bytes) +
                               " state bytes would pass max_session_bytes " + std::to_string(max_session_bytes_) +
                               " (" + std::to_string(cur) + " held by live sessions)");
    if (session_bytes_.compare_exchange_weak(cur, cur + bytes)) return Status::Ok();
  }
}

void Container::release_session_bytes(uint64_t bytes) { session_bytes_.fetch_sub(bytes); }

Container::~Container() {
  if (store_) store_->leave(this);
  // Every run has ended (runs hold the container), but the device may still be executing
  // them: wait for their events before the slots they read are freed.
  std::deque<Retired> retired;
  {
    MutexLock lock(mu_);
    retired.swap(retired_);
  }
  for (Retired& r : retired) {
    Status st = r.event ? r.event->synchronize() : runtime_->device().synchronize();
    if (!st.ok()) WHARF_LOG(kError, "container " + quote_name(name_) + ": waiting for a run at free: " + st.message());
  }
}

int Container::find(const std::string& fqn) const {
  auto it = index_.find(fqn);
  return it == index_.end() ? -1 : it->second;
}

DeviceType Container::device_type_of(Placement placement) const {
  return placement == Placement::kDevice && runtime_->backend() == Backend::kCuda ? DeviceType::kCuda
                                                                                  : DeviceType::kCpu;
}

uint64_t Container::generation() const {
  MutexLock lock(mu_);
  return active_ ? active_->id : 0;
}

bool Container::staged() const {
  MutexLock lock(mu_);
  return staged_;
}

std::shared_ptr<Slot> Container::active_slot(int index) const {
  MutexLock lock(mu_);
  return active_ ? active_->slots[size_t(index)] : nullptr;
}

Status validate_constant_source(Runtime& runtime, const ConstantDecl& d, const TensorMeta& src, const void* data) {
  std::string what = quoted(d.fqn);
  if (src.dtype != d.dtype)
    return InvalidArgument(what + ": dtype " + dtype_name(d.dtype) + " expected, got " + dtype_name(src.dtype));
  if (src.shape != d.shape)
    return InvalidArgument(what + ": shape " + shape_string(d.shape) + " expected, got " + shape_string(src.shape));
  if (!src.contiguous())
    return InvalidArgument(what + ": non-contiguous source (strides " + shape_string(src.strides) +
                           "); pass a contiguous tensor");
  if (!data && d.nbytes > 0) return InvalidArgument(what + ": source data is NULL");
  if (src.device_type == DeviceType::kCuda) {
    if (runtime.backend() != Backend::kCuda)
      return InvalidArgument(what + ": source is CUDA memory but the runtime uses the host backend");
    if (src.device_index != runtime.device().index())
      return InvalidArgument(what + ": source is on CUDA device " + std::to_string(src.device_index) +
                             " but the runtime uses device " + std::to_string(runtime.device().index()));
  }
  return Status::Ok();
}

Status Container::validate_source(const ConstantDecl& d, const TensorMeta& src, const void* data) const {
  return validate_constant_source(*runtime_, d, src, data);
}

Status Container::validate_map(const ConstantMap& map, const UpdateOptions& opts, std::vector<Planned>* plan) const {
  plan->clear();
  plan->reserve(map.size());
  for (size_t i = 0; i < map.size(); ++i) {
    const MapEntry& e = map.entry(i);
    int idx = find(e.fqn);
    if (idx < 0) return NotFound(quoted(e.fqn) + " is not declared by container " + quote_name(name_) + "");
    const ConstantDecl& d = decls_[idx];
    if (d.derived())
      return InvalidArgument(quoted(e.fqn) +
                             " is derived (computed by the fold callback); it cannot be supplied by a map");
    WHARF_RETURN_IF_ERROR(validate_source(d, e.meta, e.source()));
    plan->push_back({idx, &e});
  }
  if (opts.require_full) {
    std::vector<bool> seen(decls_.size(), false);
    for (const Planned& p : *plan) seen[p.index] = true;
    for (size_t i = 0; i < decls_.size(); ++i)
      if (!seen[i] && !decls_[i].derived())
        return InvalidArgument("require_full: the map has no " + quoted(decls_[i].fqn) + " (" +
                               std::to_string(plan->size()) + " of the container's constants given)");
  }
  if (has_derived_ && !plan->empty() && !opts.fold)
    return InvalidArgument("container " + quote_name(name_) +
                           " declares derived constants; an update needs a fold callback to recompute them");
  return Status::Ok();
}

Status allocate_constant_slot(Runtime& runtime, const ConstantDecl& d, std::shared_ptr<Slot>* out) {
  Buffer b;
  WHARF_RETURN_IF_ERROR(runtime.device().allocate(slot_kind(d), MemTag::kConstants, d.nbytes, quoted(d.fqn), &b));
  *out = std::make_shared<Slot>(std::move(b));
  return Status::Ok();
}

Status Container::allocate_slot(int index, std::shared_ptr<Slot>* out) {
  return allocate_constant_slot(*runtime_, decls_[index], out);
}

Status Container::copy_into(const std::shared_ptr<Generation>& gen, const std::vector<Planned>& plan,
                            const std::vector<Event*>& wait_for) {
  std::vector<CopyRequest> reqs;
  reqs.reserve(plan.size());
  for (const Planned& p : plan)
    reqs.push_back(copy_request(*p.entry, gen->slots[p.index]->data(), decls_[p.index].nbytes));
  TransferEngine* engine = nullptr;
  WHARF_RETURN_IF_ERROR(runtime_->transfers(&engine));
  return engine->copy(reqs, wait_for)
      .with_context("container " + quote_name(name_) + ": copying " + std::to_string(plan.size()) + " constants");
}

Status Container::allocate_and_copy(const std::shared_ptr<Generation>& gen, const std::vector<Planned>& plan,
                                    const std::vector<Event*>& wait_for, Progress* progress, uint64_t base, bool pack) {
  // Which constants share slabs: small device constants that reach the device through the
  // staging ring (pageable memory or a file); a pinned or device source is one DMA per
  // constant whatever its destination, so it keeps its own allocation. The source's kind is
  // asked once here and handed to the engine.
  std::vector<std::optional<PointerKind>> kinds(plan.size());
  auto packable = [&](size_t k) {
    const Planned& p = plan[k];
    const ConstantDecl& d = decls_[p.index];
    if (!pack || d.placement != Placement::kDevice || d.nbytes > kSlabMaxConstantBytes || d.nbytes % kSlabAlign != 0)
      return false;
    if (p.entry->file) return true;
    kinds[k] = runtime_->device().query_pointer(p.entry->data).kind;
    return *kinds[k] == PointerKind::kPageableHost;
  };
  std::vector<CopyRequest> reqs;
  std::vector<int> index;  // request -> constant
  reqs.reserve(plan.size());
  // Slab members first, back to back in plan order (requests of one slab must be consecutive
  // and in address order for the engine), then every other constant in plan order.
  std::vector<bool> packed(plan.size(), false);
  for (size_t k = 0; k < plan.size(); ++k) {
    const Planned& p = plan[k];
    const ConstantDecl& d = decls_[p.index];
    if (d.nbytes == 0) {  // nothing to copy, so the engine would not ask for it
      WHARF_RETURN_IF_ERROR(allocate_slot(p.index, &gen->slots[p.index]));
      continue;
    }
    packed[k] = packable(k);
  }
  for (int pass = 0; pass < 2; ++pass)
    for (size_t k = 0; k < plan.size(); ++k) {
      const Planned& p = plan[k];
      const ConstantDecl& d = decls_[p.index];
      if (d.nbytes == 0 || packed[k] != (pass == 0)) continue;
      CopyRequest r = copy_request(*p.entry, nullptr, d.nbytes);
      r.dst_kind = slot_kind(d);
      r.src_kind = kinds[k];
      reqs.push_back(r);
      index.push_back(p.index);
    }
  // Cut the members into slabs of at most kSlabBytes; a slab of one constant is a plain slot.
  // No fallback to one allocation per constant when a slab does not fit: the engine may
  // cover a slab's constants with one copy, which CUDA refuses across two allocations even
  // when they happen to be adjacent; and the constants add up to the slab's bytes, so they
  // would not fit either.
  struct Slab {
    size_t first = 0, count = 0;
    uint64_t bytes = 0;
    std::shared_ptr<const Buffer> buffer;
  };
  std::vector<Slab> slabs;
  std::vector<int> slab_of(reqs.size(), -1);
  std::vector<uint64_t> offset_in_slab(reqs.size(), 0);
  const size_t members = size_t(std::count(packed.begin(), packed.end(), true));
  for (size_t i = 0; i < members; ++i) {
    if (slabs.empty() || slabs.back().bytes + reqs[i].bytes > kSlabBytes) slabs.push_back(Slab{i, 0, 0, nullptr});
    Slab& s = slabs.back();
    slab_of[i] = int(slabs.size() - 1);
    offset_in_slab[i] = s.bytes;
    s.bytes += reqs[i].bytes;
    ++s.count;
  }
  for (size_t i = 0; i < members; ++i) {
    const Slab& s = slabs[size_t(slab_of[i])];
    if (s.count < 2)
      slab_of[i] = -1;
    else
      reqs[i].dst_group = uint64_t(slab_of[i]) + 1;
  }
  AllocateFn allocate = [&](size_t i, void** dst) -> Status {
    std::shared_ptr<Slot>& slot = gen->slots[size_t(index[i])];
    if (slab_of[i] >= 0) {
      Slab& s = slabs[size_t(slab_of[i])];
      if (i == s.first) {
        auto buf = std::make_shared<Buffer>();
        WHARF_RETURN_IF_ERROR(runtime_->device().allocate(
            MemKind::kDevice, MemTag::kConstants, s.bytes,
            "one slab for the " + std::to_string(s.count) + " constants " + quote_name(decls_[size_t(index[i])].fqn) +
                " to " + quote_name(decls_[size_t(index[i + s.count - 1])].fqn),
            buf.get()));
        s.buffer = std::move(buf);
      }
      slot = std::make_shared<Slot>(s.buffer, offset_in_slab[i]);
      *dst = slot->data();
      return Status::Ok();
    }
    WHARF_RETURN_IF_ERROR(allocate_slot(index[i], &slot));
    *dst = slot->data();
    return Status::Ok();
  };
  TransferEngine* engine = nullptr;
  WHARF_RETURN_IF_ERROR(runtime_->transfers(&engine));
  CopyProgressFn on_progress;
  if (progress && progress->enabled()) on_progress = [&](uint64_t done) { return progress->report(base + done); };
  Status st = engine->copy(reqs, wait_for, nullptr, allocate, on_progress);
  if (st.code() == Code::kCancelled) return st;  // its message already names the call
  return st.with_context("container " + quote_name(name_) + ": copying " + std::to_string(plan.size()) + " constants");
}

Status Container::run_fold(const UpdateOptions& opts, const std::shared_ptr<Generation>& gen) {
  if (!opts.fold || !has_derived_) return Status::Ok();
  Stream& stream = runtime_->stream();
  WHARF_RETURN_IF_ERROR(
      opts.fold(shared_from_this(), gen, stream).with_context("container " + quote_name(name_) + ": fold callback"));
  // The update returns when everything is in place, folded constants included.
  return stream.synchronize().with_context("container " + quote_name(name_) + ": waiting for the fold's work");
}

Status record_wait_stream(Runtime& runtime, void* wait_stream, const std::string& what, std::unique_ptr<Event>* out) {
  if (!wait_stream) return Status::Ok();
  if (runtime.backend() != Backend::kCuda)
    return InvalidArgument(what + ": wait_stream must be NULL on the host backend");
  std::unique_ptr<Stream> s;
  WHARF_RETURN_IF_ERROR(runtime.device().wrap_stream(wait_stream, &s));
  WHARF_RETURN_IF_ERROR(runtime.device().create_event(out));
  return s->record(**out).with_context(what + ": ordering after wait_stream");
}

Status Container::admit_writer(const char* what, std::unique_lock<std::mutex>* out) {
  std::unique_lock<std::mutex> ulock(update_mu_, std::try_to_lock);
  if (!ulock.owns_lock())
    return Busy("container " + quote_name(name_) +
                ": another update is in progress (updates, binds and weight store "
                "updates of one container run one at a time)");
  {
    MutexLock lock(mu_);
    WHARF_RETURN_IF_ERROR(check_not_replica_locked(what));
  }
  *out = std::move(ulock);
  return Status::Ok();
}

Status Container::update(const ConstantMap& map, const UpdateOptions& opts) {
  if (opts.in_place && opts.progress)
    return Unsupported("container " + quote_name(name_) +
                       ": an in-place update cannot take a progress callback: it overwrites storage that runs read "
                       "once it returns, so it cannot be cancelled midway (update the inactive generation instead)");
  std::vector<Planned> plan;
  WHARF_RETURN_IF_ERROR(validate_map(map, opts, &plan));
  std::unique_lock<std::mutex> ulock;
  WHARF_RETURN_IF_ERROR(admit_writer("an update", &ulock));
  std::unique_ptr<Event> ready;
  WHARF_RETURN_IF_ERROR(record_wait_stream(*runtime_, opts.wait_stream, "container " + quote_name(name_), &ready));
  return opts.in_place ? update_in_place(plan, opts, ready.get()) : update_inactive(plan, opts, ready.get());
}

Status Container::load(const ConstantMap& map, const ProgressFn& progress) {
  // However it ends, the container is no longer being loaded by its creator.
  struct Loaded {
    std::atomic<bool>& flag;
    ~Loaded() { flag.store(false, std::memory_order_release); }
  } loaded{loading_};
  UpdateOptions opts;
  opts.require_full = true;
  opts.progress = progress;
  std::vector<Planned> plan;
  WHARF_RETURN_IF_ERROR(validate_map(map, opts, &plan));
  std::unique_lock<std::mutex> ulock;
  WHARF_RETURN_IF_ERROR(admit_writer("a load", &ulock));
  WHARF_RETURN_IF_ERROR(update_inactive(plan, opts, nullptr));
  DeadList dead;
  MutexLock lock(mu_);
  WHARF_RETURN_IF_ERROR(check_swap_locked(false));
  swap_locked(&dead);
  return Status::Ok();
}

int Container::first_missing(const std::vector<bool>& written, bool folds) const {
  MutexLock lock(mu_);
  return first_missing_in((staged_ ? inactive_ : active_).get(), written, folds);
}

int Container::first_missing_in(const Generation* base, const std::vector<bool>& written, bool folds) const {
  for (size_t i = 0; i < decls_.size(); ++i)
    if (!(base && base->slots[i]) && !written[i] && !(decls_[i].derived() && folds)) return int(i);
  return -1;
}

std::shared_ptr<Generation> Container::next_generation_locked() const {
  auto gen = std::make_shared<Generation>();
  // The first update after a swap starts from the active generation (sharing every slot);
  // later ones add to what is staged.
  const std::shared_ptr<Generation>& base = staged_ ? inactive_ : active_;
  gen->slots = base ? base->slots : std::vector<std::shared_ptr<Slot>>(decls_.size());
  return gen;
}

Status Container::fold_into(const std::shared_ptr<Generation>& gen, const UpdateOptions& opts,
                            const std::vector<int>& written) {
  // The fold computes derived constants; a container without any has nothing to fold (a
  // store update's fold is written for the containers that do).
  if (!opts.fold || !has_derived_) return Status::Ok();
  gen->fold_writable.assign(decls_.size(), false);
  for (int i : written) gen->fold_writable[size_t(i)] = true;
  for (size_t i = 0; i < decls_.size(); ++i)
    if (decls_[i].derived()) {
      WHARF_RETURN_IF_ERROR(allocate_slot(int(i), &gen->slots[i]));
      gen->fold_writable[i] = true;
    }
  Status st = run_fold(opts, gen);
  gen->fold_writable.clear();
  return st;
}

void Container::stage_locked(std::shared_ptr<Generation> gen, DeadList* dead) {
  WHARF_DCHECK(gen && gen->slots.size() == decls_.size(), "a staged generation has one slot per constant");
  WHARF_DCHECK(gen->open_runs == 0, "a staged generation has no runs");
  dead->push_back(std::move(inactive_));
  inactive_ = std::move(gen);
  staged_ = true;
  ++version_;
}

Status Container::update_inactive(const std::vector<Planned>& plan, const UpdateOptions& opts, Event* source_ready) {
  std::shared_ptr<Generation> gen;
  uint64_t base_version = 0;
  DeadList dead;
  {
    MutexLock lock(mu_);
    reap_locked(true, &dead);
    gen = next_generation_locked();
    base_version = version_;
  }
  test_hook("container.update.after_base");
  // Fresh slots for what this update writes (copy-on-write). A constant this container has
  // never held takes the weight store's storage when the store has it: no allocation, no
  // copy. On any failure `gen` is dropped: nothing was published.
  std::vector<Planned> to_copy;
  std::vector<int> fresh;  // written for the first time: offered to the store afterwards
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  std::vector<std::shared_ptr<Slot>> served;  // by plan entry: the store's storage, or null
  if (store_) {
    std::vector<std::string> wanted;  // constants this container has never held
    std::vector<size_t> asked;        // -> plan entry
    for (size_t k = 0; k < plan.size(); ++k)
      if (!gen->slots[plan[k].index] && !decls_[plan[k].index].derived()) {
        wanted.push_back(decls_[plan[k].index].fqn);
        asked.push_back(k);
      }
    if (!wanted.empty()) {
      // One snapshot of the store for all of them: storage from one store version.
      std::vector<std::shared_ptr<Slot>> got;
      store_->served_slots(this, wanted, &got);
      served.resize(plan.size());
      for (size_t q = 0; q < asked.size(); ++q) served[asked[q]] = std::move(got[q]);
    }
  }
  test_hook("container.update.after_store_snapshot");
  for (size_t k = 0; k < plan.size(); ++k) {
    const Planned& p = plan[k];
    const bool first = !gen->slots[p.index];
    if (!served.empty() && served[k]) {
      gen->slots[p.index] = std::move(served[k]);
      continue;
    }
    to_copy.push_back(p);
    if (first) fresh.push_back(p.index);
  }
  const Clock::time_point t1 = Clock::now();
  std::vector<Event*> wait_for;
  if (source_ready) wait_for.push_back(source_ready);
  uint64_t total = 0;  // the bytes this update copies (constants the store serves cost none)
  for (const Planned& p : to_copy) total += decls_[p.index].nbytes;
  Progress progress(opts.progress, total, "container " + quote_name(name_) + ": update");
  // Slabs only without a weight store: a store shares and releases storage per constant,
  // and a slab would keep a constant's bytes alive as long as any constant beside it.
  WHARF_RETURN_IF_ERROR(allocate_and_copy(gen, to_copy, wait_for, &progress, 0, /*pack=*/!store_));
  const Clock::time_point t2 = Clock::now();
  const bool folded = opts.fold && has_derived_;
  std::vector<int> written;
  for (const Planned& p : to_copy) written.push_back(p.index);
  WHARF_RETURN_IF_ERROR(fold_into(gen, opts, written));
  WHARF_RETURN_IF_ERROR(progress.finish());  // the last chance to cancel: nothing is staged yet
  const Clock::time_point t3 = Clock::now();
  std::vector<std::shared_ptr<Slot>> offered;
  for (int i : fresh) offered.push_back(gen->slots[size_t(i)]);
  std::shared_ptr<Generation> staged;
  test_hook("container.update.before_stage");
  {
    MutexLock lock(mu_);
    if (version_ != base_version) {
      // A swap (rollback) or free_inactive ran meanwhile. The update's outcome must be that
      // of the update ordered after it: its constants over the current base. Derived
      // constants were computed from the old base and cannot be carried over.
      if (folded)
        return Busy("container " + quote_name(name_) +
                    ": its generations changed during the update (a swap, rollback or "
                    "free_inactive ran meanwhile) and the fold computed derived constants from the previous base; "
                    "nothing was staged: retry the update");
      std::shared_ptr<Generation> rebased = next_generation_locked();
      for (const Planned& p : plan) rebased->slots[p.index] = gen->slots[p.index];
      gen = std::move(rebased);
    }
    staged = gen;
    stage_locked(std::move(gen), &dead);
    check_invariants_locked();
  }
  if (store_)
    for (size_t k = 0; k < fresh.size(); ++k) store_->offer_slot(decls_[size_t(fresh[k])].fqn, offered[k]);
  dead.clear();  // releases generations no longer referenced (device frees), timed below
  const Clock::time_point t4 = Clock::now();
  notify_staged(staged);  // before the update returns: a swap after it finds the generation prepared
  if (log_enabled(LogLevel::kDebug)) {
    auto ms = [](Clock::time_point a, Clock::time_point b) {
      return std::to_string(std::chrono::duration<double, std::milli>(b - a).count()) + " ms";
    };
    WHARF_LOG(kDebug, "container " + quote_name(name_) + ": update of " + std::to_string(plan.size()) + " constants (" +
                          std::to_string(to_copy.size()) + " copied): plan " + ms(t0, t1) + ", allocate and copy " +
                          ms(t1, t2) + ", fold " + ms(t2, t3) + ", stage and release " + ms(t3, t4) + ", listeners " +
                          ms(t4, Clock::now()));
  }
  return Status::Ok();
}

bool Container::in_other_generation_locked(int index, const std::shared_ptr<Slot>& slot) const {
  return inactive_ && inactive_->slots[size_t(index)] == slot;
}

bool Container::shared_elsewhere_locked(int index, std::shared_ptr<Slot> slot) const {
  // Count the references this container's own generations hold; any other reference is
  // another container, a store builder or an entry being handed out.
  std::vector<const Generation*> seen;
  auto count = [&](const std::shared_ptr<Generation>& g) {
    if (!g) return;
    for (const Generation* s : seen)
      if (s == g.get()) return;
    seen.push_back(g.get());
  };
  count(active_);
  count(inactive_);
  for (const auto& g : open_gens_) count(g);
  for (const Retired& r : retired_) count(r.gen);
  long ours = 0;
  for (const Generation* g : seen)
    if (g->slots[size_t(index)] == slot) ++ours;
  // `slot` itself is a copy (by value: a caller's reference into a generation, the only way it
  // was called, made this miss one other owner, e.g. an offloader holding captured storage).
  return slot.use_count() - 1 > ours;
}

bool Container::pinned_locked(int index, const std::shared_ptr<Slot>& slot) const {
  for (const auto& g : open_gens_)
    if (g->slots[size_t(index)] == slot) return true;
  return false;
}

Status Container::update_in_place(const std::vector<Planned>& plan, const UpdateOptions& opts, Event* source_ready) {
  std::shared_ptr<Generation> base;
  DeadList dead;
  {
    MutexLock lock(mu_);
    if (!active_)
      return FailedPrecondition("container " + quote_name(name_) +
                                ": no active generation to update in place (update and swap first)");
    for (const Planned& p : plan)
      if (active_->slots[p.index]->user_managed())
        return FailedPrecondition(quoted(decls_[p.index].fqn) +
                                  " is user-managed in the active generation; update it into the inactive one");
    in_place_ = true;  // swaps and free_inactive answer BUSY until this update is done
    base = active_;
  }
  // Every exit clears the flags and wakes waiters.
  struct Clear {
    Container* c;
    ~Clear() {
      MutexLock lock(c->mu_);
      c->in_place_ = false;
      c->writing_ = false;
      c->cv_.notify_all();
    }
  } clear{this};

  // Which written constants may keep their storage. Never storage a weight store can hand
  // out (another member has it or may take it), and never in a container with derived
  // constants (the fold could fail after the write; fresh storage keeps a failure harmless).
  std::vector<bool> reuse(plan.size(), !has_derived_);
  if (store_ && !has_derived_)
    for (size_t k = 0; k < plan.size(); ++k)
      if (store_->is_entry_slot(decls_[plan[k].index].fqn, base->slots[plan[k].index])) reuse[k] = false;

  std::vector<Event*> wait_for;
  if (source_ready) wait_for.push_back(source_ready);
  bool any_reuse = false;
  test_hook("container.in_place.waiting");
  {
    UniqueLock lock(mu_);
    WHARF_DCHECK(active_ == base, "swaps are refused while an in-place update runs");
    for (size_t k = 0; k < plan.size(); ++k) {
      const auto& slot = base->slots[plan[k].index];
      if (reuse[k] && (in_other_generation_locked(plan[k].index, slot) || shared_elsewhere_locked(plan[k].index, slot)))
        reuse[k] = false;
    }
    auto pinned = [&] {
      mu_.assert_held();  // called only with the lock held (here and inside the wait)
      for (size_t k = 0; k < plan.size(); ++k)
        if (reuse[k] && pinned_locked(plan[k].index, base->slots[plan[k].index])) return true;
      return false;
    };
    if (pinned()) {
      lock.wait_for(cv_, std::chrono::milliseconds(opts.in_place_max_wait_ms), [&]() {
        mu_.assert_held();
        return !pinned();
      });
      // Still pinned after the wait: those constants get fresh storage (the runs keep theirs).
      for (size_t k = 0; k < plan.size(); ++k)
        if (reuse[k] && pinned_locked(plan[k].index, base->slots[plan[k].index])) reuse[k] = false;
    }
    for (bool r : reuse) any_reuse |= r;
    if (any_reuse) {
      // From here until the new generation is published, new runs wait (for this write only).
      writing_ = true;
      writer_ = std::this_thread::get_id();
      reap_locked(true, &dead);
      // Runs that ended on the host may still be reading on the device: the copy waits for
      // their events. Events live as long as the container (reaped ones return to the pool),
      // so these pointers stay valid; one reused by a later run only makes the copy wait longer.
      for (Retired& r : retired_)
        if (r.event) wait_for.push_back(r.event.get());
    }
  }
  test_hook("container.in_place.before_write");

  auto gen = std::make_shared<Generation>();
  gen->slots = base->slots;
  size_t fresh_count = 0;
  for (size_t k = 0; k < plan.size(); ++k)
    if (!reuse[k]) {
      WHARF_RETURN_IF_ERROR(allocate_slot(plan[k].index, &gen->slots[plan[k].index]));
      ++fresh_count;
    }
  WHARF_RETURN_IF_ERROR(copy_into(gen, plan, wait_for));
  std::vector<int> written;
  for (size_t k = 0; k < plan.size(); ++k)
    if (!reuse[k]) written.push_back(plan[k].index);
  WHARF_RETURN_IF_ERROR(fold_into(gen, opts, written));
  // Listeners prepare for the generation before it is published when no run waits for it
  // (nothing reused: runs go on with the previous one meanwhile); with reused storage new
  // runs wait until the publish, so they are told after it.
  if (!any_reuse) notify_staged(gen);
  test_hook("container.in_place.before_publish");
  {
    MutexLock lock(mu_);
    WHARF_DCHECK(active_ == base, "swaps are refused while an in-place update runs");
    active_ = gen;
    active_->id = ++last_id_;
    ++version_;
    writing_ = false;
    cv_.notify_all();
    check_invariants_locked();
  }
  if (any_reuse) notify_staged(gen);
  if (log_enabled(LogLevel::kDebug))
    WHARF_LOG(kDebug, "container " + quote_name(name_) + ": in-place update of " + std::to_string(plan.size()) +
                          " constants, " + std::to_string(plan.size() - fresh_count) + " overwritten, " +
                          std::to_string(fresh_count) + " given fresh storage");
  return Status::Ok();
}

Status Container::bind_user_constant(const std::string& fqn, UserConstant uc) {
  int idx = find(fqn);
  if (idx < 0) return NotFound(quoted(fqn) + " is not declared by container " + quote_name(name_) + "");
  const ConstantDecl& d = decls_[idx];
  if (d.derived())
    return InvalidArgument(quoted(fqn) + " is derived (computed by the fold callback); it cannot be bound");
  WHARF_RETURN_IF_ERROR(validate_source(d, uc.meta, uc.data));
  PointerInfo pi = runtime_->device().query_pointer(uc.data);
  bool wants_device = d.placement == Placement::kDevice && runtime_->backend() == Backend::kCuda;
  if (wants_device && pi.kind != PointerKind::kDevice)
    return InvalidArgument(quoted(fqn) + ": placed on the device but the bound memory is host memory");
  if (!wants_device && pi.kind == PointerKind::kDevice && runtime_->backend() == Backend::kCuda)
    return InvalidArgument(quoted(fqn) + ": placed in host memory but the bound memory is device memory");
  if (has_derived_)
    return FailedPrecondition("container " + quote_name(name_) +
                              " declares derived constants; bind user memory through an update with a fold");
  std::unique_lock<std::mutex> ulock(update_mu_, std::try_to_lock);
  if (!ulock.owns_lock()) return Busy("container " + quote_name(name_) + ": an update is in progress");
  {
    MutexLock lock(mu_);
    WHARF_RETURN_IF_ERROR(check_not_replica_locked("binding user memory"));
  }
  auto slot = std::make_shared<Slot>(uc.data, std::move(uc.release));
  DeadList dead;
  std::shared_ptr<Generation> staged;
  {
    MutexLock lock(mu_);
    reap_locked(true, &dead);
    std::shared_ptr<Generation> gen = next_generation_locked();
    gen->slots[idx] = std::move(slot);
    staged = gen;
    stage_locked(std::move(gen), &dead);
  }
  dead.clear();
  notify_staged(staged);
  return Status::Ok();
}

void Container::add_listener(std::weak_ptr<GenerationListener> listener) {
  MutexLock lock(listeners_mu_);
  listeners_.erase(std::remove_if(listeners_.begin(), listeners_.end(), [](const auto& l) { return l.expired(); }),
                   listeners_.end());
  listeners_.push_back(std::move(listener));
}

void Container::notify_staged(const std::shared_ptr<Generation>& gen) {
  std::vector<std::shared_ptr<GenerationListener>> live;
  {
    MutexLock lock(listeners_mu_);
    if (listeners_.empty()) return;
    for (const auto& l : listeners_)
      if (auto p = l.lock()) live.push_back(std::move(p));
  }
  for (const auto& l : live) l->generation_staged(gen);
}

Status Container::swap() {
  DeadList dead;
  MutexLock lock(mu_);
  WHARF_RETURN_IF_ERROR(check_not_replica_locked("a swap"));
  WHARF_RETURN_IF_ERROR(check_swap_locked(false));
  swap_locked(&dead);
  return Status::Ok();
}

Status Container::check_swap_locked(bool by_store) const {
  if (in_place_)
    return Busy("container " + quote_name(name_) + ": an in-place update is running; swap after it returns");
  if (store_pending_ && !by_store)
    return FailedPrecondition(
        "container " + quote_name(name_) +
        ": a weight store update staged weights here that are not published yet; publish them "
        "with wharf_weight_store_swap (a member's own swap would break the store swap's atomicity)");
  if (!inactive_)
    return FailedPrecondition(
        "container " + quote_name(name_) + ": nothing to swap in: " +
        (no_inactive_ == NoInactive::kFreed
             ? std::string("the inactive generation was freed and no update has succeeded since")
         : no_inactive_ == NoInactive::kFirstSwap
             ? std::string(
                   "no update has succeeded since the first swap, and there is no earlier generation to roll back to")
             : std::string("no update has succeeded yet (a failed update stages nothing)")));
  for (size_t i = 0; i < decls_.size(); ++i)
    if (!inactive_->slots[i])
      return FailedPrecondition("container " + quote_name(name_) + ": " + quoted(decls_[i].fqn) +
                                (decls_[i].derived()
                                     ? " was never computed (run an update with a fold)"
                                     : " was never written; the first update must cover every constant"));
  return Status::Ok();
}

void Container::swap_locked(DeadList* dead) {
  std::swap(active_, inactive_);
  if (!inactive_) no_inactive_ = NoInactive::kFirstSwap;
  active_->id = ++last_id_;
  staged_ = false;
  store_pending_ = false;
  ++version_;
  reap_locked(false, dead);
  check_invariants_locked();
}

Status Container::free_inactive() {
  DeadList dead;
  MutexLock lock(mu_);
  WHARF_RETURN_IF_ERROR(check_not_replica_locked("freeing the inactive generation"));
  if (in_place_)
    return Busy("container " + quote_name(name_) +
                ": an in-place update is running; free the inactive generation after it returns");
  if (store_pending_)
    return FailedPrecondition("container " + quote_name(name_) +
                              ": the inactive generation holds a weight store update not published yet; "
                              "publish it with wharf_weight_store_swap first");
  drop_inactive_locked(&dead);
  return Status::Ok();
}

void Container::drop_inactive_locked(DeadList* dead) {
  if (inactive_) {
    dead->push_back(std::move(inactive_));  // runs still on the device hold it through the retire list
    ++version_;
  }
  if (last_id_ > 0) no_inactive_ = NoInactive::kFreed;
  staged_ = false;
  reap_locked(true, dead);
}

Status Container::check_not_replica_locked(const char* what) const {
  if (!replica_group_) return Status::Ok();
  return FailedPrecondition("container " + quote_name(name_) + " is replica " + std::to_string(replica_index_) +
                            " of a replica group: " + what +
                            " of one replica would make the replicas differ; update, swap and free the inactive "
                            "generation through the group (wharf_replica_group_*), or free the group first");
}

Status Container::acquire(std::shared_ptr<Generation>* out, uint64_t* id) {
  UniqueLock lock(mu_);
  if (writing_ && writer_ == std::this_thread::get_id())
    return Busy("container " + quote_name(name_) + ": this thread is writing the container in place");
  lock.wait(cv_, [&]() {
    mu_.assert_held();
    return !writing_;
  });
  if (!active_)
    return FailedPrecondition("container " + quote_name(name_) + " has no active weights yet (update and swap first)");
  runtime_->serving().note_run();  // updates pace their copies meanwhile (device/serving.h)
  if (active_->open_runs++ == 0) open_gens_.push_back(active_);
  *out = active_;
  *id = active_->id;
  return Status::Ok();
}

Status Container::take_event_locked(std::shared_ptr<Event>* out) {
  // The newest first: in a loop of runs the run before last's event, whose holders (its
  // session, the graphs) have moved on to the last run's. One held elsewhere is skipped: a
  // record would move what its holder waits for. A count of 1 read here stays 1: only this
  // pool, under mu_, hands the event out again.
  for (size_t i = event_pool_.size(); i-- > 0;)
    if (event_pool_[i].use_count() == 1) {
      *out = std::move(event_pool_[i]);
      event_pool_.erase(event_pool_.begin() + std::ptrdiff_t(i));
      return Status::Ok();
    }
  std::unique_ptr<Event> fresh;
  WHARF_RETURN_IF_ERROR(runtime_->device().create_event(&fresh));
  *out = std::move(fresh);
  return Status::Ok();
}

Status Container::retire(std::shared_ptr<Generation> gen, Stream& stream, std::shared_ptr<Event>* recorded) {
  if (recorded) recorded->reset();
  std::shared_ptr<Event> ev;
  Status st;
  DeadList dead;
  {
    MutexLock lock(mu_);
    reap_locked(false, &dead);
    st = take_event_locked(&ev);
  }
  if (st.ok()) st = stream.record(*ev);
  {
    MutexLock lock(mu_);
    WHARF_DCHECK(gen->open_runs > 0, "a retired run's generation counts it as open");
    if (--gen->open_runs == 0) {
      for (auto it = open_gens_.begin(); it != open_gens_.end(); ++it)
        if (*it == gen) {
          open_gens_.erase(it);
          break;
        }
      cv_.notify_all();
    }
    // Without an event the run's end is unknown: keep its generation until the container
    // goes (it is then freed after a device-wide wait).
    if (st.ok() && recorded) *recorded = ev;
    retired_.push_back(Retired{st.ok() ? std::move(ev) : nullptr, std::move(gen)});
  }
  // A generation reaped here that held the last reference to some storage (a swap or an
  // update dropped it while runs still used it) would free that storage on the thread
  // ending this run: device frees on the serving path (issue 26). It goes to the runtime's
  // release thread instead; generations that free nothing are just dropped.
  for (std::shared_ptr<Generation>& g : dead)
    if (g && g.use_count() == 1 && holds_last_storage(*g)) runtime_->release_later(std::move(g));
  return st;
}

void Container::reap_locked(bool all, DeadList* dead) {
  for (auto it = retired_.begin(); it != retired_.end();) {
    bool done = false;
    if (it->event && it->event->query(&done).ok() && done) {
      event_pool_.push_back(std::move(it->event));
      dead->push_back(std::move(it->gen));
      it = retired_.erase(it);
      continue;
    }
    if (!all) break;  // the fast path stops at the first run still in flight
    ++it;
  }
}

void Container::check_invariants_locked() const {
#if !defined(NDEBUG) || defined(WHARF_ENABLE_DCHECK)
  WHARF_DCHECK(!active_ || active_->slots.size() == decls_.size(), "the active generation has one slot per constant");
  WHARF_DCHECK(!staged_ || inactive_, "staged implies an inactive generation");
  WHARF_DCHECK(!store_pending_ || staged_, "a pending store update is staged");
  WHARF_DCHECK(!writing_ || in_place_, "writing happens inside an in-place update");
  for (const auto& g : open_gens_) WHARF_DCHECK(g->open_runs > 0, "open_gens_ holds generations with open runs");
  if (active_)
    for (size_t i = 0; i < decls_.size(); ++i) WHARF_DCHECK(active_->slots[i], "an active generation is complete");
#endif
}

}  // namespace wharf
