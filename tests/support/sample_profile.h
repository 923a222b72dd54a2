// A hand-built capture of sample_service (tests/targets): its real
// functions (nm), leaf addresses on real instructions and return addresses
// after its real calls (objdump), with sample counts chosen so every share
// is known:
//   worker_main -> handle_request -> price_order -> apply_fee   50 (leaf A)
//   worker_main -> handle_request -> price_order -> apply_fee   10 (leaf B)
//   worker_main -> handle_request -> validate                   30
//   worker_main -> handle_request                               20, in kernel mode: [kernel] above it
//   apply_fee (leaf A), cut short: no_cfi                        5
//   apply_fee -> apply_fee -> price_order (recursive, truncated)  5  (not a real path: recursion counted once)
// 120 samples in all.
#pragma once

#include <stdexcept>

#include "objdump_listing.h"
#include "xprof_document.h"

namespace xref::test {

struct SampleProfile {
  std::string path;
  std::map<std::string, NmFunction> nm;
  uint64_t leaf_a = 0;  // in apply_fee: its third-last instruction
  uint64_t leaf_b = 0;  // in apply_fee: the instruction after its first conditional jump
  uint64_t leaf_validate = 0;
  uint64_t leaf_handle = 0;
  XprofDocument document;
  uint32_t module = 0;
};

// The return address of the call from `caller` to `callee`.
inline uint64_t return_address(const ObjdumpListing& listing, const NmFunction& caller, const std::string& callee) {
  for (const auto& instruction : listing.in_range(caller.start, caller.start + caller.size)) {
    if (instruction.is_call() && instruction.target_symbol() == callee) return instruction.next;
  }
  throw std::runtime_error("no call to " + callee);
}

inline void fill_sample_profile(SampleProfile& sample, const std::string& path, const std::string& module_path,
                                const std::string& build_id) {
  sample.path = path;
  sample.nm = nm_sized_functions(path);
  const ObjdumpListing listing(path);
  const NmFunction& fee = sample.nm.at("apply_fee");
  const auto fee_code = listing.in_range(fee.start, fee.start + fee.size);
  sample.leaf_a = fee_code.at(fee_code.size() - 3).address;
  for (const auto& instruction : fee_code) {
    if (instruction.is_conditional_jump()) {
      sample.leaf_b = instruction.next;
      break;
    }
  }
  const NmFunction& validate = sample.nm.at("validate");
  sample.leaf_validate = listing.in_range(validate.start, validate.start + validate.size).at(4).address;
  const NmFunction& handle = sample.nm.at("handle_request");
  sample.leaf_handle = listing.in_range(handle.start, handle.start + handle.size).at(2).address;

  XprofDocument& doc = sample.document;
  const uint32_t m = sample.module = doc.module(module_path, build_id, true);
  const auto fn = [&](const char* name) {
    return static_cast<int64_t>(doc.function(m, name, sample.nm.at(name).start, sample.nm.at(name).size));
  };
  const int64_t worker = fn("worker_main");
  const int64_t handle_fn = fn("handle_request");
  const int64_t price = fn("price_order");
  const int64_t fee_fn = fn("apply_fee");
  const int64_t validate_fn = fn("validate");
  const uint32_t at_a = doc.location(m, sample.leaf_a, false, fee_fn);
  const uint32_t at_b = doc.location(m, sample.leaf_b, false, fee_fn);
  const uint32_t at_validate = doc.location(m, sample.leaf_validate, false, validate_fn);
  const uint32_t at_handle = doc.location(m, sample.leaf_handle, false, handle_fn);
  const uint32_t from_price = doc.location(m, return_address(listing, sample.nm.at("price_order"), "apply_fee"), true, price);
  const uint32_t from_handle_price =
      doc.location(m, return_address(listing, sample.nm.at("handle_request"), "price_order"), true, handle_fn);
  const uint32_t from_handle_validate =
      doc.location(m, return_address(listing, sample.nm.at("handle_request"), "validate"), true, handle_fn);
  const uint32_t from_worker =
      doc.location(m, return_address(listing, sample.nm.at("worker_main"), "handle_request"), true, worker);
  const uint32_t fee_self = doc.location(m, sample.leaf_b, true, fee_fn);  // recursion, as a caller frame
  doc.stack({at_a, from_price, from_handle_price, from_worker}, 50);
  doc.stack({at_b, from_price, from_handle_price, from_worker}, 10, "complete", false, 101);
  doc.stack({at_validate, from_handle_validate, from_worker}, 30);
  doc.stack({at_handle, from_worker}, 20, "complete", true);
  doc.stack({at_a}, 5, "no_cfi");
  doc.stack({at_a, fee_self, from_price}, 5, "truncated");
}

}  // namespace xref::test
