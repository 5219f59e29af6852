/* SPDX-License-Identifier: Apache-2.0 */
// Locks the compiler can check, and invariants that fail loudly in debug and sanitizer builds.
//
// libstdc++'s std::mutex carries no thread-safety attributes, so Clang's -Wthread-safety
// cannot see through it. Mutex/MutexLock/UniqueLock wrap it with the attributes; classes
// mark what each mutex guards with WHARF_GUARDED_BY and what each function needs with
// WHARF_REQUIRES / WHARF_EXCLUDES. A clang build with -Werror=thread-safety (part of
// `make test`) turns a lock mistake into a build failure. Under GCC the macros are empty.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__clang__)
#define WHARF_TSA(x) __attribute__((x))
#else
#define WHARF_TSA(x)
#endif

#define WHARF_CAPABILITY(x) WHARF_TSA(capability(x))
#define WHARF_SCOPED_CAPABILITY WHARF_TSA(scoped_lockable)
#define WHARF_GUARDED_BY(x) WHARF_TSA(guarded_by(x))
#define WHARF_PT_GUARDED_BY(x) WHARF_TSA(pt_guarded_by(x))
#define WHARF_ACQUIRED_BEFORE(...) WHARF_TSA(acquired_before(__VA_ARGS__))
#define WHARF_REQUIRES(...) WHARF_TSA(requires_capability(__VA_ARGS__))
#define WHARF_ACQUIRE(...) WHARF_TSA(acquire_capability(__VA_ARGS__))
#define WHARF_RELEASE(...) WHARF_TSA(release_capability(__VA_ARGS__))
#define WHARF_TRY_ACQUIRE(...) WHARF_TSA(try_acquire_capability(__VA_ARGS__))
#define WHARF_EXCLUDES(...) WHARF_TSA(locks_excluded(__VA_ARGS__))
#define WHARF_NO_THREAD_SAFETY_ANALYSIS WHARF_TSA(no_thread_safety_analysis)

// WHARF_DCHECK(cond, "what"): an invariant. Active in debug builds and whenever
// WHARF_ENABLE_DCHECK is defined (the sanitizer and test builds define it); aborts with the
// location and the broken invariant. Compiled out of release builds (the condition is not
// evaluated there, so it must have no side effects).
#if !defined(NDEBUG) || defined(WHARF_ENABLE_DCHECK)
#define WHARF_DCHECK(cond, what)                                                                            \
  do {                                                                                                      \
    if (!(cond)) {                                                                                          \
      std::fprintf(stderr, "wharf: invariant broken at %s:%d: %s (%s)\n", __FILE__, __LINE__, what, #cond); \
      std::abort();                                                                                         \
    }                                                                                                       \
  } while (0)
#else
#define WHARF_DCHECK(cond, what) \
  do {                           \
  } while (0)
#endif

namespace wharf {

class WHARF_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  void lock() WHARF_ACQUIRE() { mu_.lock(); }
  void unlock() WHARF_RELEASE() { mu_.unlock(); }
  bool try_lock() WHARF_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // For the analysis only: tells it the caller holds this mutex (checked nowhere else).
  void assert_held() const WHARF_TSA(assert_capability(this)) {}
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

// Holds a Mutex for a scope.
class WHARF_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) WHARF_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() WHARF_RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// A Mutex held for a scope that condition variables can wait on (the wait releases and
// re-acquires it, which the analysis treats as held throughout, as it is on return).
class WHARF_SCOPED_CAPABILITY UniqueLock {
 public:
  explicit UniqueLock(Mutex& mu) WHARF_ACQUIRE(mu) : lock_(mu.native()) {}
  ~UniqueLock() WHARF_RELEASE() {}
  UniqueLock(const UniqueLock&) = delete;
  UniqueLock& operator=(const UniqueLock&) = delete;
  // Drops and re-takes the mutex inside the scope (a worker running a task unlocked); the
  // analysis tracks both, so guarded members touched while unlocked are errors.
  void unlock() WHARF_RELEASE() { lock_.unlock(); }
  void lock() WHARF_ACQUIRE() { lock_.lock(); }
  template <typename Pred>
  void wait(std::condition_variable& cv, Pred pred) {
    cv.wait(lock_, pred);
  }
  template <typename Rep, typename Period, typename Pred>
  bool wait_for(std::condition_variable& cv, const std::chrono::duration<Rep, Period>& d, Pred pred) {
    return cv.wait_for(lock_, d, pred);
  }
  template <typename Clock, typename Dur, typename Pred>
  bool wait_until(std::condition_variable& cv, const std::chrono::time_point<Clock, Dur>& t, Pred pred) {
    return cv.wait_until(lock_, t, pred);
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

// Holds a set of Mutexes whose size is known only at run time (several containers' `mu_`s)
// for a scope: taken in address order, the order every multi-container lock uses, so two
// sets never deadlock; released in reverse. Clang's analysis cannot model a runtime-sized
// set, so the constructor and destructor are the only code that opts out of it (as a
// mutex's own lock() would); code that needs one member's mutex states it with holds(),
// which the analysis takes as that mutex held for the rest of the scope and which checks
// (in DCHECK builds) that the mutex really is one of the set's.
class LockSet {
 public:
  explicit LockSet(std::vector<Mutex*> mus) WHARF_NO_THREAD_SAFETY_ANALYSIS : mus_(std::move(mus)) {
    std::sort(mus_.begin(), mus_.end());
    mus_.erase(std::unique(mus_.begin(), mus_.end()), mus_.end());
    for (Mutex* m : mus_) m->lock();
  }
  ~LockSet() WHARF_NO_THREAD_SAFETY_ANALYSIS {
    for (auto it = mus_.rbegin(); it != mus_.rend(); ++it) (*it)->unlock();
  }
  LockSet(const LockSet&) = delete;
  LockSet& operator=(const LockSet&) = delete;

  void holds(const Mutex& m) const WHARF_TSA(assert_capability(m)) {
    WHARF_DCHECK(std::binary_search(mus_.begin(), mus_.end(), const_cast<Mutex*>(&m)),
                 "a mutex asserted through a lock set is one of the set's");
    (void)m;
  }

 private:
  std::vector<Mutex*> mus_;
};

}  // namespace wharf
