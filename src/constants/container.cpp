#include "constants/container.h"

#include <chrono>
#include <cstdio>

#include <utility>

#include "core/checked.h"
#include "core/logging.h"
#include "constants/weight_store.h"

namespace wharf {
namespace {

std::string quoted(const std::string& fqn) { return "constant '" + fqn + "'"; }

std::string hex_u32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", unsigned(v));
  return buf;
}

// Clears a flag and wakes waiters on every exit path.
class FlagGuard {
 public:
  FlagGuard(std::mutex& mu, std::condition_variable& cv, bool& flag) : mu_(mu), cv_(cv), flag_(flag) {}
  ~FlagGuard() {
    std::lock_guard<std::mutex> lock(mu_);
    flag_ = false;
    cv_.notify_all();
  }

 private:
  std::mutex& mu_;
  std::condition_variable& cv_;
  bool& flag_;
};

}  // namespace

Status Container::create(std::shared_ptr<Runtime> runtime, ContainerConfig config,
                         std::shared_ptr<Container>* out) {
  std::shared_ptr<Container> c(new Container());
  c->runtime_ = std::move(runtime);
  c->name_ = config.name.empty() ? "model" : std::move(config.name);
  c->max_session_bytes_ = config.max_session_bytes;
  std::vector<ConstantDecl>& decls = config.constants;
  for (size_t i = 0; i < decls.size(); ++i) {
    ConstantDecl& d = decls[i];
    if (d.fqn.empty())
      return InvalidArgument("container '" + c->name_ + "': constant declaration " + std::to_string(i) +
                             " has an empty FQN");
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
      return InvalidArgument("container '" + c->name_ + "': " + what + " is declared twice");
    c->has_derived_ |= d.derived();
  }
  c->decls_ = std::move(decls);

  // States: validated completely before anything is allocated.
  for (size_t i = 0; i < config.states.size(); ++i) {
    const StateInit& si = config.states[i];
    if (si.fqn.empty())
      return InvalidArgument("container '" + c->name_ + "': state declaration " + std::to_string(i) +
                             " has an empty FQN");
    std::string what = "state '" + si.fqn + "'";
    if (c->index_.count(si.fqn))
      return InvalidArgument("container '" + c->name_ + "': " + what + " has the FQN of a constant");
    if (!c->state_index_.emplace(si.fqn, int(i)).second)
      return InvalidArgument("container '" + c->name_ + "': " + what + " is declared twice");
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
      if (!st.ok()) return InvalidArgument("container '" + c->name_ + "': initial value of " + what + ": " + st.message());
    }
    StateDecl sd;
    sd.fqn = si.fqn;
    sd.dtype = si.dtype;
    sd.shape = si.shape;
    sd.nbytes = m.nbytes();
    c->states_.push_back(std::move(sd));
  }

  if (config.store) {
    if (&config.store->runtime() != c->runtime_.get())
      return InvalidArgument("container '" + c->name_ + "': its weight store belongs to another runtime");
    WHARF_RETURN_IF_ERROR(config.store->join(c.get(), c->name_, c->decls_));
    c->store_ = std::move(config.store);  // from here on ~Container leaves the store
  }

  // Capture initial values into device templates: one copy now, device-to-device copies
  // at every session's first run and reset.
  std::vector<CopyRequest> reqs;
  for (size_t i = 0; i < config.states.size(); ++i) {
    const StateInit& si = config.states[i];
    StateDecl& sd = c->states_[i];
    if (!si.has_initial || sd.nbytes == 0) continue;
    WHARF_RETURN_IF_ERROR(c->runtime_->device().allocate(MemKind::kDevice, MemTag::kState, sd.nbytes,
                                                         "initial value of state '" + sd.fqn + "'", &sd.initial));
    reqs.push_back({sd.initial.data(), si.data, sd.nbytes});
  }
  if (!reqs.empty()) {
    TransferEngine* engine = nullptr;
    WHARF_RETURN_IF_ERROR(c->runtime_->transfers(&engine));
    WHARF_RETURN_IF_ERROR(engine->copy(reqs, {}).with_context("container '" + c->name_ + "': capturing initial state values"));
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
      return ResourceExhausted("container '" + name_ + "': a session of " + std::to_string(bytes) +
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
  for (Retired& r : retired_) {
    Status st = r.event ? r.event->synchronize() : runtime_->device().synchronize();
    if (!st.ok()) WHARF_LOG(kError, "container '" + name_ + "': waiting for a run at free: " + st.message());
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
  std::lock_guard<std::mutex> lock(mu_);
  return active_ ? active_->id : 0;
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

Status Container::validate_map(const ConstantMap& map, const UpdateOptions& opts,
                               std::vector<Planned>* plan) const {
  plan->clear();
  plan->reserve(map.size());
  for (size_t i = 0; i < map.size(); ++i) {
    const MapEntry& e = map.entry(i);
    int idx = find(e.fqn);
    if (idx < 0) return NotFound(quoted(e.fqn) + " is not declared by container '" + name_ + "'");
    const ConstantDecl& d = decls_[idx];
    if (d.derived())
      return InvalidArgument(quoted(e.fqn) + " is derived (computed by the fold callback); it cannot be supplied by a map");
    WHARF_RETURN_IF_ERROR(validate_source(d, e.meta, e.data));
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
    return InvalidArgument("container '" + name_ +
                           "' declares derived constants; an update needs a fold callback to recompute them");
  return Status::Ok();
}

Status allocate_constant_slot(Runtime& runtime, const ConstantDecl& d, std::shared_ptr<Slot>* out) {
  MemKind kind = d.placement == Placement::kHost ? MemKind::kPinnedHost : MemKind::kDevice;
  Buffer b;
  WHARF_RETURN_IF_ERROR(runtime.device().allocate(kind, MemTag::kConstants, d.nbytes, quoted(d.fqn), &b));
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
    reqs.push_back({gen->slots[p.index]->data(), p.entry->data, decls_[p.index].nbytes});
  TransferEngine* engine = nullptr;
  WHARF_RETURN_IF_ERROR(runtime_->transfers(&engine));
  return engine->copy(reqs, wait_for).with_context("container '" + name_ + "': copying " +
                                                   std::to_string(plan.size()) + " constants");
}

Status Container::run_fold(const UpdateOptions& opts, const std::shared_ptr<Generation>& gen) {
  if (!opts.fold || !has_derived_) return Status::Ok();
  Stream& stream = runtime_->stream();
  WHARF_RETURN_IF_ERROR(opts.fold(shared_from_this(), gen, stream).with_context("container '" + name_ + "': fold callback"));
  // The update returns when everything is in place, folded constants included.
  return stream.synchronize().with_context("container '" + name_ + "': waiting for the fold's work");
}

Status Container::update(const ConstantMap& map, const UpdateOptions& opts) {
  std::vector<Planned> plan;
  WHARF_RETURN_IF_ERROR(validate_map(map, opts, &plan));
  std::unique_lock<std::mutex> ulock(update_mu_, std::try_to_lock);
  if (!ulock.owns_lock())
    return Busy("container '" + name_ + "': another update is in progress");
  return opts.in_place ? update_in_place(plan, opts) : update_inactive(plan, opts);
}

std::shared_ptr<Generation> Container::next_generation_locked() const {
  auto gen = std::make_shared<Generation>();
  // The first update after a swap starts from the active generation (sharing every slot);
  // later ones add to what is staged.
  const std::shared_ptr<Generation>& base = staged_ ? inactive_ : active_;
  gen->slots = base ? base->slots : std::vector<std::shared_ptr<Slot>>(decls_.size());
  return gen;
}

Status Container::fold_into(const std::shared_ptr<Generation>& gen, const UpdateOptions& opts) {
  // The fold computes derived constants; a container without any has nothing to fold (a
  // store update's fold is written for the containers that do).
  if (!opts.fold || !has_derived_) return Status::Ok();
  for (size_t i = 0; i < decls_.size(); ++i)
    if (decls_[i].derived()) WHARF_RETURN_IF_ERROR(allocate_slot(int(i), &gen->slots[i]));
  return run_fold(opts, gen);
}

void Container::stage_locked(std::shared_ptr<Generation> gen, DeadList* dead) {
  dead->push_back(std::move(inactive_));
  inactive_ = std::move(gen);
  staged_ = true;
}

Status Container::update_inactive(const std::vector<Planned>& plan, const UpdateOptions& opts) {
  std::shared_ptr<Generation> gen;
  DeadList dead;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reap_locked(true, &dead);
    gen = next_generation_locked();
  }
  // Fresh slots for what this update writes (copy-on-write). A constant this container has
  // never held takes the weight store's storage when the store has it: no allocation, no
  // copy. On any failure `gen` is dropped: nothing was published.
  std::vector<Planned> to_copy;
  std::vector<int> fresh;  // written for the first time: offered to the store afterwards
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  for (const Planned& p : plan) {
    const bool first = !gen->slots[p.index];
    if (first && store_ && !decls_[p.index].derived()) {
      if (std::shared_ptr<Slot> shared = store_->find_slot(decls_[p.index].fqn)) {
        gen->slots[p.index] = std::move(shared);
        continue;
      }
    }
    WHARF_RETURN_IF_ERROR(allocate_slot(p.index, &gen->slots[p.index]));
    to_copy.push_back(p);
    if (first) fresh.push_back(p.index);
  }
  const Clock::time_point t1 = Clock::now();
  WHARF_RETURN_IF_ERROR(copy_into(gen, to_copy, {}));
  const Clock::time_point t2 = Clock::now();
  WHARF_RETURN_IF_ERROR(fold_into(gen, opts));
  const Clock::time_point t3 = Clock::now();
  if (store_)
    for (int i : fresh) store_->offer_slot(decls_[i].fqn, gen->slots[i]);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stage_locked(std::move(gen), &dead);
  }
  dead.clear();  // releases generations no longer referenced (device frees), timed below
  if (log_enabled(LogLevel::kDebug)) {
    auto ms = [](Clock::time_point a, Clock::time_point b) {
      return std::to_string(std::chrono::duration<double, std::milli>(b - a).count()) + " ms";
    };
    WHARF_LOG(kDebug, "container '" + name_ + "': update of " + std::to_string(plan.size()) + " constants (" +
                          std::to_string(to_copy.size()) + " copied): allocate " + ms(t0, t1) + ", copy " +
                          ms(t1, t2) + ", fold " + ms(t2, t3) + ", stage and release " + ms(t3, Clock::now()));
  }
  return Status::Ok();
}

Status Container::update_in_place(const std::vector<Planned>& plan, const UpdateOptions& opts) {
  std::shared_ptr<Generation> gen;
  std::vector<Event*> wait_for;
  DeadList dead;
  std::unique_lock<std::mutex> lock(mu_);
  if (!active_)
    return FailedPrecondition("container '" + name_ + "': no active generation to update in place");
  for (const Planned& p : plan)
    if (active_->slots[p.index]->user_managed())
      return FailedPrecondition(quoted(decls_[p.index].fqn) +
                                " is user-managed in the active generation; update it into the inactive one");
  gen = active_;
  in_place_ = true;  // new runs wait until the write is done
  // Declared after `lock`, destroyed before it: every path below unlocks first.
  FlagGuard clear(mu_, cv_, in_place_);
  // Runs still open on the host may launch more work reading these slots: wait for them
  // to end. Runs already ended are waited for on the device, through their events.
  cv_.wait(lock, [&] { return gen->open_runs.load() == 0; });
  reap_locked(true, &dead);
  // Events live as long as the container (reaped ones return to the pool), so these pointers
  // stay valid; one reused by a later run meanwhile only makes the copy wait a little longer.
  for (Retired& r : retired_)
    if (r.event) wait_for.push_back(r.event.get());
  lock.unlock();
  WHARF_RETURN_IF_ERROR(copy_into(gen, plan, wait_for));
  return run_fold(opts, gen);
}

Status Container::bind_user_constant(const std::string& fqn, UserConstant uc) {
  int idx = find(fqn);
  if (idx < 0) return NotFound(quoted(fqn) + " is not declared by container '" + name_ + "'");
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
    return FailedPrecondition("container '" + name_ +
                              "' declares derived constants; bind user memory through an update with a fold");
  std::unique_lock<std::mutex> ulock(update_mu_, std::try_to_lock);
  if (!ulock.owns_lock()) return Busy("container '" + name_ + "': an update is in progress");
  auto slot = std::make_shared<Slot>(uc.data, std::move(uc.release));
  DeadList dead;
  std::lock_guard<std::mutex> lock(mu_);
  reap_locked(true, &dead);
  std::shared_ptr<Generation> gen = next_generation_locked();
  gen->slots[idx] = std::move(slot);
  stage_locked(std::move(gen), &dead);
  return Status::Ok();
}

Status Container::swap() {
  DeadList dead;
  std::lock_guard<std::mutex> lock(mu_);
  return swap_locked(&dead);
}

Status Container::swap_locked(DeadList* dead) {
  if (!inactive_)
    return FailedPrecondition("container '" + name_ + "': nothing to swap in (no update since the inactive generation was freed)");
  for (size_t i = 0; i < decls_.size(); ++i)
    if (!inactive_->slots[i])
      return FailedPrecondition("container '" + name_ + "': " + quoted(decls_[i].fqn) +
                                (decls_[i].derived() ? " was never computed (run an update with a fold)"
                                                     : " was never written; the first update must cover every constant"));
  std::swap(active_, inactive_);
  active_->id = ++last_id_;
  staged_ = false;
  reap_locked(false, dead);
  return Status::Ok();
}

Status Container::free_inactive() {
  DeadList dead;
  std::lock_guard<std::mutex> lock(mu_);
  dead.push_back(std::move(inactive_));  // runs still on the device hold it through the retire list
  staged_ = false;
  reap_locked(true, &dead);
  return Status::Ok();
}

Status Container::acquire(std::shared_ptr<Generation>* out) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !in_place_; });
  if (!active_)
    return FailedPrecondition("container '" + name_ + "' has no active weights yet (update and swap first)");
  active_->open_runs.fetch_add(1);
  *out = active_;
  return Status::Ok();
}

Status Container::take_event_locked(std::unique_ptr<Event>* out) {
  if (!event_pool_.empty()) {
    *out = std::move(event_pool_.back());
    event_pool_.pop_back();
    return Status::Ok();
  }
  return runtime_->device().create_event(out);
}

Status Container::retire(std::shared_ptr<Generation> gen, Stream& stream) {
  std::unique_ptr<Event> ev;
  Status st;
  DeadList dead;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reap_locked(false, &dead);
    st = take_event_locked(&ev);
  }
  if (st.ok()) st = stream.record(*ev);
  std::lock_guard<std::mutex> lock(mu_);
  if (st.ok()) {
    retired_.push_back(Retired{std::move(ev), gen});
  } else {
    // Without an event the run's end is unknown: keep its generation until the container
    // goes (it is then freed after a device-wide wait).
    retired_.push_back(Retired{nullptr, gen});
  }
  if (gen->open_runs.fetch_sub(1) == 1) cv_.notify_all();
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

}  // namespace wharf
