// The denial table compiled with libseccomp. Runs at build time
// (tools/seccomp_filter_gen.cc) and in tests, never on the spawn path.
#include "platform/linux/seccomp_compile.h"

#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>

#include "platform/linux/kernel_abi.h"
#include "platform/unique_fd.h"

namespace stockade::platform {
namespace {

struct CtxDeleter {
  void operator()(void* ctx) const { seccomp_release(static_cast<scmp_filter_ctx>(ctx)); }
};

std::uint32_t actionOf(const SeccompRule& rule) {
  return rule.viaSupervisor ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO(static_cast<std::uint16_t>(rule.error));
}

// SECCOMP_RET_TRACE data marking where a rule's allow-list goes (stockade
// has no tracer: no other TRACE action is in the filter).
constexpr std::uint32_t kExceptMarker = 0x5e00;

// Rules with an allow-list (SeccompRule::except) were compiled with a marker
// action; each marker's `ret` becomes a jump to a block appended for its rule:
//
//   ld  args[exceptArg] (low 32 bits)
//   jeq allowed[0] -> allow      one comparison per allowed value
//   ...
//   ret <the rule's action>
//   allow: ret ALLOW
//
// where deny rules for the list's complement took about ten times as many
// instructions (the terminal ioctls: 385 of the filter's 905), and the kernel
// JIT-compiles every instruction at each spawn.
std::optional<std::string> spliceExceptions(std::vector<sock_filter>& program,
                                            const std::vector<const SeccompRule*>& rules) {
  std::vector<std::size_t> blocks;
  for (const SeccompRule* rule : rules) {
    const std::size_t n = rule->except.size();
    if (n > 254) return std::string(rule->syscall) + ": an allow-list of " + std::to_string(n) + " values, more than one block's jumps reach";
    if (rule->exceptArg > 5) return std::string(rule->syscall) + ": exceptArg " + std::to_string(rule->exceptArg);
    blocks.push_back(program.size());
    program.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                               static_cast<std::uint32_t>(offsetof(seccomp_data, args) + 8 * rule->exceptArg)));
    for (std::size_t k = 0; k < n; ++k)  // to `allow`, two past the last comparison
      program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, rule->except[k], static_cast<std::uint8_t>(n - k), 0));
    program.push_back(BPF_STMT(BPF_RET | BPF_K, actionOf(*rule)));
    program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  }
  std::vector<bool> reached(rules.size());
  for (std::size_t pc = 0; pc < program.size(); ++pc) {
    sock_filter& i = program[pc];
    if (i.code != (BPF_RET | BPF_K) || (i.k & SECCOMP_RET_ACTION_FULL) != SECCOMP_RET_TRACE) continue;
    const std::uint32_t marker = (i.k & SECCOMP_RET_DATA) - kExceptMarker;
    if ((i.k & SECCOMP_RET_DATA) < kExceptMarker || marker >= rules.size())
      return "the compiled filter returns SECCOMP_RET_TRACE with data " + std::to_string(i.k & SECCOMP_RET_DATA) +
             ", which is no rule's marker";
    i = BPF_JUMP(BPF_JMP | BPF_JA, static_cast<std::uint32_t>(blocks[marker] - (pc + 1)), 0, 0);
    reached[marker] = true;
  }
  for (std::size_t r = 0; r < rules.size(); ++r)
    if (!reached[r]) return std::string(rules[r]->syscall) + ": libseccomp left out the marker of an allow-list rule";
  return std::nullopt;
}

}  // namespace

int resolveSyscall(const char* name) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr != __NR_SCMP_ERROR) return nr;
  // libseccomp 2.5.4 (Debian 12) predates some calls; their x86_64 numbers.
  struct Known {
    const char* name;
    int nr;
  };
  for (Known k : {Known{"fchmodat2", linux_abi::kNrFchmodat2}, Known{"setxattrat", linux_abi::kNrSetxattrat},
                  Known{"removexattrat", linux_abi::kNrRemovexattrat}})
    if (std::strcmp(name, k.name) == 0) return k.nr;
  return -1;
}

std::variant<std::vector<sock_filter>, std::string> compileSeccompFilter(const SeccompOptions& options) {
  std::unique_ptr<void, CtxDeleter> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return std::string("seccomp_init(SCMP_ACT_ALLOW) failed");
  auto check = [](int rc, const std::string& call) -> std::optional<std::string> {
    if (rc == 0) return std::nullopt;
    return call + " failed: " + (strerrorname_np(-rc) ? strerrorname_np(-rc) : std::to_string(-rc).c_str());
  };
  // Any other ABI (i386 via int 0x80, x32) hits the bad-arch action.
  if (auto e = check(seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(EPERM)),
                     "seccomp_attr_set(SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(EPERM))"))
    return *e;
  // A binary search over the syscall numbers instead of one compare per
  // denied call in a row: on install, the kernel runs the filter once for
  // every syscall number to find the always-allowed ones (its action cache),
  // and the linear chain made that ~40 us of every spawn. Same decisions.
  if (auto e = check(seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2),
                     "seccomp_attr_set(SCMP_FLTATR_CTL_OPTIMIZE, 2)"))
    return *e;
  const auto rules = seccompRules(options);
  const auto shown = seccompDenials(options);  // the same rows, with their conditions spelt out
  std::vector<const SeccompRule*> withExceptions;  // their markers, in order (spliceExceptions)
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const SeccompRule& d = rules[i];
    int nr = resolveSyscall(d.syscall);
    if (nr < 0) return std::string("seccomp_syscall_resolve_name(\"") + d.syscall + "\") failed";
    // EPERM rows go to the supervisor, which answers EPERM and audits (seccomp_notify.h).
    std::uint32_t action = actionOf(d);
    if (!d.except.empty()) {  // a marker, replaced by a jump to the rule's allow-list below
      action = SCMP_ACT_TRACE(static_cast<std::uint16_t>(kExceptMarker + withExceptions.size()));
      withExceptions.push_back(&d);
    }
    std::vector<scmp_arg_cmp> args;
    for (const SeccompArg& a : d.args)
      args.push_back(a.op == SeccompArg::Op::kGreaterOrEqual ? SCMP_CMP64(a.index, SCMP_CMP_GE, a.value)
                                                             : SCMP_CMP64(a.index, SCMP_CMP_MASKED_EQ, a.mask, a.value));
    int rc = seccomp_rule_add_array(ctx.get(), action, nr, static_cast<unsigned>(args.size()), args.data());
    if (auto e = check(rc, "seccomp_rule_add(" + shown[i].syscall + ", " + shown[i].condition + ")")) return *e;
  }
  UniqueFd memfd(::memfd_create("stockade-seccomp", MFD_CLOEXEC));
  if (!memfd) return std::string("memfd_create(\"stockade-seccomp\", MFD_CLOEXEC) failed: ") + strerrorname_np(errno);
  if (auto e = check(seccomp_export_bpf(ctx.get(), memfd.get()), "seccomp_export_bpf(memfd)")) return *e;
  off_t size = ::lseek(memfd.get(), 0, SEEK_END);
  if (size <= 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0)
    return "seccomp_export_bpf produced " + std::to_string(size) + " bytes, not whole instructions";
  std::vector<sock_filter> program(static_cast<std::size_t>(size) / sizeof(sock_filter));
  if (::pread(memfd.get(), program.data(), static_cast<std::size_t>(size), 0) != size)
    return std::string("pread(memfd, ") + std::to_string(size) + ") failed: " + strerrorname_np(errno);
  if (auto e = spliceExceptions(program, withExceptions)) return *e;
  if (program.size() > BPF_MAXINSNS) return "the filter has " + std::to_string(program.size()) + " instructions, more than BPF_MAXINSNS";
  return program;
}

}  // namespace stockade::platform
