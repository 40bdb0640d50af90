// The rules are decided by path-prefix entries, and the mount view by the
// operations at a path's ancestors: both are constant between "critical
// points" (every rule entry, every operation's path, and "/"), so checking
// the view against the rules at each critical point checks every path.
#include "platform/linux/coverage.h"

#include <algorithm>
#include <charconv>

#include "policy/paths.h"
#include "policy/text.h"

namespace stockade::platform {
namespace {

using Source = MountView::Source;

bool within(std::string_view path, std::string_view root) { return policy::isWithin(path, root); }

// The longest entry of one of the rules' lists (sorted) containing a path, or nullptr.
const auto deepest = policy::deepestContaining;

std::string entry(const char* field, const std::string& path) { return std::string(field) + " " + policy::quote(path); }

// What the view shows at a path, for messages.
std::string shown(const MountPlan& plan, const MountView& v) {
  if (v.op) return std::string(mountOpName(v.op->kind)) + " at " + policy::quote(v.op->path);
  switch (plan.root) {
    case MountPlan::Root::kEmpty: return "the empty root";
    case MountPlan::Root::kRebuilt: return "the rebuilt root (the host's top-level entries and /workspace)";
    case MountPlan::Root::kHostBrokered: return "the brokered host root";
    case MountPlan::Root::kHostReadOnly: break;
  }
  return "the read-only host root";
}

// The sandbox's own trees, and where each is mounted.
bool ownTree(const MountView& v) {
  return v.source == Source::kProc || v.source == Source::kDev || v.source == Source::kPrivateTmp;
}
std::string_view ownRoot(const MountView& v) {
  return v.source == Source::kProc ? "/proc" : v.source == Source::kDev ? "/dev" : "/tmp";
}

class Checker {
 public:
  Checker(const DerivedRules& rules, const EnforcementPlan& plan) : rules_(rules), plan_(plan) {}

  Coverage run() {
    filesystem();
    workspace();
    protectedNames();
    readOnlyMounts();
    aliasingMounts();
    landlock();
    network();
    limits();
    return std::move(out_);
  }

 private:
  void uncovered(std::string e, std::string why) { add(out_.uncovered, std::move(e), std::move(why)); }
  void degraded(std::string e, std::string why) { add(out_.degraded, std::move(e), std::move(why)); }
  static void add(std::vector<CoverageGap>& list, std::string e, std::string why) {
    // One gap per entry: the first critical point that shows it.
    if (std::none_of(list.begin(), list.end(), [&](const CoverageGap& g) { return g.entry == e; }))
      list.push_back({std::move(e), std::move(why)});
  }

  std::vector<std::string> criticalPoints() const {
    const auto& fs = rules_.filesystem();
    std::vector<std::string> points = {"/"};
    for (const auto* list : {&fs.denyRead, &fs.allowRead, &fs.allowWrite, &fs.defaultWrite, &fs.denyWrite,
                             &fs.mandatoryDenyWrite})
      points.insert(points.end(), list->begin(), list->end());
    for (const auto& op : plan_.mounts.ops) points.push_back(op.path);
    // Shown at /workspace too, with the view it has here.
    if (plan_.mounts.workspace) points.push_back(plan_.mounts.workspace.host);
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    return points;
  }

  // The workspace at /workspace: the one operation, last of all (so that it
  // copies the final view, which the checks at the workspace's own paths
  // cover), of the workspace the broker maps /workspace to.
  void workspace() {
    const MountPlan& mounts = plan_.mounts;
    if (!mounts.workspace.aliased()) return;
    const auto count = std::count_if(mounts.ops.begin(), mounts.ops.end(),
                                     [](const MountPlan::Op& op) { return op.kind == MountPlan::Op::Kind::kWorkspace; });
    const MountPlan::Op* last = mounts.ops.empty() ? nullptr : &mounts.ops.back();
    if (count != 1 || last->kind != MountPlan::Op::Kind::kWorkspace || last->path != WorkspaceMount::kMountPoint ||
        last->target != mounts.workspace.host)
      uncovered(entry("workspace", mounts.workspace.host),
                "not shown at /workspace by one last mount of its own final view, which is what the write broker "
                "decides names beneath /workspace as");
    else if (mounts.root != MountPlan::Root::kRebuilt && mounts.root != MountPlan::Root::kEmpty)
      uncovered(entry("workspace", mounts.workspace.host),
                "/workspace would need a mount point on the host's root: the root must be the sandbox's own");
  }

  // A read-denied object the host shows under another name too (a second
  // mount of it, or of a directory in it): a mask hides a path, so that name
  // must show nothing of the host either -- unless the policy carves it back
  // by name.
  void otherNames() {
    for (const auto& o : plan_.mounts.deniedElsewhere) {
      if (viewAt(plan_.mounts, o.path).source != Source::kHost || deepest(rules_.filesystem().allowRead, o.path)) continue;
      uncovered(entry("filesystem.denyRead", o.denied),
                "the host shows it (or a directory in it) at " + policy::quote(o.path) +
                    " too, by a second mount, and the sandbox would show that: deny " + policy::quote(o.path) +
                    " as well");
    }
  }

  void filesystem() {
    otherNames();
    const auto& fs = rules_.filesystem();
    const MountPlan& mounts = plan_.mounts;
    for (const auto& p : criticalPoints()) {
      const MountView v = viewAt(mounts, p);
      // Reads: a host object the rules deny must not show. The sandbox's own
      // /proc and /dev are not host objects, but an entry naming a path in
      // them is honoured there too.
      if (const std::string* deny = rules_.readable(p) ? nullptr : deepest(fs.denyRead, p)) {
        const bool named = (v.source == Source::kProc || v.source == Source::kDev) && within(*deny, ownRoot(v));
        if (v.source == Source::kHost || named)
          uncovered(entry("filesystem.denyRead", *deny),
                    (p == *deny ? std::string("nothing hides it") : "the sandbox would show " + policy::quote(p)) +
                        " (" + shown(mounts, v) + ")");
      }
      // Writes. (The entries are looked up only where a write is allowed or
      // possible: this runs for every critical point of every spawn.)
      const bool writable = rules_.writable(p);
      const bool hostInView = v.source == Source::kHost && (v.writable || v.brokered);
      if (!writable && !hostInView) continue;
      const std::string* allow = deepest(fs.allowWrite, p);
      const std::string* own = deepest(fs.defaultWrite, p);
      if (writable) {
        if (const std::string* ro = readOnlyAt(p, v)) {
          const auto [field, e] = writeRule(p);
          uncovered(entry(field, *e), "the host mounts " + policy::quote(*ro) +
                                          " read-only, so the child could not write it either: remount it "
                                          "read-write, or drop it from the policy");
        } else if (own) {  // the sandbox's own objects (/dev/null, TMPDIR): writable, whatever provides them
          if (v.source == Source::kEmpty && v.op) {
            // A mask over the default write path itself (or above it) hides
            // it; one over a read-denied path beneath it (a project in /tmp)
            // is read-only, as denyRead wins.
            if (within(*own, v.op->path))
              uncovered(entry("filesystem.defaultWrite", *own),
                        "hidden by the mask for filesystem.denyRead " + policy::quote(v.op->path) +
                            "; every sandbox needs its default write paths: deny narrower paths instead");
          } else if (!(v.writable || v.brokered) || v.source == Source::kEmpty)
            uncovered(entry("filesystem.defaultWrite", *own),
                      "not writable in the sandbox (" + shown(mounts, v) + ")");
          else if (v.brokered)
            brokeredWrite(p, v, entry("filesystem.defaultWrite", *own));
        } else if (ownTree(v) && !within(*allow, ownRoot(v))) {
          // A tree above the sandbox's own /proc, /dev or /tmp (allowWrite
          // "/"): those stay the sandbox's, as for reads.
        } else if (p == *allow && std::find(mounts.missingWritable.begin(), mounts.missingWritable.end(), p) !=
                                      mounts.missingWritable.end()) {
          uncovered(entry("filesystem.allowWrite", *allow),
                    "does not exist on the host, and no directory the sandbox shows of the host's holds it: the child "
                    "could not create it (" + shown(mounts, v) + "). Create it before the run");
        } else if (v.source != Source::kHost || !v.brokered) {
          uncovered(entry("filesystem.allowWrite", *allow),
                    (p == *allow ? std::string("the host's object is not bound writable")
                                 : "the host's " + policy::quote(p) + " is not writable") +
                        " (" + shown(mounts, v) + ")");
        } else {
          brokeredWrite(p, v, entry("filesystem.allowWrite", *allow));
        }
      } else {  // the host's object, writable in the view or by the broker
        const std::string* denied = deepest(fs.denyWrite, p);
        const std::string* mandatory = deepest(fs.mandatoryDenyWrite, p);
        const bool isMandatory = mandatory && (!denied || mandatory->size() > denied->size());
        const std::string* d = isMandatory ? mandatory : denied;
        const std::string e = d ? entry(isMandatory ? "filesystem.mandatoryDenyWrite" : "filesystem.denyWrite", *d)
                                : entry("filesystem", p);
        if (v.brokered && !v.writable) {
          // Read-only to the child; the broker's decision must refuse it --
          // also where no write rule reaches (a tree brokered to hold one the
          // host does not have yet). (Without a broker nothing writes there.)
          if (const auto verdict = brokerVerdict(p); verdict && verdict->action == policy::WriteVerdict::Action::kPerform)
            uncovered(e, (d && p == *d ? std::string("the write broker would perform writes to it")
                                       : "the write broker would perform writes to " + policy::quote(p)) +
                             " (" + shown(mounts, v) + ")");
        } else if (!allow && !own) {
          uncovered(entry("filesystem", p), "writable in the sandbox though no write rule allows it (" +
                                                shown(mounts, v) + ")");
        } else if (!d) {
          // Write-denied only by being read-denied (the read check above
          // names it) or by a protected name (protectedNames()).
        } else {
          uncovered(e, (p == *d ? std::string("would stay writable") : policy::quote(p) + " would stay writable") +
                           " (" + shown(mounts, v) + ")");
        }
      }
    }
    for (const auto& p : mounts.linkedDenyWrite) {
      const char* field = std::find(fs.denyWrite.begin(), fs.denyWrite.end(), p) != fs.denyWrite.end()
                              ? "filesystem.denyWrite"
                              : "filesystem.mandatoryDenyWrite";
      degraded(entry(field, p), "has other hard links; the write broker refuses writes by this name only, the file "
                                "stays writable through the others");
    }
  }

  // What the broker would answer a write to `p` (a non-directory, as the
  // rules read it); nullopt: no broker.
  std::optional<policy::WriteVerdict> brokerVerdict(const std::string& p) const {
    if (!plan_.broker) return std::nullopt;
    return plan_.broker->decide({{policy::Effect::kModify, p, policy::ObjectKind::kOther}});
  }

  // A writable path whose view is a brokered tree: the broker must be
  // installed, serve that tree, and perform the write there.
  void brokeredWrite(const std::string& p, const MountView& v, std::string e) {
    const std::string tree = v.op ? v.op->path : "/";
    if (!plan_.broker) {
      uncovered(std::move(e), "bound read-only for the write broker (" + shown(plan_.mounts, v) +
                                  "), but no write broker can run on this kernel (SECCOMP_ADDFD_FLAG_SEND, Linux "
                                  "5.14): every write there would fail");
      return;
    }
    const auto& trees = plan_.broker->trees();
    if (std::find(trees.begin(), trees.end(), tree) == trees.end()) {
      uncovered(std::move(e), "the write broker does not serve " + shown(plan_.mounts, v));
      return;
    }
    const policy::WriteVerdict verdict = *brokerVerdict(p);
    if (verdict.action == policy::WriteVerdict::Action::kPerform && trees[verdict.tree] == tree) return;
    uncovered(std::move(e),
              "the write broker would " +
                  (verdict.action == policy::WriteVerdict::Action::kPerform
                       ? "write " + policy::quote(p) + " in " + policy::quote(trees[verdict.tree]) +
                             ", not where the sandbox shows it (" + shown(plan_.mounts, v) + ")"
                   : verdict.action == policy::WriteVerdict::Action::kRefuse
                       ? "refuse writes to " + policy::quote(p) + " (" + verdict.rule + ")"
                       : "leave writes to " + policy::quote(p) + " to the kernel, which refuses them (" +
                             shown(plan_.mounts, v) + ")"));
  }

  // Protected names hold at any depth of every brokered tree, whenever they
  // appear: the broker's decision must refuse each, in each tree. (Nothing
  // else can write a brokered tree; the sandbox's own trees are not the
  // host's.)
  void protectedNames() {
    if (!plan_.broker) return;  // nothing brokered is writable
    for (const auto& tree : plan_.broker->trees())
      for (const auto& name : rules_.filesystem().protectedNames) {
        const std::string p = (tree == "/" ? "" : tree) + "/" + instance(name.pattern);
        const policy::WriteVerdict v =
            plan_.broker->decide({{policy::Effect::kCreate, p, policy::ObjectKind::kOther}});
        if (v.action == policy::WriteVerdict::Action::kPerform)
          uncovered("filesystem.protectedNames " + policy::quote(name.text()),
                    "the write broker would create " + policy::quote(p) + " in the brokered tree " + policy::quote(tree));
      }
  }

  // A path the pattern matches: "*" one component, "**" none.
  static std::string instance(std::string_view pattern) {
    std::string out;
    for (std::size_t at = 0; at <= pattern.size();) {
      const std::size_t end = std::min(pattern.find('/', at), pattern.size());
      const std::string_view part = pattern.substr(at, end - at);
      if (part != "**") out += (out.empty() ? "" : "/") + std::string(part == "*" ? "x" : part);
      at = end + 1;
    }
    return out;
  }

  // The read-only host mount that holds `p` where the view shows the host's
  // object bound writable, or nullptr.
  const std::string* readOnlyAt(std::string_view p, const MountView& v) const {
    if (v.source != Source::kHost || !(v.writable || v.brokered)) return nullptr;
    const std::string_view bound = v.op ? std::string_view(v.op->path) : "/";
    const std::string* best = nullptr;
    for (const auto& r : plan_.mounts.readOnlyHost)
      if (within(p, r) && within(r, bound) && (!best || r.size() > best->size())) best = &r;
    return best;
  }

  // The deepest write rule that makes writable `p`: its field and entry.
  std::pair<const char*, const std::string*> writeRule(std::string_view p) const {
    const std::string* allow = deepest(rules_.filesystem().allowWrite, p);
    const std::string* own = deepest(rules_.filesystem().defaultWrite, p);
    if (own && (!allow || own->size() >= allow->size())) return {"filesystem.defaultWrite", own};
    return {"filesystem.allowWrite", allow};
  }

  // A read-only mount beneath a writable entry: writes there fail with EROFS
  // though the entry is writable elsewhere.
  void readOnlyMounts() {
    for (const auto& r : plan_.mounts.readOnlyHost) {
      if (!rules_.writable(r) || readOnlyAt(r, viewAt(plan_.mounts, r)) != &r) continue;
      const auto [field, e] = writeRule(r);
      if (within(*e, r)) continue;  // the entry's own place is read-only: uncovered (filesystem())
      degraded(entry(field, *e), "the host mounts " + policy::quote(r) + " read-only inside it: writes there fail with EROFS");
    }
  }

  // A brokered tree on a filesystem that gives entries second names of their
  // own: `BASHRC~1` opens `.bashrc` there, and no decision by name sees it.
  void aliasingMounts() {
    for (const auto& a : plan_.mounts.aliasingHost)
      for (const auto& t : plan_.mounts.brokeredTrees()) {
        if (!within(t, a.path) && !within(a.path, t)) continue;
        const auto [field, e] = writeRule(t);
        uncovered(entry(field, *e), "the host mounts " + policy::quote(a.path) + " as " + a.fsType +
                                        ", whose entries also answer to a short name of their own (8.3: BASHRC~1 is "
                                        ".bashrc), which the write broker cannot decide by: keep the writable tree "
                                        "on another filesystem");
        break;
      }
  }

  // Landlock grants the child write rights of its own exactly beneath the
  // writable paths the sandbox shows as its own objects (and its own /tmp,
  // /dev/shm, /dev/pts), and none in a brokered tree: there the kernel must
  // refuse every write the broker does not perform.
  void landlock() {
    const LandlockPlan& l = plan_.landlock;
    if (l.abi <= 0) return;  // a kernel degradation, reported by the probe
    const auto& fs = rules_.filesystem();
    for (const auto* list : {&fs.allowWrite, &fs.defaultWrite}) {
      const char* field = list == &fs.allowWrite ? "filesystem.allowWrite" : "filesystem.defaultWrite";
      for (const auto& p : *list) {
        if (!rules_.writable(p) || p == "/dev/stdin" || p == "/dev/stdout" || p == "/dev/stderr") continue;  // fd links
        const MountView v = viewAt(plan_.mounts, p);
        if (!v.writable || v.source == Source::kHost) continue;  // brokered, or not writable (filesystem() says so)
        if (std::none_of(l.writable.begin(), l.writable.end(), [&](const std::string& w) { return within(p, w); }))
          uncovered(entry(field, p), "Landlock grants no write rights there");
      }
    }
    for (const auto& w : l.writable) {
      const MountView v = viewAt(plan_.mounts, w);
      const bool own = (w == "/tmp" && v.source == Source::kPrivateTmp) || w == "/dev/shm" || w == "/dev/pts";
      if (v.source == Source::kHost)
        uncovered(entry("landlock", w), "Landlock would grant the child write rights of its own in the host's " +
                                            policy::quote(w) + " (" + shown(plan_.mounts, v) +
                                            "): the kernel would not refuse a write the broker did not decide");
      else if (!own && !rules_.writable(w))
        uncovered(entry("landlock", w), "Landlock would grant writes beneath it, which the rules do not allow");
    }
  }

  void network() {
    const auto& net = rules_.network();
    const LandlockPlan& l = plan_.landlock;
    if (!net.allowedDomains.empty()) {
      if (!plan_.proxyPort)
        uncovered("network.allowedDomains", "no proxy listener is planned, so no allowed domain would be reachable");
      else if (l.abi >= 4 && !net.allowLocalBinding && l.connectPort != plan_.proxyPort)
        uncovered("network.allowedDomains", "Landlock would not restrict TCP connect to the proxy's port");
    }
    // deniedDomains: decided by the proxy on every connection; without allowed
    // domains nothing outside the sandbox's own loopback exists.
    const char* unix = net.allowAllUnixSockets ? "network.allowAllUnixSockets" : "network.allowUnixSockets";
    if (!net.unixSocketsAllowed() && plan_.seccomp.allowUnixSockets)
      uncovered(unix, "none are allowed, yet the seccomp filter would allow unix sockets");
    if (net.unixSocketsAllowed() && !plan_.seccomp.allowUnixSockets)
      uncovered(unix, "the seccomp filter would refuse every unix socket");
    // A list of socket paths asks for less than socket(AF_UNIX) as a whole;
    // allowAllUnixSockets asks for exactly that.
    if (!net.allowUnixSockets.empty() && !net.allowAllUnixSockets && plan_.seccomp.allowUnixSockets)
      degraded("network.allowUnixSockets", "unix sockets are allowed as a whole; every socket file visible in the "
                                           "sandbox can be connected to, not only the listed ones");
    if (net.allowLocalBinding != l.allowTcpBind)
      uncovered("network.allowLocalBinding", net.allowLocalBinding
                                                 ? "Landlock would refuse binding and connecting on the sandbox's loopback"
                                                 : "Landlock would allow binding TCP ports");
  }

  void limits() {
    const Limits& want = rules_.limits();
    const RlimitPlan& have = plan_.limits;
    if (want.fileSizeBytes != have.fileSizeBytes)
      uncovered("limits.fileSizeBytes", "RLIMIT_FSIZE would be " + std::to_string(have.fileSizeBytes));
    if (want.fileSizeBytes != 0 && !plan_.seccomp.limitFileSize)
      uncovered("limits.fileSizeBytes", "fallocate() would not be checked against it");
    struct Field {
      const char* name;
      std::uint64_t wanted;
      LimitMechanism mechanism;
      std::uint64_t cgroup;  // the value the sandbox cgroup is made with
      std::optional<std::uint64_t> rlimit;  // the fallback planned; nullopt: none exists
      const char* how;
    };
    for (const auto& f : {Field{"limits.pids", want.pids, plan_.pids, plan_.cgroup.pids, std::nullopt, ""},
                          Field{"limits.memoryBytes", want.memoryBytes, plan_.memory, plan_.cgroup.memoryBytes,
                                have.addressSpace, "RLIMIT_AS"},
                          Field{"limits.cpuSeconds", want.cpuSeconds, plan_.cpu, plan_.cgroup.cpuSeconds,
                                have.cpuSeconds, "RLIMIT_CPU"}}) {
      if (f.wanted == 0) continue;
      switch (f.mechanism) {
        case LimitMechanism::kCgroup2:
        case LimitMechanism::kCgroupV1:
          if (f.cgroup != f.wanted)
            uncovered(f.name, f.cgroup == 0 ? std::string("the sandbox cgroup would not limit it")
                                            : "the sandbox cgroup would be limited to " + std::to_string(f.cgroup));
          break;
        case LimitMechanism::kRlimit:
          if (!f.rlimit || *f.rlimit != f.wanted)
            uncovered(f.name, f.rlimit ? std::string("neither a cgroup nor ") + f.how + " would enforce it"
                                       : std::string("no cgroup would enforce it, and no rlimit can"));
          else if (!reported(f.name))
            uncovered(f.name, std::string("enforced by ") + f.how + " only, and no degradation says so");
          break;
        case LimitMechanism::kNone:
          if (!reported(f.name)) uncovered(f.name, "nothing would enforce it, and no degradation says so");
          break;
      }
    }
    mountSizes();
    userCounters();
  }

  // The private /tmp and /dev/shm have a size, within limits.memoryBytes
  // (their pages are not address space: RLIMIT_AS cannot hold them).
  void mountSizes() {
    const MountPlan& mounts = plan_.mounts;
    const std::uint64_t memory = rules_.limits().memoryBytes;
    const std::optional<std::uint64_t> size = optionValue(mounts.tmpOptions, "size");
    const char* field = memory != 0 ? "limits.memoryBytes" : "tmpfs \"/tmp\", \"/dev/shm\"";
    if (!size || *size == 0)
      uncovered(field, "the sandbox's /tmp and /dev/shm would have no size (" + policy::quote(mounts.tmpOptions) +
                           "): the host's memory would be reachable");
    else if (memory != 0 && *size > memory)
      uncovered(field, "the sandbox's /tmp and /dev/shm would each hold " + std::to_string(*size) + " bytes");
  }

  // The sandbox's shares of the host user's per-user counters (user_counters.h)
  // are the ones planned.
  void userCounters() {
    const UserCounterCaps& caps = plan_.mounts.userCounters;
    const RlimitPlan& have = plan_.limits;
    struct Share {
      const char* name;
      std::uint64_t planned, applied;
    };
    for (const auto& s : {Share{"RLIMIT_NPROC", caps.processes, have.processes},
                          Share{"RLIMIT_SIGPENDING", caps.pendingSignals, have.pendingSignals},
                          Share{"RLIMIT_MSGQUEUE", caps.messageQueueBytes, have.messageQueueBytes},
                          Share{"RLIMIT_MEMLOCK", caps.lockedBytes, have.lockedBytes}})
      if (s.planned != s.applied)
        uncovered(std::string("per-user counters ") + s.name,
                  "would be " + std::to_string(s.applied) + ", not the sandbox's share " + std::to_string(s.planned));
    const std::optional<std::uint64_t> ptys = optionValue(plan_.mounts.ptsOptions, "max");
    if (caps.ptys == 0 || ptys != caps.ptys)
      uncovered("per-user counters kernel.pty.max", "the sandbox's /dev/pts would not be capped at its share (" +
                                                        policy::quote(plan_.mounts.ptsOptions) + ")");
  }

  bool reported(std::string_view field) const {
    return std::any_of(plan_.reported.begin(), plan_.reported.end(), [&](const std::string& d) {
      return d.size() > field.size() && d.starts_with(field) && d[field.size()] == ':';
    });
  }

  // The decimal value of `key=` in comma-separated mount data.
  static std::optional<std::uint64_t> optionValue(std::string_view options, std::string_view key) {
    for (std::size_t at = 0; at <= options.size();) {
      const std::size_t end = std::min(options.find(',', at), options.size());
      const std::string_view option = options.substr(at, end - at);
      if (option.size() > key.size() && option.starts_with(key) && option[key.size()] == '=') {
        std::uint64_t value = 0;
        const auto* first = option.data() + key.size() + 1;
        const auto* last = option.data() + option.size();
        const auto [ptr, ec] = std::from_chars(first, last, value);
        if (ec != std::errc() || ptr != last) return std::nullopt;
        return value;
      }
      at = end + 1;
    }
    return std::nullopt;
  }

  const DerivedRules& rules_;
  const EnforcementPlan& plan_;
  Coverage out_;
};

}  // namespace

Coverage checkCoverage(const DerivedRules& rules, const EnforcementPlan& plan) { return Checker(rules, plan).run(); }

}  // namespace stockade::platform
