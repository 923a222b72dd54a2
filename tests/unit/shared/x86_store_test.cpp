// What one instruction writes (shared/x86_store.h), on hand-assembled bytes
// whose Capstone text names the instruction: the destination, the value's
// source, the prefixes, and the forms that are not stores at all.
#include "x86_store.h"

#include <gtest/gtest.h>

#include <vector>

namespace xref {
namespace {

constexpr uint64_t kVa = 0x1000;

StoreInstruction decode(const X86StoreDecoder& decoder, const std::vector<uint8_t>& bytes, const std::string& text) {
  EXPECT_EQ(decoder.text(bytes, kVa), text);
  auto store = decoder.decode(bytes, kVa);
  if (!store) throw std::runtime_error("Zydis cannot decode " + text);
  EXPECT_EQ(store->size, bytes.size()) << text;
  return *store;
}

TEST(X86Store, MovFromARegisterOrAnImmediate) {
  const X86StoreDecoder decoder;
  ASSERT_EQ(decoder.failure(), "");
  auto store = decode(decoder, {0x48, 0x89, 0x54, 0xc7, 0x10}, "mov qword ptr [rdi + rax*8 + 0x10], rdx");
  ASSERT_TRUE(store.writes_memory);
  EXPECT_EQ(store.destination.base, Register::di);
  EXPECT_EQ(store.destination.index, Register::ax);
  EXPECT_EQ(store.destination.scale, 8);
  EXPECT_EQ(store.destination.disp, 0x10);
  EXPECT_EQ(store.destination.width, 8u);
  EXPECT_EQ(store.value.kind, StoreValue::Kind::register_);
  EXPECT_EQ(store.value.reg, Register::dx);
  EXPECT_EQ(store.value.shift, 0);

  store = decode(decoder, {0x88, 0x20}, "mov byte ptr [rax], ah");
  EXPECT_EQ(store.value.reg, Register::ax);
  EXPECT_EQ(store.value.shift, 8);
  EXPECT_EQ(store.destination.width, 1u);

  store = decode(decoder, {0x48, 0xc7, 0x00, 0xff, 0xff, 0xff, 0xff}, "mov qword ptr [rax], -1");
  EXPECT_EQ(store.value.kind, StoreValue::Kind::immediate);
  EXPECT_EQ(store.value.immediate, 0xffffffffffffffffull);  // imm32 sign-extended: what 8 bytes get
  store = decode(decoder, {0xc6, 0x00, 0xff}, "mov byte ptr [rax], 0xff");
  EXPECT_EQ(store.value.immediate, 0xffu);

  // rip-relative: the VA written, counted from the end of the instruction.
  store = decode(decoder, {0x89, 0x05, 0x10, 0x00, 0x00, 0x00}, "mov dword ptr [rip + 0x10], eax");
  EXPECT_TRUE(store.destination.rip_relative);
  EXPECT_EQ(store.destination.target, kVa + 6 + 0x10);
  EXPECT_FALSE(store.destination.base);
}

TEST(X86Store, StackWritesAreBelowRsp) {
  const X86StoreDecoder decoder;
  auto store = decode(decoder, {0x55}, "push rbp");
  EXPECT_TRUE(store.stack_push);
  EXPECT_EQ(store.destination.base, Register::sp);
  EXPECT_EQ(store.destination.disp, -8);
  EXPECT_EQ(store.value.reg, Register::bp);
  store = decode(decoder, {0xe8, 0x00, 0x01, 0x00, 0x00}, "call 0x1105");
  EXPECT_TRUE(store.stack_push);
  EXPECT_EQ(store.destination.disp, -8);
  EXPECT_EQ(store.value.kind, StoreValue::Kind::immediate);
  EXPECT_TRUE(store.value.return_address);
  EXPECT_EQ(store.value.immediate, kVa + 5);
  EXPECT_EQ(store.flow, Flow::next);
  EXPECT_EQ(store.branch_target, 0x1105u);
  // pop computes its destination with rsp after the pop.
  store = decode(decoder, {0x8f, 0x44, 0x24, 0x08}, "pop qword ptr [rsp + 8]");
  EXPECT_EQ(store.destination.disp, 16);
}

TEST(X86Store, StringStoresWriteThroughRdi) {
  const X86StoreDecoder decoder;
  auto store = decode(decoder, {0xf3, 0x48, 0xab}, "rep stosq qword ptr [rdi], rax");
  EXPECT_TRUE(store.rep && store.stos && store.string_store);
  EXPECT_EQ(store.destination.base, Register::di);
  EXPECT_EQ(store.destination.width, 8u);
  EXPECT_EQ(store.value.reg, Register::ax);
  store = decode(decoder, {0xa4}, "movsb byte ptr [rdi], byte ptr [rsi]");
  EXPECT_TRUE(store.string_store && !store.rep && !store.stos);
  EXPECT_EQ(store.value.kind, StoreValue::Kind::after);
  // movsd is also SSE's scalar store: not a string store.
  store = decode(decoder, {0xf2, 0x0f, 0x11, 0x07}, "movsd qword ptr [rdi], xmm0");
  EXPECT_FALSE(store.string_store);
  EXPECT_EQ(store.destination.width, 8u);
  EXPECT_EQ(store.value.kind, StoreValue::Kind::after);
}

TEST(X86Store, ReadModifyWriteAndAtomicsAreKnownAfter) {
  const X86StoreDecoder decoder;
  auto store = decode(decoder, {0xf0, 0x48, 0x0f, 0xb1, 0x0a}, "lock cmpxchg qword ptr [rdx], rcx");
  EXPECT_TRUE(store.writes_memory && store.lock);
  EXPECT_EQ(store.value.kind, StoreValue::Kind::after);
  store = decode(decoder, {0x48, 0x87, 0x07}, "xchg qword ptr [rdi], rax");
  EXPECT_TRUE(store.writes_memory && !store.lock);
  EXPECT_EQ(store.value.kind, StoreValue::Kind::after);
  store = decode(decoder, {0x0f, 0x92, 0x00}, "setb byte ptr [rax]");
  EXPECT_EQ(store.destination.width, 1u);
  EXPECT_EQ(store.value.kind, StoreValue::Kind::after);
  store = decode(decoder, {0x83, 0x00, 0x05}, "add dword ptr [rax], 5");
  EXPECT_EQ(store.value.kind, StoreValue::Kind::after);
}

TEST(X86Store, WhatIsNeverProbedIsSaid) {
  const X86StoreDecoder decoder;
  EXPECT_TRUE(decode(decoder, {0x0f, 0xab, 0x00}, "bts dword ptr [rax], eax").unbounded);  // [rax + (eax >> 3)]
  EXPECT_FALSE(decode(decoder, {0x0f, 0xba, 0x28, 0x03}, "bts dword ptr [rax], 3").unbounded);
  EXPECT_TRUE(decode(decoder, {0x0f, 0xae, 0x20}, "xsave ptr [rax]").unbounded);
  auto store = decode(decoder, {0x67, 0x89, 0x00}, "mov dword ptr [eax], eax");
  EXPECT_TRUE(store.destination.address32);
  store = decode(decoder, {0x64, 0x48, 0x89, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00}, "mov qword ptr fs:[0x28], rax");
  EXPECT_EQ(store.destination.segment, MemoryDestination::Segment::fs);
  store = decode(decoder, {0x62, 0xe1, 0xfe, 0x48, 0x7f, 0x07}, "vmovdqu64 zmmword ptr [rdi], zmm16");
  EXPECT_TRUE(store.evex && store.writes_memory);
  EXPECT_EQ(store.destination.width, 64u);
}

TEST(X86Store, ReadsAndAddressesAreNotStores) {
  const X86StoreDecoder decoder;
  EXPECT_FALSE(decode(decoder, {0x85, 0x00}, "test dword ptr [rax], eax").writes_memory);
  EXPECT_FALSE(decode(decoder, {0x48, 0x8d, 0x04, 0x24}, "lea rax, [rsp]").writes_memory);
  EXPECT_FALSE(decode(decoder, {0x0f, 0x1f, 0x40, 0x00}, "nop dword ptr [rax]").writes_memory);
  EXPECT_FALSE(decode(decoder, {0x83, 0x38, 0x05}, "cmp dword ptr [rax], 5").writes_memory);
  EXPECT_FALSE(decode(decoder, {0x0f, 0x18, 0x08}, "prefetcht0 byte ptr [rax]").writes_memory);
  const auto ret = decode(decoder, {0xc3}, "ret");
  EXPECT_EQ(ret.flow, Flow::stop);
  const auto jump = decode(decoder, {0xff, 0xe0}, "jmp rax");
  EXPECT_EQ(jump.flow, Flow::indirect_jump);
  const auto loop = decode(decoder, {0x75, 0xfe}, "jne 0x1000");
  EXPECT_EQ(loop.flow, Flow::conditional_jump);
  EXPECT_EQ(loop.branch_target, kVa);
}

}  // namespace
}  // namespace xref
