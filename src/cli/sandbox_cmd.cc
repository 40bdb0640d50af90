// `stockade sandbox create|ls|show|narrow|rm`: sandboxes of a running
// stockaded (docs/api.md).
#include <nlohmann/json.hpp>

#include "src/cli/client.h"
#include "src/cli/commands.h"
#include "src/cli/output.h"
#include "src/cli/policy_file.h"

namespace stockade::cli {
namespace {

using nlohmann::json;

constexpr const char* kSandboxUsage = R"(usage: stockade sandbox SUBCOMMAND [--connect ADDR] [--token-file FILE] [--json]

  create [--policy FILE] [--workspace DIR]   create a sandbox; prints its id
  ls                                         list sandboxes: id, state, created, workspace
  show ID                                    one sandbox, with its live derived rules
  narrow ID --policy FILE                    narrow that sandbox's policy
  rm ID...                                   close sandboxes: kill their processes, release them

The policy must narrow the daemon's own (stockaded --policy); a section or
field the file leaves out takes the bundled default's value.

  --connect ADDR      unix:PATH or HOST:PORT (default $STOCKADE_CONNECT, else
                      unix:/run/stockade/stockaded.sock)
  --token-file FILE   the daemon's token (default $STOCKADE_TOKEN_FILE)
  --json              print the daemon's JSON replies
)";

int usage(const std::string& message) {
  printErr("stockade sandbox: " + message + "\n" + kSandboxUsage);
  return kExitUsage;
}

std::string policyBody(const std::string& file, std::string& error) {
  auto policy = loadPolicyFile(file);
  if (auto* e = std::get_if<std::string>(&policy)) {
    error = *e;
    return "";
  }
  return std::get<SandboxPolicy>(policy).toJson();
}

int create(HttpClient& c, const ParsedArgs& a, bool asJson) {
  json body = json::object();
  if (auto file = a.value("policy")) {
    std::string error, policy = policyBody(*file, error);
    if (!error.empty()) return reportFailure("sandbox create", error);
    body["policy"] = json::parse(policy);
  } else {
    body["policy"] = json::object();  // the bundled default's values
  }
  if (auto w = a.value("workspace")) body["workspace"] = *w;
  HttpResult r = c.request("POST", "/v1/sandboxes", body.dump());
  if (r.status != 200) return reportError("sandbox create", r);
  if (asJson) {
    printOut(r.body + "\n");
  } else {
    json j = json::parse(r.body);
    printOut(j["id"].get<std::string>() + "\n");
  }
  return kExitOk;
}

int list(HttpClient& c, bool asJson) {
  HttpResult r = c.request("GET", "/v1/sandboxes");
  if (r.status != 200) return reportError("sandbox ls", r);
  if (asJson) {
    printOut(r.body + "\n");
    return kExitOk;
  }
  json j = json::parse(r.body);
  std::string out = "ID                                   STATE           CREATED                   WORKSPACE\n";
  for (const auto& s : j["items"]) {
    std::string id = s.value("id", ""), state = s.value("state", "");
    std::string line = id + std::string(id.size() < 37 ? 37 - id.size() : 1, ' ') + state +
                       std::string(state.size() < 16 ? 16 - state.size() : 1, ' ') + s.value("createdAt", "") + "  " +
                       s.value("workspace", "") + "\n";
    out += printable(line);
  }
  printOut(out);
  return kExitOk;
}

int show(HttpClient& c, const std::string& id) {
  HttpResult r = c.request("GET", "/v1/sandboxes/" + id);
  if (r.status != 200) return reportError("sandbox show " + id, r);
  printOut(json::parse(r.body).dump(2) + "\n");
  return kExitOk;
}

int narrow(HttpClient& c, const std::string& id, const ParsedArgs& a, bool asJson) {
  auto file = a.value("policy");
  if (!file) return usage("narrow needs --policy FILE");
  std::string error, policy = policyBody(*file, error);
  if (!error.empty()) return reportFailure("sandbox narrow", error);
  HttpResult r = c.request("POST", "/v1/sandboxes/" + id + "/narrow", "{\"policy\":" + policy + "}");
  if (r.status != 200) return reportError("sandbox narrow " + id, r);
  if (asJson) printOut(r.body + "\n");
  else printOut("narrowed " + id + " (rules " + json::parse(r.body).value("fingerprint", "").substr(0, 12) + ")\n");
  return kExitOk;
}

int remove(HttpClient& c, const std::vector<std::string>& ids) {
  int rc = kExitOk;
  for (const auto& id : ids) {
    HttpResult r = c.request("DELETE", "/v1/sandboxes/" + id);
    if (r.status != 204) rc = reportError("sandbox rm " + id, r);
  }
  return rc;
}

}  // namespace

int sandboxCommand(const std::vector<std::string>& args) {
  if (args.empty()) return usage("give a subcommand");
  const std::string sub = args.front();
  if (sub == "--help" || sub == "-h" || sub == "help") {
    printOut(kSandboxUsage);
    return kExitOk;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  auto parsed = parseArgs(rest, clientFlags({{"policy"}, {"workspace"}}));
  if (auto* e = std::get_if<std::string>(&parsed)) return usage(*e);
  const ParsedArgs& a = std::get<ParsedArgs>(parsed);
  if (a.has("help")) {
    printOut(kSandboxUsage);
    return kExitOk;
  }
  ClientSetup s = setupClient(a);
  if (!s.error.empty()) return usage(s.error);
  HttpClient& c = *s.client;
  auto needsId = [&](std::size_t n) { return a.positionals.size() == n; };
  try {
    if (sub == "create") {
      if (!needsId(0)) return usage("create takes no arguments");
      return create(c, a, s.json);
    }
    if (sub == "ls" || sub == "list") {
      if (!needsId(0)) return usage("ls takes no arguments");
      return list(c, s.json);
    }
    if (sub == "show") {
      if (!needsId(1)) return usage("show takes one sandbox id");
      return show(c, a.positionals[0]);
    }
    if (sub == "narrow") {
      if (!needsId(1)) return usage("narrow takes one sandbox id");
      return narrow(c, a.positionals[0], a, s.json);
    }
    if (sub == "rm") {
      if (a.positionals.empty()) return usage("rm takes sandbox ids");
      return remove(c, a.positionals);
    }
  } catch (const ClientError& e) {
    return reportFailure("sandbox " + sub, e.what());
  }
  return usage("unknown subcommand \"" + sub + "\"");
}

}  // namespace stockade::cli
