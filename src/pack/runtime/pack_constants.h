/* Constant weights: what dietcode_declare_constant and dietcode_forget_constant record, and the
 * packed copies a CPU pack makes of declared weights (pack_runtime_cpu.cc). Target-neutral:
 * every pack keeps the declarations (a GPU pack checks them and, for now, does nothing more).
 *
 * A declaration is (op, weights pointer). Its copies are keyed by the layout a kernel reads
 * (a CPU kernel's panel width and K block, and the problem's B dimensions): one op may
 * dispatch to kernels of several layouts over its shape values, and each gets its own copy,
 * made by the first launch that needs it. Copies are shared_ptrs: forgetting or re-declaring a
 * pointer drops them from the registry at once, and a launch still reading one keeps it alive
 * until it returns.
 *
 * Built into each libNAME.so, never into dietcode itself (see pack_runtime.h). */
#ifndef DIETCODE_PACK_CONSTANTS_H_
#define DIETCODE_PACK_CONSTANTS_H_

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>

#include "pack_desc.h"

namespace dietcode_pack {

/* One packed copy of a declared constant in one layout. Filled once, under `mu`, by the first
 * launch that needs it; `panels` is 64-byte aligned (CPU kernels load whole vectors). */
struct PackedConstant {
  std::mutex mu;
  bool ready = false;
  float* panels = nullptr;
  ~PackedConstant() { std::free(panels); }
};

/* The layout of a packed copy: the kernel's panel width and K block, and B's dimensions
 * (GEMM N and K) for the launch. */
struct ConstantLayout {
  int panel_nr, panel_kc;
  int64_t n, k;
  bool operator<(const ConstantLayout& o) const {
    return std::tie(panel_nr, panel_kc, n, k) < std::tie(o.panel_nr, o.panel_kc, o.n, o.k);
  }
};

class ConstantRegistry {
 public:
  /* Declares (again) that `data` is op's constant weights; a second declaration of the same
   * pointer drops the copies of the first (its contents may have changed in between). Throws
   * std::bad_alloc. */
  void declare(const OpDesc& op, const void* data) {
    std::lock_guard<std::mutex> lock(mu_);
    declared_[{&op, data}] = Copies();
    size_.store(declared_.size(), std::memory_order_release);
  }

  /* Ends a declaration; false when `data` was not declared for op. */
  bool forget(const OpDesc& op, const void* data) {
    std::lock_guard<std::mutex> lock(mu_);
    const bool erased = declared_.erase({&op, data}) > 0;
    size_.store(declared_.size(), std::memory_order_release);
    return erased;
  }

  /* False when nothing is declared: launches of a pack whose caller never declares anything
   * skip the registry's lock. (A launch racing a first declaration may miss it, and packs in
   * its call as before: either way the result is the same.) */
  bool any() const { return size_.load(std::memory_order_acquire) > 0; }

  /* The copy of declared weights `data` in `layout`, new (not ready) when none was made yet;
   * null when `data` is not declared constant for op. Throws std::bad_alloc. */
  std::shared_ptr<PackedConstant> copy(const OpDesc& op, const void* data,
                                       const ConstantLayout& layout) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = declared_.find({&op, data});
    if (it == declared_.end()) return nullptr;
    std::shared_ptr<PackedConstant>& c = it->second[layout];
    if (!c) c = std::make_shared<PackedConstant>();
    return c;
  }

 private:
  using Copies = std::map<ConstantLayout, std::shared_ptr<PackedConstant>>;
  std::mutex mu_;
  std::map<std::pair<const OpDesc*, const void*>, Copies> declared_;
  std::atomic<size_t> size_{0};  // declared_.size(), read without the lock
};

/* The pack's registry, created on first use and freed when the pack is unloaded. */
inline ConstantRegistry& constants() {
  static ConstantRegistry registry;
  return registry;
}

}  // namespace dietcode_pack

#endif /* DIETCODE_PACK_CONSTANTS_H_ */
