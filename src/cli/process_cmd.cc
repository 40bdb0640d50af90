// `stockade exec|ps|logs|kill|wait|attach`: processes of a sandbox in a
// running stockaded (docs/api.md, "Processes").
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "src/cli/client.h"
#include "src/cli/commands.h"
#include "src/cli/help.h"
#include "src/cli/output.h"
#include "src/cli/terminal.h"
#include "src/cli/websocket.h"
#include "src/daemon/base64.h"

namespace stockade::cli {
namespace {

using nlohmann::json;

constexpr int kExitTimedOut = 124;
constexpr int kExitNotRun = 125;  // the process was lost or failed to start

std::string processesPath(const std::string& sandbox) { return "/v1/sandboxes/" + sandbox + "/processes"; }
std::string processPath(const std::string& sandbox, const std::string& pid) {
  return processesPath(sandbox) + "/" + pid;
}

int signalNumberOf(std::string_view name) {
  if (name.starts_with("SIG")) name.remove_prefix(3);
  static const std::pair<const char*, int> kSignals[] = {
      {"HUP", SIGHUP}, {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL}, {"USR1", SIGUSR1},
      {"USR2", SIGUSR2}, {"PIPE", SIGPIPE}, {"ALRM", SIGALRM}, {"TERM", SIGTERM}, {"SEGV", SIGSEGV},
      {"ABRT", SIGABRT}, {"BUS", SIGBUS},   {"FPE", SIGFPE},   {"ILL", SIGILL},   {"XCPU", SIGXCPU},
      {"XFSZ", SIGXFSZ}, {"SYS", SIGSYS},   {"TRAP", SIGTRAP}};
  for (const auto& [n, v] : kSignals)
    if (name == n) return v;
  return 0;
}

// The seed's signal name ("TERM") from what a person types ("term", "SIGTERM", "15").
std::optional<std::string> signalArg(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (s.starts_with("SIG")) s = s.substr(3);
  if (s == "15") s = "TERM";
  if (s == "9") s = "KILL";
  if (s == "2") s = "INT";
  if (s == "1") s = "HUP";
  for (const char* ok : {"TERM", "KILL", "INT", "HUP", "QUIT", "USR1", "USR2"})
    if (s == ok) return s;
  return std::nullopt;
}

// The shell-style exit status of a WaitResult (seed 003) and a line about it.
int exitStatusOf(const json& result, std::string& why) {
  std::string reason = result.value("reason", "unknown");
  if (reason == "exited") return result.value("exitCode", 0);
  if (reason == "signaled") {
    std::string sig = result.value("signal", "");
    why = "killed by " + sig;
    int n = signalNumberOf(sig);
    return n ? 128 + n : kExitNotRun;
  }
  if (reason == "timed_out") {
    why = "its executionTimeout passed: it was killed";
    return kExitTimedOut;
  }
  why = reason + (result.contains("rawReason") ? ": " + result.value("rawReason", "") : "");
  if (result.contains("detail")) why += ": " + result.value("detail", "");
  return kExitNotRun;
}

std::string frameBytes(const json& frame) {
  std::string data = frame.value("data", "");
  if (frame.value("encoding", "text") == "base64") {
    auto bytes = daemon::base64Decode(data);
    return bytes ? *bytes : std::string();
  }
  return data;
}

void writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void writeFrame(const json& frame) {
  std::string channel = frame.value("channel", "stdout");
  writeAll(channel == "stderr" ? 2 : 1, frameBytes(frame));
}

// Follows a process's log stream to its end, across lost connections: each
// reconnect resumes after the last event's cursor, so nothing is lost or
// repeated. Returns the final WaitResult, or nullopt with `error` set.
std::optional<json> follow(HttpClient& c, const std::string& sandbox, const std::string& pid,
                           std::optional<std::string> cursor, bool asJson, std::string& error) {
  std::optional<json> result;
  bool eof = false;
  int failures = 0;
  while (!eof) {
    std::string target = processPath(sandbox, pid) + "/logs/stream";
    if (cursor) target += "?cursor=" + urlEncode(*cursor, ":");
    std::string pending;
    bool fatal = false;
    auto onData = [&](std::string_view piece) {
      pending.append(piece);
      for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
        std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        json e = json::parse(line, nullptr, false);
        if (!e.is_object()) continue;
        failures = 0;
        std::string type = e.value("type", "");
        if (asJson) printOut(line + "\n");
        if (type == "log" && !asJson) writeFrame(e["frame"]);
        if (type == "warning" && !asJson) printErr("stockade: " + printable(e.value("message", "")) + "\n");
        if (type == "state") result = e["result"];
        if (type == "error") {
          error = e["error"].value("message", "stream error") + " (" + e["error"].value("code", "") + ")";
          fatal = true;
          return false;
        }
        if (e.contains("cursor") && e["cursor"].is_string()) cursor = e["cursor"].get<std::string>();
        if (type == "eof") {
          eof = true;
          return false;
        }
      }
      return true;
    };
    try {
      HttpResult r = c.stream("GET", target, {}, onData);
      if (fatal) return std::nullopt;
      if (r.status != 200) {
        auto j = json::parse(r.body, nullptr, false);
        error = j.is_object() ? j.value("message", r.body) + " (" + j.value("code", "") + ")" : r.body;
        return std::nullopt;
      }
    } catch (const ClientError& e) {
      // The daemon restarted or the connection broke: resume from the cursor.
      if (++failures > 50) {
        error = std::string(e.what()) + " (gave up after 50 attempts)";
        return std::nullopt;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100 * failures, 1000)));
    }
  }
  return result;
}

// Forwards this process's standard input to the process's, on a connection
// of its own, until EOF.
void forwardStdin(const Endpoint& endpoint, std::optional<std::string> token, std::string target) {
  HttpClient c(endpoint, std::move(token));
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    json body = n > 0 ? json{{"data", daemon::base64Encode(std::string_view(buf, static_cast<std::size_t>(n)))},
                             {"encoding", "base64"}}
                      : json{{"eof", true}};
    try {
      if (c.request("POST", target, body.dump()).status != 204) return;
    } catch (const ClientError&) {
      return;
    }
    if (n <= 0) return;
  }
}

// Splits `stockade exec` arguments: flags, the sandbox, then the command
// (everything from its first word, or after "--").
struct ExecArgs {
  std::vector<std::string> flags;
  std::vector<std::string> command;
};
ExecArgs splitExec(const std::vector<std::string>& args, const HelpTopic& topic) {
  std::vector<std::string> valued;  // flags that take the next argument
  for (const auto& f : topic.flags)
    if (!f.value.empty()) valued.push_back("--" + std::string(f.name));
  ExecArgs out;
  int positionals = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      out.command.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      return out;
    }
    bool takesValue = std::find(valued.begin(), valued.end(), a) != valued.end();
    if (a.starts_with("-")) {
      out.flags.push_back(a);
      if (takesValue && i + 1 < args.size()) out.flags.push_back(args[++i]);
      continue;
    }
    if (positionals++ == 0) {
      out.flags.push_back(a);  // the sandbox
      continue;
    }
    out.command.assign(args.begin() + static_cast<long>(i), args.end());
    return out;
  }
  return out;
}

int execBody(const ParsedArgs& a, ClientSetup& s, const std::vector<std::string>& command) {
  const std::string sandbox = a.positionals[0];
  json body{{"argv", command}};
  if (auto v = a.value("cwd")) body["cwd"] = *v;
  if (auto v = a.value("name")) body["name"] = *v;
  if (auto v = a.value("key")) body["processKey"] = *v;
  if (auto v = a.value("timeout-ms")) {
    char* end = nullptr;
    unsigned long long ms = std::strtoull(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || ms == 0) return usageError("exec", "--timeout-ms " + *v + ": give milliseconds above 0");
    body["executionTimeout"] = ms;
  }
  json env = json::object();
  for (const auto& kv : a.values("env")) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return usageError("exec", "--env " + kv + ": give NAME=VALUE");
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (!env.empty()) body["env"] = env;
  if (a.has("stdin")) body["stdin"] = "open";
  HttpClient& c = *s.client;
  try {
    HttpResult r = c.request("POST", processesPath(sandbox), body.dump());
    if (r.status != 200) return reportError("exec", r);
    json dto = json::parse(r.body);
    std::string pid = dto.value("id", "");
    if (a.has("detach")) {
      printOut((s.json ? r.body : pid) + "\n");
      return kExitOk;
    }
    std::thread input;
    if (a.has("stdin")) {
      input = std::thread(forwardStdin, c.endpoint(), c.token(), processPath(sandbox, pid) + "/stdin");
      input.detach();  // it ends with our standard input, or with us
    }
    std::string error;
    auto result = follow(c, sandbox, pid, std::nullopt, s.json, error);
    if (!result) return reportFailure("exec " + pid, error.empty() ? "the stream ended without a result" : error);
    std::string why;
    int status = exitStatusOf(*result, why);
    if (!why.empty() && !s.json) printErr("stockade: exec " + pid + ": " + printable(why) + "\n");
    return status;
  } catch (const ClientError& e) {
    return reportFailure("exec", e.what());
  }
}

int execCommand(const std::vector<std::string>& args) {
  ExecArgs split = splitExec(args, *findHelpTopic("exec"));
  return runDaemonCommand("exec", split.flags,
                          {[&](const ParsedArgs& a) -> std::optional<std::string> {
                             if (a.positionals.size() != 1) return "give the sandbox id, then the program";
                             if (split.command.empty()) return "give the program to run (and its arguments)";
                             return std::nullopt;
                           },
                           [&](const ParsedArgs& a, ClientSetup& s) { return execBody(a, s, split.command); }});
}

std::string shortCommand(const json& p) {
  std::string cmd;
  if (p.contains("shellCommand") && p["shellCommand"].is_string()) {
    cmd = p["shellCommand"];
  } else if (p.contains("argv") && p["argv"].is_array()) {
    for (const auto& a : p["argv"]) cmd += (cmd.empty() ? "" : " ") + (a.is_string() ? a.get<std::string>() : "");
  }
  if (cmd.size() > 60) cmd = cmd.substr(0, 57) + "...";
  return cmd;
}

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  else s += ' ';
  return s;
}

int psCommand(const ParsedArgs& a, HttpClient& c, bool asJson) {
  if (a.positionals.size() != 1) return usageError("ps", "give the sandbox id");
  std::string target = processesPath(a.positionals[0]);
  if (auto st = a.value("state")) target += "?state=" + urlEncode(*st, ":");
  HttpResult r = c.request("GET", target);
  if (r.status != 200) return reportError("ps", r);
  if (asJson) {
    printOut(r.body + "\n");
    return kExitOk;
  }
  std::string out = pad("ID", 36) + pad("KIND", 8) + pad("STATE", 10) + pad("EXIT", 12) + pad("NAME", 14) + "COMMAND\n";
  json listed = json::parse(r.body);
  for (const auto& p : listed["items"]) {
    std::string exit;
    if (p.contains("exitCode") && p["exitCode"].is_number()) exit = std::to_string(p["exitCode"].get<int>());
    else if (p.contains("signal") && p["signal"].is_string()) exit = p["signal"];
    else if (p.contains("reason") && p["reason"].is_string()) exit = p["reason"];
    out += printable(pad(p.value("id", ""), 36) + pad(p.value("kind", ""), 8) + pad(p.value("state", ""), 10) +
                     pad(exit, 12) + pad(p.contains("name") && p["name"].is_string() ? p["name"].get<std::string>() : "", 14) +
                     shortCommand(p)) +
           "\n";
  }
  printOut(out);
  return kExitOk;
}

int logsCommand(const ParsedArgs& a, HttpClient& c, bool asJson) {
  if (a.positionals.size() != 2) return usageError("logs", "give the sandbox id and the process id");
  const std::string sandbox = a.positionals[0], pid = a.positionals[1];
  std::optional<std::string> cursor = a.value("since");
  if (a.has("follow")) {
    std::string error;
    if (!follow(c, sandbox, pid, cursor, asJson, error) && !error.empty()) return reportFailure("logs " + pid, error);
    return kExitOk;
  }
  for (;;) {
    std::string target = processPath(sandbox, pid) + "/logs?limit=1000";
    if (cursor) target += "&cursor=" + urlEncode(*cursor, ":");
    HttpResult r = c.request("GET", target);
    if (r.status != 200) return reportError("logs " + pid, r);
    json page = json::parse(r.body);
    if (page.value("truncatedHead", false) && !asJson)
      printErr("stockade: logs " + pid + ": the oldest output is no longer kept\n");
    for (const auto& f : page["items"]) {
      if (asJson) printOut(f.dump() + "\n");
      else writeFrame(f);
    }
    std::optional<std::string> next;
    if (page.contains("nextCursor") && page["nextCursor"].is_string()) next = page["nextCursor"].get<std::string>();
    if (page["items"].empty() || !page.value("hasMore", false) || next == cursor) break;
    cursor = next;
  }
  return kExitOk;
}

int killCommand(const ParsedArgs& a, HttpClient& c) {
  if (a.positionals.size() != 2) return usageError("kill", "give the sandbox id and the process id");
  json body = json::object();
  if (auto v = a.value("signal")) {
    auto sig = signalArg(*v);
    if (!sig) return usageError("kill", "--signal " + *v + ": give TERM, KILL, INT, HUP, QUIT, USR1 or USR2");
    body["signal"] = *sig;
  }
  if (auto v = a.value("escalate-after")) {
    char* end = nullptr;
    unsigned long long ms = std::strtoull(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || ms == 0) return usageError("kill", "--escalate-after " + *v + ": give milliseconds");
    body["escalateAfter"] = ms;
  }
  HttpResult r = c.request("POST", processPath(a.positionals[0], a.positionals[1]) + "/kill", body.dump());
  if (r.status != 204) return reportError("kill " + a.positionals[1], r);
  return kExitOk;
}

int waitCommand(const ParsedArgs& a, HttpClient& c, bool asJson) {
  if (a.positionals.size() != 2) return usageError("wait", "give the sandbox id and the process id");
  json body = json::object();
  if (auto v = a.value("timeout-ms")) {
    char* end = nullptr;
    unsigned long long ms = std::strtoull(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0') return usageError("wait", "--timeout-ms " + *v + ": give milliseconds");
    body["timeout"] = ms;
  }
  HttpResult r = c.request("POST", processPath(a.positionals[0], a.positionals[1]) + "/wait", body.dump());
  if (r.status == 408) {
    if (!asJson) printErr("stockade: wait " + a.positionals[1] + ": still running after --timeout-ms\n");
    return kExitTimedOut;
  }
  if (r.status != 200) return reportError("wait " + a.positionals[1], r);
  json result = json::parse(r.body);
  std::string why;
  int status = exitStatusOf(result, why);
  if (asJson) printOut(r.body + "\n");
  else printOut(result.value("reason", "") + (result.contains("exitCode") ? " " + std::to_string(result.value("exitCode", 0)) : "") +
                (result.contains("signal") ? " " + result.value("signal", "") : "") + "\n");
  return status;
}

void sendResize(HttpClient& c, const std::string& sandbox, const std::string& pid) {
  auto size = windowSize(0);
  if (!size) return;
  try {
    c.request("POST", "/v1/sandboxes/" + sandbox + "/ptys/" + pid + "/resize",
              json{{"cols", size->cols}, {"rows", size->rows}}.dump());
  } catch (const ClientError&) {
  }
}

int attachCommand(const ParsedArgs& a, ClientSetup& s) {
  if (a.positionals.size() != 2) return usageError("attach", "give the sandbox id and the PTY process id");
  const std::string sandbox = a.positionals[0], pid = a.positionals[1];
  // The upgrade carries the token like any request; the WebSocket then owns
  // that connection, and resizes go on a second one.
  std::unique_ptr<WebSocketClient> ws;
  try {
    ws = std::make_unique<WebSocketClient>(*s.client, "/v1/sandboxes/" + sandbox + "/ptys/" + pid + "/attach");
  } catch (const ClientError& e) {
    return reportFailure("attach " + pid, e.what());
  }
  HttpClient resizer(s.client->endpoint(), s.client->token());
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGWINCH);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGHUP);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  int sfd = ::signalfd(-1, &mask, SFD_CLOEXEC);
  bool detached = false;
  {
    RawTerminal raw(0);
    sendResize(resizer, sandbox, pid);
    bool closed = false, stdinOpen = true;
    while (!closed) {
      if (ws->hasBuffered()) {
        while (auto m = ws->receive(closed)) writeAll(1, *m);
        continue;
      }
      pollfd fds[3] = {{ws->fd(), POLLIN, 0}, {stdinOpen ? 0 : -1, POLLIN, 0}, {sfd, POLLIN, 0}};
      if (::poll(fds, 3, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[0].revents) {
        while (auto m = ws->receive(closed)) writeAll(1, *m);
      }
      if (fds[1].revents) {
        char buf[4096];
        ssize_t n = ::read(0, buf, sizeof buf);
        if (n <= 0) {
          stdinOpen = false;
        } else {
          std::string_view in(buf, static_cast<std::size_t>(n));
          if (raw.active() && in.find('\x1d') != std::string_view::npos) {  // Ctrl-]
            in = in.substr(0, in.find('\x1d'));
            if (!in.empty()) ws->send(in);
            detached = true;
            break;
          }
          ws->send(in);
        }
      }
      if (fds[2].revents) {
        signalfd_siginfo si{};
        if (::read(sfd, &si, sizeof si) == sizeof si) {
          if (si.ssi_signo == SIGWINCH) sendResize(resizer, sandbox, pid);
          else break;
        }
      }
    }
    ws->close();
  }  // the terminal is restored here
  if (detached) {
    printErr("stockade: detached from " + pid + "\n");
    return kExitOk;
  }
  try {
    HttpResult r = resizer.request("GET", processPath(sandbox, pid));
    if (r.status == 200) {
      json p = json::parse(r.body);
      if (p.value("state", "") == "terminal") {
        std::string why;
        return exitStatusOf(p, why);
      }
    }
  } catch (const ClientError&) {
  }
  return kExitOk;
}

}  // namespace

int processCommand(const std::string& command, const std::vector<std::string>& args) {
  if (command == "exec") return execCommand(args);
  return runDaemonCommand(command, args, {nullptr, [&](const ParsedArgs& a, ClientSetup& s) {
                                            if (command == "ps") return psCommand(a, *s.client, s.json);
                                            if (command == "logs") return logsCommand(a, *s.client, s.json);
                                            if (command == "kill") return killCommand(a, *s.client);
                                            if (command == "wait") return waitCommand(a, *s.client, s.json);
                                            return attachCommand(a, s);
                                          }});
}

}  // namespace stockade::cli
