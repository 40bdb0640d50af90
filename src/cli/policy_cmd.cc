// `stockade policy check|derive|narrower|diff`: thin wrappers over the
// policy engine. Exit codes: 0 ok, 2 invalid input, 3 candidate widens.
#include <nlohmann/json.hpp>

#include "src/cli/args.h"
#include "src/cli/commands.h"
#include "src/cli/output.h"
#include "src/cli/policy_file.h"
#include "stockade/rules.h"

namespace stockade::cli {
namespace {

constexpr int kExitWidens = 3;

constexpr const char* kPolicyUsage = R"(usage: stockade policy SUBCOMMAND ...

  check FILE                       exit 0 when FILE is a valid policy, 2 with the error when not
  derive FILE [--cwd DIR]          print the DerivedRules, their fingerprint and where each
                                   field came from ("sources": "file" or "default") as JSON
  narrower BASE CANDIDATE [--cwd DIR]
                                   exit 0 when CANDIDATE is a narrowing of BASE,
                                   3 when it widens (stderr names the axis and entry)
  diff A B [--cwd DIR]             print the per-axis difference of the derived rules as JSON

FILE may be "-" for standard input. A section or field FILE leaves out takes
the bundled default policy's value; an explicit value, [] included, replaces it.
Relative paths in a policy resolve against --cwd (default: the current
directory); "~" against $HOME.
)";

struct Failure {
  std::string message;
};

SandboxPolicy loadPolicy(const std::string& path) {
  auto loaded = loadPolicyFile(path);
  if (auto* err = std::get_if<std::string>(&loaded)) throw Failure{*err};
  return std::get<SandboxPolicy>(std::move(loaded));
}

DerivedRules deriveOrFail(const std::string& path, const SandboxPolicy& policy, const DeriveContext& ctx) {
  auto derived = derive(policy, ctx);
  if (auto* err = std::get_if<PolicyError>(&derived)) throw Failure{path + ": " + err->text()};
  return std::get<DerivedRules>(std::move(derived));
}

DerivedRules deriveFile(const std::string& path, const DeriveContext& ctx) {
  return deriveOrFail(path, loadPolicy(path), ctx);
}

// Where each field's value came from: "file", or "default" (policy/default.json)
// for a field the file left out.
nlohmann::json sourcesJson(const SandboxPolicy& policy) {
  nlohmann::json out = nlohmann::json::object();
  for (PolicyField f : kAllPolicyFields)
    out[std::string(policyFieldPath(f))] = policy.source(f) == ValueSource::kGiven ? "file" : "default";
  return out;
}

DeriveContext contextFrom(const ParsedArgs& args) {
  DeriveContext ctx = currentContext();
  if (auto cwd = args.value("cwd")) {
    if (cwd->empty() || cwd->front() != '/') throw Failure{"--cwd \"" + *cwd + "\" must be an absolute path"};
    ctx.cwd = *cwd;
  }
  return ctx;
}

int usageError(const std::string& message) {
  printErr("stockade policy: " + message + "\n");
  return kExitUsage;
}

}  // namespace

int policyCommand(const std::vector<std::string>& args) {
  if (args.empty() || args.front() == "--help" || args.front() == "-h") {
    (args.empty() ? printErr : printOut)(kPolicyUsage);
    return args.empty() ? kExitUsage : kExitOk;
  }
  const std::string sub = args.front();
  struct Shape {
    const char* name;
    std::size_t files;
    bool cwd;
  };
  static const Shape kShapes[] = {{"check", 1, false}, {"derive", 1, true}, {"narrower", 2, true}, {"diff", 2, true}};
  const Shape* shape = nullptr;
  for (const auto& s : kShapes) shape = sub == s.name ? &s : shape;
  if (!shape) return usageError("unknown subcommand \"" + sub + "\"; see stockade policy --help");

  std::vector<FlagSpec> specs;
  if (shape->cwd) specs.push_back({"cwd"});
  auto parsed = parseArgs({args.begin() + 1, args.end()}, specs);
  if (auto* err = std::get_if<std::string>(&parsed)) return usageError(sub + ": " + *err);
  const auto& a = std::get<ParsedArgs>(parsed);
  if (a.has("help")) {
    printOut(kPolicyUsage);
    return kExitOk;
  }
  if (a.positionals.size() != shape->files || !a.rest.empty())
    return usageError(sub + ": expected " + std::to_string(shape->files) + " policy file(s); see --help");

  try {
    const auto& files = a.positionals;
    if (sub == "check") {
      loadPolicy(files[0]);
      printOut(files[0] + ": valid\n");
      return kExitOk;
    }
    DeriveContext ctx = contextFrom(a);
    if (sub == "derive") {
      SandboxPolicy policy = loadPolicy(files[0]);
      DerivedRules rules = deriveOrFail(files[0], policy, ctx);
      nlohmann::json out = {{"fingerprint", rules.fingerprint()},
                            {"rules", nlohmann::json::parse(rules.toJson())},
                            {"sources", sourcesJson(policy)}};
      printOut(out.dump(2) + "\n");
      return kExitOk;
    }
    DerivedRules first = deriveFile(files[0], ctx);
    DerivedRules second = deriveFile(files[1], ctx);
    if (sub == "narrower") {
      if (auto w = narrowing(first, second)) {
        printErr("stockade policy narrower: " + files[1] + " widens " + files[0] + ": " + w->message + "\n");
        return kExitWidens;
      }
      printOut(files[1] + " is a narrowing of " + files[0] + "\n");
      return kExitOk;
    }
    printOut(diff(first, second).toJson() + "\n");
    return kExitOk;
  } catch (const Failure& f) {
    return usageError(sub + ": " + f.message);
  }
}

}  // namespace stockade::cli
