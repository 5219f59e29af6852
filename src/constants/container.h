// Container: one model's constant table and its active/inactive generations.
//
// Locking: `mu_` guards the generation pointers and the retire list and is held only for
// pointer operations (never around allocation, copies or device calls), so runs never wait
// for an update. `update_mu_` admits one update at a time; a second gets BUSY. An in-place
// update additionally holds new runs back (in_place_) while it writes the active slots.
#pragma once

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

// Computes derived constants of `target` with work on `stream`.
using FoldFn = std::function<Status(const std::shared_ptr<Generation>& target, Stream& stream)>;

struct UpdateOptions {
  bool in_place = false;
  bool require_full = false;
  FoldFn fold;  // empty = none
};

struct UserConstant {
  void* data = nullptr;
  TensorMeta meta;
  std::function<void()> release;
};

class Container : public std::enable_shared_from_this<Container> {
 public:
  static Status create(std::shared_ptr<Runtime> runtime, std::string name,
                       std::vector<ConstantDecl> decls, std::shared_ptr<Container>* out);
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
  const std::vector<ConstantDecl>& decls() const { return decls_; }
  int find(const std::string& fqn) const;  // -1 if unknown
  Runtime& runtime() { return *runtime_; }
  const std::shared_ptr<Runtime>& runtime_ptr() const { return runtime_; }
  // Whether a tensor in `placement` is seen by kernels as device memory.
  DeviceType device_type_of(Placement placement) const;

 private:
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
  // Moves finished runs' generations into *dead, to be destroyed after mu_ is released
  // (freeing storage may call into the driver, which must not happen under mu_).
  void reap_locked(bool all, std::vector<std::shared_ptr<Generation>>* dead);
  Status take_event_locked(std::unique_ptr<Event>* out);

  std::shared_ptr<Runtime> runtime_;
  std::string name_;
  std::vector<ConstantDecl> decls_;
  std::unordered_map<std::string, int> index_;
  bool has_derived_ = false;

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
