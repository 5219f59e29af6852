// Container: one model's constant table and its active/inactive generations.
//
// Locking: `mu_` guards the generation pointers and the retire list and is held only for
// pointer operations (never around allocation, copies or device calls), so runs never wait
// for an update. `update_mu_` admits one update at a time; a second gets BUSY. An in-place
// update additionally holds new runs back (in_place_) while it writes the active slots.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "constants/constant_map.h"
#include "constants/generation.h"
#include "core/tensor.h"
#include "device/runtime.h"

namespace wharf {

enum class Placement : int { kDevice = 0, kHost = 1 };
constexpr uint32_t kConstantDerived = 0x1;

struct ConstantDecl {
  std::string fqn;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  Placement placement = Placement::kDevice;
  uint32_t flags = 0;
  uint64_t nbytes = 0;  // filled by Container::create
  bool derived() const { return flags & kConstantDerived; }
};

class Container;
// Computes derived constants of `target` (a generation of `c`) with work on `stream`.
using FoldFn = std::function<Status(const std::shared_ptr<Container>& c, const std::shared_ptr<Generation>& target,
                                    Stream& stream)>;

struct UpdateOptions {
  bool in_place = false;
  bool require_full = false;
  FoldFn fold;  // empty = none
};

// A per-session mutable tensor. `initial` holds the captured initial value (device memory,
// tag STATE); empty means zeros.
struct StateDecl {
  std::string fqn;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t nbytes = 0;
  Buffer initial;
};

// A state's initial value as the caller gave it (borrowed for Container::create).
struct StateInit {
  std::string fqn;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  bool has_initial = false;
  TensorMeta meta;            // of the initial value
  const void* data = nullptr;
};

class WeightStore;

struct ContainerConfig {
  std::string name;
  std::vector<ConstantDecl> constants;
  std::vector<StateInit> states;
  std::shared_ptr<WeightStore> store;  // null = no sharing
  uint64_t max_session_bytes = 0;      // 0 = no budget
};

// Checks a source tensor against a declaration (dtype, shape, contiguity, device).
Status validate_constant_source(Runtime& runtime, const ConstantDecl& d, const TensorMeta& src, const void* data);
// Fresh storage for one constant: pinned host memory for host placement, device memory
// otherwise, accounted under the constants tag.
Status allocate_constant_slot(Runtime& runtime, const ConstantDecl& d, std::shared_ptr<Slot>* out);

struct UserConstant {
  void* data = nullptr;
  TensorMeta meta;
  std::function<void()> release;
};

class Container : public std::enable_shared_from_this<Container> {
 public:
  static Status create(std::shared_ptr<Runtime> runtime, ContainerConfig config, std::shared_ptr<Container>* out);
  ~Container();

  Status update(const ConstantMap& map, const UpdateOptions& opts);
  Status bind_user_constant(const std::string& fqn, UserConstant uc);
  Status swap();
  Status free_inactive();
  uint64_t generation() const;

  // Leases: acquire pins the active generation (FAILED_PRECONDITION if none); retire
  // records completion on `stream` and keeps the generation until the event fires.
  Status acquire(std::shared_ptr<Generation>* out);
  Status retire(std::shared_ptr<Generation> gen, Stream& stream);

  const std::string& name() const { return name_; }
  const std::vector<StateDecl>& states() const { return states_; }
  int find_state(const std::string& fqn) const;  // -1 if unknown
  // Session budget (max_session_bytes): reserve fails with RESOURCE_EXHAUSTED past it.
  Status reserve_session_bytes(uint64_t bytes);
  void release_session_bytes(uint64_t bytes);
  const std::shared_ptr<WeightStore>& store() const { return store_; }
  const std::vector<ConstantDecl>& decls() const { return decls_; }
  int find(const std::string& fqn) const;  // -1 if unknown
  Runtime& runtime() { return *runtime_; }
  const std::shared_ptr<Runtime>& runtime_ptr() const { return runtime_; }
  // Whether a tensor in `placement` is seen by kernels as device memory.
  DeviceType device_type_of(Placement placement) const;

 private:
  friend class WeightStore;
  struct Retired {
    std::unique_ptr<Event> event;
    std::shared_ptr<Generation> gen;
  };
  struct Planned {
    int index;
    const MapEntry* entry;
  };

  Container() = default;
  Status validate_map(const ConstantMap& map, const UpdateOptions& opts, std::vector<Planned>* plan) const;
  Status validate_source(const ConstantDecl& d, const TensorMeta& src, const void* data) const;
  Status allocate_slot(int index, std::shared_ptr<Slot>* out);
  Status copy_into(const std::shared_ptr<Generation>& gen, const std::vector<Planned>& plan,
                   const std::vector<Event*>& wait_for);
  Status run_fold(const UpdateOptions& opts, const std::shared_ptr<Generation>& gen);
  Status update_inactive(const std::vector<Planned>& plan, const UpdateOptions& opts);
  Status update_in_place(const std::vector<Planned>& plan, const UpdateOptions& opts);
  // The generation an update builds on: the staged one, else a copy of the active one.
  std::shared_ptr<Generation> next_generation_locked() const;
  // Allocates derived slots of `gen` and runs the fold (no-op without a fold).
  Status fold_into(const std::shared_ptr<Generation>& gen, const UpdateOptions& opts);
  // Makes `gen` the staged inactive generation (under mu_); the old one goes to *dead.
  void stage_locked(std::shared_ptr<Generation> gen, std::vector<std::shared_ptr<Generation>>* dead);
  Status swap_locked(std::vector<std::shared_ptr<Generation>>* dead);
  // Moves finished runs' generations into *dead, to be destroyed after mu_ is released
  // (freeing storage may call into the driver, which must not happen under mu_).
  void reap_locked(bool all, std::vector<std::shared_ptr<Generation>>* dead);
  Status take_event_locked(std::unique_ptr<Event>* out);

  std::shared_ptr<Runtime> runtime_;
  std::string name_;
  std::vector<ConstantDecl> decls_;
  std::unordered_map<std::string, int> index_;
  bool has_derived_ = false;
  std::vector<StateDecl> states_;
  std::unordered_map<std::string, int> state_index_;
  uint64_t max_session_bytes_ = 0;
  std::atomic<uint64_t> session_bytes_{0};
  std::shared_ptr<WeightStore> store_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // in_place_ cleared; open_runs reached zero
  std::shared_ptr<Generation> active_, inactive_;
  bool staged_ = false;    // inactive_ was written by updates since the last swap
  bool in_place_ = false;  // an in-place update is writing the active slots
  uint64_t last_id_ = 0;
  std::deque<Retired> retired_;
  std::vector<std::unique_ptr<Event>> event_pool_;

  std::mutex update_mu_;
};

using DeadList = std::vector<std::shared_ptr<Generation>>;

}  // namespace wharf
