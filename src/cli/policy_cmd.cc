// `stockade policy check|derive|narrower|diff`: thin wrappers over the
// policy engine. Exit codes: 0 ok, 2 invalid input, 3 candidate widens.
// With --json every outcome, errors included, is one JSON object on stdout.
#include <nlohmann/json.hpp>

#include "platform/linux/namespaces.h"
#include "platform/linux/sandbox_plan.h"
#include "src/audit/event.h"
#include "src/child_env.h"
#include "src/cli/args.h"
#include "src/cli/commands.h"
#include "src/cli/help.h"
#include "src/cli/output.h"
#include "src/cli/policy_file.h"
#include "stockade/rules.h"

namespace stockade::cli {
namespace {

constexpr int kExitWidens = 3;
constexpr std::string_view kPrefix = "stockade policy: ";

using nlohmann::json;

// A problem with the input: a file that cannot be used, or a bad flag.
struct Failure {
  std::string file;  // empty: not about a file
  PolicyError error;
};

json problemsJson(const PolicyError& e) {
  json out = json::array();
  out.push_back({{"path", e.path}, {"message", e.message}});
  for (const auto& m : e.more) out.push_back({{"path", m.path}, {"message", m.message}});
  return out;
}

// Where each field's value came from: "file", or "default" (policy/default.json)
// for a field the file left out.
json sourcesJson(const SandboxPolicy& policy) {
  json out = json::object();
  for (PolicyField f : kAllPolicyFields)
    out[std::string(policyFieldPath(f))] = policy.source(f) == ValueSource::kGiven ? "file" : "default";
  return out;
}

class PolicyCommand {
 public:
  PolicyCommand(std::string sub, const ParsedArgs& args) : sub_(std::move(sub)), args_(args), json_(args.has("json")) {}

  int run() {
    try {
      const auto& files = args_.positionals;
      DeriveContext ctx = context();
      if (sub_ == "check") return check(files[0], ctx);
      if (sub_ == "derive") return deriveCommand(files[0], ctx);
      if (sub_ == "narrower") return narrower(files[0], files[1], ctx);
      printOut(diff(rules(files[0], ctx), rules(files[1], ctx)).toJson() + "\n");
      return kExitOk;
    } catch (const Failure& f) {
      if (json_) {
        json out = {{"valid", false}, {"problems", problemsJson(f.error)}};
        if (!f.file.empty()) out["file"] = f.file;
        printOut(out.dump(2) + "\n");
      } else {
        printErrLines(std::string(kPrefix) + sub_ + ": ",
                      f.file.empty() ? f.error.text() : PolicyFileError{f.file, f.error}.lines());
      }
      return kExitUsage;
    }
  }

 private:
  DeriveContext context() const {
    DeriveContext ctx = currentContext();
    ctx.cwdName = "--cwd";
    if (auto cwd = args_.value("cwd")) {
      if (cwd->empty() || cwd->front() != '/')
        throw Failure{"", {"--cwd", "\"" + *cwd + "\" must be an absolute path", {}}};
      ctx.cwd = *cwd;
    }
    return ctx;
  }

  SandboxPolicy load(const std::string& path) {
    auto loaded = loadPolicyFile(path);
    if (auto* err = std::get_if<PolicyFileError>(&loaded)) throw Failure{err->file, std::move(err->error)};
    auto policy = std::get<SandboxPolicy>(std::move(loaded));
    if (!json_)
      for (const auto& line : policyNoteLines(path, policy)) printErr("stockade: " + line + "\n");
    return policy;
  }

  DerivedRules rules(const std::string& path, const SandboxPolicy& policy, const DeriveContext& ctx) {
    auto derived = derive(policy, ctx);
    if (auto* err = std::get_if<PolicyError>(&derived)) throw Failure{path, std::move(*err)};
    return std::get<DerivedRules>(std::move(derived));
  }
  DerivedRules rules(const std::string& path, const DeriveContext& ctx) { return rules(path, load(path), ctx); }

  // Parses and derives, as `stockade run` would: a file that passes check
  // does not fail at run for what it says.
  int check(const std::string& path, const DeriveContext& ctx) {
    SandboxPolicy policy = load(path);
    DerivedRules derived = rules(path, policy, ctx);
    DeriveContext asRun = ctx;
    asRun.tmpdir = "/tmp";  // run's: the sandbox's private TMPDIR is writable
    refuseUncovered(path, rules(path, policy, asRun));
    if (json_) {
      printOut(json{{"file", path}, {"valid", true}, {"problems", json::array()}, {"notes", audit::policyNotes(policy)},
                    {"fingerprint", derived.fingerprint()}}
                   .dump(2) +
               "\n");
    } else {
      printOut(path + ": valid\n");
    }
    return kExitOk;
  }

  // The rules `run` would refuse here: the enforcement plan on this machine
  // (this kernel, these mounts, what the host has) must cover every entry,
  // as the coverage check before each spawn requires. Each gap names the
  // field and value ("filesystem.allowWrite \"/srv/out\": ...").
  // (Inside a sandbox, where run refuses to nest, the rules alone are checked.)
  static void refuseUncovered(const std::string& path, const DerivedRules& derived) {
    if (platform::insideStockadeSandbox()) return;
    std::optional<std::uint16_t> proxyPort;
    if (!derived.network().allowedDomains.empty()) proxyPort = kSandboxProxyPort;
    const platform::SandboxPlan plan = platform::planSandbox(derived, proxyPort);
    PolicyError error;
    for (const auto& gap : plan.uncovered) {
      const std::size_t space = gap.entry.find(' ');
      PolicyError one{gap.entry.substr(0, space),
                      (space == std::string::npos ? "" : gap.entry.substr(space + 1) + ": ") + gap.reason +
                          " (stockade run refuses this policy on this machine)",
                      {}};
      if (error.path.empty() && error.message.empty()) error = std::move(one);
      else error.more.push_back(std::move(one));
    }
    if (!plan.uncovered.empty()) throw Failure{path, std::move(error)};
  }

  int deriveCommand(const std::string& path, const DeriveContext& ctx) {
    SandboxPolicy policy = load(path);
    DerivedRules derived = rules(path, policy, ctx);
    json out = {{"fingerprint", derived.fingerprint()}, {"rules", json::parse(derived.toJson())},
                {"sources", sourcesJson(policy)}};
    printOut(out.dump(2) + "\n");
    return kExitOk;
  }

  int narrower(const std::string& basePath, const std::string& candidatePath, const DeriveContext& ctx) {
    DerivedRules base = rules(basePath, ctx);
    DerivedRules candidate = rules(candidatePath, ctx);
    auto w = narrowing(base, candidate);
    if (json_) {
      json out = {{"base", basePath}, {"candidate", candidatePath}, {"narrower", !w.has_value()}};
      out["widening"] = w ? json{{"axis", w->axis}, {"entry", w->entry}, {"message", w->message}} : json(nullptr);
      printOut(out.dump(2) + "\n");
    } else if (w) {
      printErr(std::string(kPrefix) + "narrower: " + candidatePath + " widens " + basePath + ": " + w->message + "\n");
    } else {
      printOut(candidatePath + " is a narrowing of " + basePath + "\n");
    }
    return w ? kExitWidens : kExitOk;
  }

  std::string sub_;
  const ParsedArgs& args_;
  bool json_;
};

int usageError(const std::string& message) {
  printErr(std::string(kPrefix) + message + "\n");
  return kExitUsage;
}

}  // namespace

int policyCommand(const std::vector<std::string>& args) {
  const HelpTopic& overview = *findHelpTopic("policy");
  if (args.empty()) {
    printErr(helpText(overview));
    return kExitUsage;
  }
  if (args.front() == "--help" || args.front() == "-h") {
    printOut(helpText(overview));
    return kExitOk;
  }
  const std::string sub = args.front();
  const HelpTopic* topic = sub.starts_with("-") ? nullptr : findHelpTopic("policy " + sub);
  if (!topic) return usageError("unknown subcommand \"" + sub + "\"; see stockade policy --help");
  auto parsed = parseArgs({args.begin() + 1, args.end()}, flagSpecs(*topic));
  if (auto* err = std::get_if<std::string>(&parsed)) return usageError(sub + ": " + *err);
  const auto& a = std::get<ParsedArgs>(parsed);
  if (a.has("help")) {
    printOut(helpText(*topic));
    return kExitOk;
  }
  const std::size_t files = sub == "narrower" || sub == "diff" ? 2 : 1;
  if (a.positionals.size() != files || !a.rest.empty())
    return usageError(sub + ": expected " + std::to_string(files) + " policy file" + (files == 1 ? "" : "s") +
                      "; usage: stockade policy " + sub + " " + std::string(topic->synopsis));
  return PolicyCommand(sub, a).run();
}

}  // namespace stockade::cli
