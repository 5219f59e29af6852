/* SPDX-License-Identifier: Apache-2.0 */
// Test hooks: named points in the library where a test can park a thread, so a racy order
// is forced deterministically instead of hoped for.
//
// A hook point costs one relaxed atomic load when no hook is installed (always, outside
// tests). Hooks are internal C++ (not exported from libwharf.so); the unit tests link the
// static archive and install them with ScopedTestHook. The hook runs on the thread that
// reached the point, with no Wharf lock held (every point is placed outside locks).
#pragma once

#include <atomic>
#include <functional>
#include <string>

namespace wharf {

using TestHookFn = std::function<void(const char* point)>;

namespace detail {
extern std::atomic<bool> g_test_hook_installed;
void run_test_hook(const char* point);
}  // namespace detail

inline void test_hook(const char* point) {
  if (detail::g_test_hook_installed.load(std::memory_order_relaxed)) detail::run_test_hook(point);
}

// Installs `fn` for every point (it filters by name) for the object's lifetime.
class ScopedTestHook {
 public:
  explicit ScopedTestHook(TestHookFn fn);
  ~ScopedTestHook();
  ScopedTestHook(const ScopedTestHook&) = delete;
  ScopedTestHook& operator=(const ScopedTestHook&) = delete;
};

}  // namespace wharf
