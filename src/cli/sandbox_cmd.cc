// `stockade sandbox create|ls|show|narrow|rm`: sandboxes of a running
// stockaded (docs/api.md).
#include <nlohmann/json.hpp>

#include "src/cli/client.h"
#include "src/cli/commands.h"
#include "src/cli/help.h"
#include "src/cli/output.h"
#include "src/cli/policy_file.h"

namespace stockade::cli {
namespace {

using nlohmann::json;

int usage(const std::string& message) {
  printErr("stockade sandbox: " + message + "\n");
  return kExitUsage;
}

std::string policyBody(const std::string& file, std::string& error) {
  auto policy = loadPolicyFile(file);
  if (auto* e = std::get_if<PolicyFileError>(&policy)) {
    error = e->lines();
    while (!error.empty() && error.back() == '\n') error.pop_back();
    return "";
  }
  for (const auto& line : policyNoteLines(file, std::get<SandboxPolicy>(policy))) printErr("stockade: " + line + "\n");
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
  if (auto snap = a.value("from-snapshot")) body["fromSnapshot"] = *snap;
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
  if (!file) return usage("narrow: needs --policy FILE; see stockade sandbox narrow --help");
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
  const HelpTopic& overview = *findHelpTopic("sandbox");
  if (args.empty()) {
    printErr(helpText(overview));
    return kExitUsage;
  }
  const std::string sub = args.front() == "list" ? "ls" : args.front();
  if (sub == "--help" || sub == "-h") {
    printOut(helpText(overview));
    return kExitOk;
  }
  const HelpTopic* topic = sub.starts_with("-") ? nullptr : findHelpTopic("sandbox " + sub);
  if (!topic) return usage("unknown subcommand \"" + sub + "\"; see stockade sandbox --help");
  auto parsed = parseArgs({args.begin() + 1, args.end()}, flagSpecs(*topic));
  if (auto* e = std::get_if<std::string>(&parsed)) return usage(sub + ": " + *e);
  const ParsedArgs& a = std::get<ParsedArgs>(parsed);
  if (a.has("help")) {
    printOut(helpText(*topic));
    return kExitOk;
  }
  std::size_t ids = sub == "show" || sub == "narrow" ? 1 : 0;
  if ((sub == "rm" ? a.positionals.empty() : a.positionals.size() != ids) || !a.rest.empty())
    return usage(sub + ": usage: stockade sandbox " + sub + " " + std::string(topic->synopsis));
  ClientSetup s = setupClient(a);
  if (!s.error.empty()) return usage(s.error);
  HttpClient& c = *s.client;
  try {
    if (sub == "create") return create(c, a, s.json);
    if (sub == "ls") return list(c, s.json);
    if (sub == "show") return show(c, a.positionals[0]);
    if (sub == "narrow") return narrow(c, a.positionals[0], a, s.json);
    return remove(c, a.positionals);
  } catch (const ClientError& e) {
    return reportFailure("sandbox " + sub, e.what());
  }
}

}  // namespace stockade::cli
