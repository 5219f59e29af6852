// SPDX-License-Identifier: Apache-2.0
#include "core/test_hooks.h"

#include <memory>
#include <mutex>

namespace wharf {
namespace detail {

std::atomic<bool> g_test_hook_installed{false};

namespace {
std::mutex& hook_mu() {
  static std::mutex mu;
  return mu;
}
std::shared_ptr<TestHookFn>& hook() {
  static std::shared_ptr<TestHookFn> fn;
  return fn;
}
}  // namespace

void run_test_hook(const char* point) {
  std::shared_ptr<TestHookFn> fn;
  {
    std::lock_guard<std::mutex> lock(hook_mu());
    fn = hook();
  }
  if (fn && *fn) (*fn)(point);
}

}  // namespace detail

ScopedTestHook::ScopedTestHook(TestHookFn fn) {
  std::lock_guard<std::mutex> lock(detail::hook_mu());
  detail::hook() = std::make_shared<TestHookFn>(std::move(fn));
  detail::g_test_hook_installed.store(true);
}

ScopedTestHook::~ScopedTestHook() {
  std::lock_guard<std::mutex> lock(detail::hook_mu());
  detail::hook().reset();
  detail::g_test_hook_installed.store(false);
}

}  // namespace wharf
