// The denial table compiled with libseccomp. Runs at build time
// (tools/seccomp_filter_gen.cc) and in tests, never on the spawn path.
#include "platform/linux/seccomp_compile.h"

#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

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
constexpr std::uint32_t kAllowListMarker = 0x5e00;

// Rules with an allow-list (SeccompRule::unless) were compiled with a marker
// action; each marker's `ret` becomes a jump to a block appended for its
// rule, which walks the allowed combinations as a tree of 32-bit words
// (the words every combination shares first: the high halves, mostly 0):
//
//   ld  word; [and mask]         one load per tree node
//   jeq value -> next node       one comparison per allowed value there
//   ...
//   ja  deny
//   ...
//   deny:  ret <the rule's action>
//   allow: ret ALLOW
//
// Deny rules for the lists' complements took several times as many
// instructions (the terminal ioctls: 385 of the filter's 905; socket and
// socketpair: 291), and the kernel JIT-compiles every one at each spawn.
class AllowListBlock {
 public:
  AllowListBlock(std::vector<sock_filter>& program, const SeccompRule& rule) : program_(program), rule_(rule) {}

  std::optional<std::string> emit() {
    std::vector<Path> paths;
    for (const auto& allowed : rule_.unless) {
      Path path;
      for (const SeccompArg& a : allowed) {
        if (a.op != SeccompArg::Op::kMaskedEquals || a.index > 5)
          return std::string(rule_.syscall) + ": an allow-list compares only (arg & mask) == value, arg0..arg5";
        const std::uint32_t base = static_cast<std::uint32_t>(offsetof(seccomp_data, args) + 8 * a.index);
        for (unsigned high : {1u, 0u}) {
          const auto mask = static_cast<std::uint32_t>(a.mask >> (32 * high));
          if (mask != 0) path.push_back({base + 4 * high, mask, static_cast<std::uint32_t>(a.value >> (32 * high)) & mask});
        }
      }
      std::stable_sort(path.begin(), path.end(), [](const Word& x, const Word& y) {
        return (x.offset % 8 == 4) > (y.offset % 8 == 4);  // high halves first: they are shared
      });
      paths.push_back(std::move(path));
    }
    std::vector<const Path*> all;
    for (const auto& p : paths) all.push_back(&p);
    node(all, 0);
    const std::size_t deny = program_.size();
    program_.push_back(BPF_STMT(BPF_RET | BPF_K, actionOf(rule_)));
    program_.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    for (const Fixup& f : fixups_) {
      const std::size_t target = f.to == kDeny ? deny : f.to == kAllow ? deny + 1 : labels_[f.to];
      const std::size_t distance = target - (f.at + 1);
      sock_filter& i = program_[f.at];
      if (BPF_OP(i.code) == BPF_JA) {
        i.k = static_cast<std::uint32_t>(distance);
      } else if (distance > 255) {
        return std::string(rule_.syscall) + ": its allow-list block is too large for a conditional jump";
      } else {
        i.jt = static_cast<std::uint8_t>(distance);
      }
    }
    return std::nullopt;
  }

 private:
  struct Word {
    std::uint32_t offset, mask, value;
  };
  using Path = std::vector<Word>;
  static constexpr std::size_t kDeny = ~std::size_t{0}, kAllow = kDeny - 1;
  struct Fixup {
    std::size_t at, to;  // instruction, label (or kDeny, kAllow)
  };

  // The combinations `paths`, whose first `depth` words matched.
  void node(const std::vector<const Path*>& paths, std::size_t depth) {
    for (const Path* p : paths)
      if (p->size() == depth) return jump(kAllow);  // one of them matched in full
    std::vector<std::pair<std::uint32_t, std::uint32_t>> loads;  // (offset, mask), in order of appearance
    for (const Path* p : paths)
      if (std::find(loads.begin(), loads.end(), std::pair((*p)[depth].offset, (*p)[depth].mask)) == loads.end())
        loads.emplace_back((*p)[depth].offset, (*p)[depth].mask);
    for (const auto& [offset, mask] : loads) {
      program_.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset));
      if (mask != 0xffffffffu) program_.push_back(BPF_STMT(BPF_ALU | BPF_AND | BPF_K, mask));
      std::vector<std::pair<std::uint32_t, std::vector<const Path*>>> children;  // by value
      for (const Path* p : paths) {
        const Word& w = (*p)[depth];
        if (w.offset != offset || w.mask != mask) continue;
        auto c = std::find_if(children.begin(), children.end(), [&](const auto& known) { return known.first == w.value; });
        if (c == children.end()) children.push_back({w.value, {p}});
        else c->second.push_back(p);
      }
      std::vector<std::size_t> childLabels;
      for (const auto& [value, sub] : children) {
        const bool leaf = std::any_of(sub.begin(), sub.end(), [&](const Path* p) { return p->size() == depth + 1; });
        childLabels.push_back(leaf ? kAllow : newLabel());
        fixups_.push_back({program_.size(), childLabels.back()});
        program_.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 0, 0));
      }
      const std::size_t otherwise = newLabel();  // the next load of this node, or deny
      jump(otherwise);
      for (std::size_t c = 0; c < children.size(); ++c) {
        if (childLabels[c] == kAllow) continue;
        labels_[childLabels[c]] = program_.size();
        node(children[c].second, depth + 1);
      }
      labels_[otherwise] = program_.size();
    }
    jump(kDeny);
  }

  std::size_t newLabel() {
    labels_.push_back(0);
    return labels_.size() - 1;
  }
  void jump(std::size_t to) {
    fixups_.push_back({program_.size(), to});
    program_.push_back(BPF_STMT(BPF_JMP | BPF_JA, 0));
  }

  std::vector<sock_filter>& program_;
  const SeccompRule& rule_;
  std::vector<std::size_t> labels_;
  std::vector<Fixup> fixups_;
};

std::optional<std::string> spliceAllowLists(std::vector<sock_filter>& program,
                                            const std::vector<const SeccompRule*>& rules) {
  std::vector<std::size_t> blocks;
  for (const SeccompRule* rule : rules) {
    blocks.push_back(program.size());
    if (auto e = AllowListBlock(program, *rule).emit()) return e;
  }
  std::vector<bool> reached(rules.size());
  for (std::size_t pc = 0; pc < program.size(); ++pc) {
    sock_filter& i = program[pc];
    if (i.code != (BPF_RET | BPF_K) || (i.k & SECCOMP_RET_ACTION_FULL) != SECCOMP_RET_TRACE) continue;
    const std::uint32_t data = i.k & SECCOMP_RET_DATA;
    if (data < kAllowListMarker || data - kAllowListMarker >= rules.size())
      return "the compiled filter returns SECCOMP_RET_TRACE with data " + std::to_string(data) + ", which is no rule's marker";
    i = BPF_JUMP(BPF_JMP | BPF_JA, static_cast<std::uint32_t>(blocks[data - kAllowListMarker] - (pc + 1)), 0, 0);
    reached[data - kAllowListMarker] = true;
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
  std::vector<const SeccompRule*> withAllowLists;  // their markers, in order (spliceAllowLists)
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const SeccompRule& d = rules[i];
    int nr = resolveSyscall(d.syscall);
    if (nr < 0) return std::string("seccomp_syscall_resolve_name(\"") + d.syscall + "\") failed";
    // EPERM rows go to the supervisor, which answers EPERM and audits (seccomp_notify.h).
    std::uint32_t action = actionOf(d);
    if (!d.unless.empty()) {  // a marker, replaced by a jump to the rule's allow-list below
      action = SCMP_ACT_TRACE(static_cast<std::uint16_t>(kAllowListMarker + withAllowLists.size()));
      withAllowLists.push_back(&d);
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
  if (auto e = spliceAllowLists(program, withAllowLists)) return *e;
  if (program.size() > BPF_MAXINSNS) return "the filter has " + std::to_string(program.size()) + " instructions, more than BPF_MAXINSNS";
  return program;
}

}  // namespace stockade::platform
