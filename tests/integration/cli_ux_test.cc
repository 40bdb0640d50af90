// What a user of the CLI reads: exact messages and exit codes for bad
// input, every problem of a file at once, sandbox-runtime settings files
// (--settings, ~/.srt-settings.json, the one warning), --json, help.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "tests/support/read_file.h"
#include "tests/support/sanitizer.h"
#include "tests/support/subprocess.h"
#include "tests/support/temp_dir.h"

namespace stockade {
namespace {

using testing::ProcessResult;
using testing::runProcess;
using testing::stockadeBinary;

class CliUxTest : public ::testing::Test {
 protected:
  ProcessResult cli(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), stockadeBinary());
    return runProcess(args, input);
  }
  // `stockade ARGS` with HOME set to this test's home.
  ProcessResult cliWithHome(std::vector<std::string> args) {
    args.insert(args.begin(), {"/usr/bin/env", "HOME=" + home_, stockadeBinary()});
    return runProcess(args);
  }
  std::string file(const std::string& name, const std::string& text) { return t_.file(name, text); }

  testing::TempDir t_;
  std::string work_ = t_.dir("work");
  std::string home_ = t_.dir("home");
};

// ---- numbers and flags: the flag, the value and the fix ----

TEST_F(CliUxTest, ATimeoutTooLargeForAnyClockSaysSo) {
  auto r = cli({"run", "--timeout-ms", "99999999999999999999", "--", "/bin/true"});
  EXPECT_EQ(r.exitCode, 125);
  EXPECT_EQ(r.err,
            "stockade run: --timeout-ms \"99999999999999999999\": more than 1000000000000 ms (about 31 years), the "
            "largest timeout; give fewer milliseconds, or no --timeout-ms for none\n");
  EXPECT_EQ(cli({"run", "--timeout-ms", "1000000000001", "--", "/bin/true"}).exitCode, 125);
}

TEST_F(CliUxTest, ATimeoutThatIsNoWholeNumberSaysWhatIsExpected) {
  for (const char* bad : {"soon", "0", "-5", "1.5", ""}) {
    auto r = cli({"run", "--timeout-ms", bad, "--", "/bin/true"});
    EXPECT_EQ(r.exitCode, 125) << bad;
    EXPECT_EQ(r.err, std::string("stockade run: --timeout-ms \"") + bad +
                         "\": expected a whole number of milliseconds from 1, such as 5000\n");
  }
}

TEST_F(CliUxTest, AResolveWithoutAnAddressShowsTheForm) {
  auto r = cli({"run", "--resolve", "foo", "--", "/bin/true"});
  EXPECT_EQ(r.exitCode, 125);
  EXPECT_EQ(r.err, "stockade run: --resolve \"foo\": expected HOST=ADDR, such as --resolve foo=127.0.0.1\n");
  auto bad = cli({"run", "--resolve", "foo=nine", "--", "/bin/true"});
  EXPECT_EQ(bad.err, "stockade run: --resolve \"foo=nine\": \"nine\" is not an IPv4 or IPv6 address, such as 127.0.0.1 or ::1\n");
}

// ---- --env and the proxy variables: refused only when stockade sets them ----

TEST_F(CliUxTest, AProxyVariableReachesAChildWithoutNetwork) {
  auto r = cli({"run", "--cwd", work_, "--env", "http_proxy=x", "--", "/bin/sh", "-c", "echo \"$http_proxy\""});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "x\n");
}

TEST_F(CliUxTest, AProxyVariableIsRefusedForAChildWhoseProxyStockadeSets) {
  std::string p = file("net.json", R"({"network": {"allowedDomains": ["origin.test"], "deniedDomains": []}})");
  auto r = cli({"run", "--policy", p, "--cwd", work_, "--env", "http_proxy=x", "--", "/bin/true"});
  EXPECT_EQ(r.exitCode, 125);
  EXPECT_EQ(r.err, "stockade run: --env: \"http_proxy\" is a proxy variable; stockade sets it for a child with network "
                   "(the policy allows domains) and callers cannot override it\n");
}

// ---- every problem of a file, each on a line of its own ----

TEST_F(CliUxTest, RunReportsEveryProblemOfThePolicyOnALineOfItsOwn) {
  std::string p = file("bad.json", R"({"filesystem": {"allowWrite": "."}, "limits": {"memoryBytes": 18446744073709551616},
                                       "network": {"allowedDomains": ["*.com"]}})");
  auto r = cli({"run", "--policy", p, "--", "/bin/true"});
  EXPECT_EQ(r.exitCode, 125);
  EXPECT_EQ(r.err, "stockade run: " + p + ": filesystem.allowWrite: must be an array, not a string\n" +
                       "stockade run: " + p +
                       ": limits.memoryBytes: 18446744073709551616 is larger than 18446744073709551615, the largest "
                       "value; use 0 for no limit\n" +
                       "stockade run: " + p +
                       ": network.allowedDomains[0]: \"*.com\" is too broad; name a registrable domain such as "
                       "\"*.example.com\"\n");
}

TEST_F(CliUxTest, CheckReportsEveryProblemAndADuplicateKeyWithItsPath) {
  std::string p = file("dup.json", R"({"filesystem": {"denyRead": ["/a"], "denyRead": []}, "env": {"allow": ["A B"]}})");
  auto r = cli({"policy", "check", p});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.err, "stockade policy: check: " + p +
                       ": filesystem.denyRead: appears twice in the same object; give each key once\n"
                       "stockade policy: check: " + p +
                       ": env.allow[0]: \"A B\" is not a variable name; names match [A-Za-z_][A-Za-z0-9_]*\n");
  EXPECT_EQ(r.out, "");
}

// `policy check` derives as `run` would: a read-denied file with another
// name fails there, naming that name.
TEST_F(CliUxTest, CheckReportsWhatDeriveWouldNamingTheOtherLink) {
  std::string key = t_.file("home/.ssh/id_rsa", "PRIVATE");
  std::string copy = work_ + "/copy";
  ASSERT_EQ(::link(key.c_str(), copy.c_str()), 0);
  std::string p = file("p.json", R"({"filesystem": {"denyRead": ["~/.ssh/id_rsa"], "allowWrite": ["."]}})");
  auto r = cliWithHome({"policy", "check", p, "--cwd", work_});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.err, "stockade policy: check: " + p + ": filesystem.denyRead[0]: \"" + key +
                       "\" has 2 hard links and only 1 of them is denied, so the file stays readable under \"" + copy +
                       "\". Deny every name too, or remove the extra links\n");
  auto both = file("both.json", R"({"filesystem": {"denyRead": ["~/.ssh/id_rsa", "copy"], "allowWrite": ["."]}})");
  EXPECT_EQ(cliWithHome({"policy", "check", both, "--cwd", work_}).exitCode, 0);
}

// ---- --json for check and narrower ----

TEST_F(CliUxTest, CheckJsonGivesTheOutcomeAsOneObject) {
  std::string good = file("good.json", R"({"filesystem": {"allowWrite": ["."]}, "allowAppleEvents": false})");
  auto ok = cli({"policy", "check", good, "--cwd", work_, "--json"});
  ASSERT_EQ(ok.exitCode, 0) << ok.err;
  EXPECT_EQ(ok.err, "") << "with --json, notes are in the object";
  auto j = nlohmann::json::parse(ok.out);
  EXPECT_EQ(j["valid"], true);
  EXPECT_EQ(j["file"], good);
  EXPECT_EQ(j["problems"], nlohmann::json::array());
  EXPECT_EQ(j["notes"], nlohmann::json::parse(R"([{"kind": "not-applicable", "path": "allowAppleEvents", "why": "macOS only"}])"));
  EXPECT_EQ(j["fingerprint"].get<std::string>().size(), 64u);

  std::string bad = file("bad.json", R"({"env": {"allow": [1]}, "limits": {"pids": "x"}})");
  auto no = cli({"policy", "check", bad, "--json"});
  EXPECT_EQ(no.exitCode, 2);
  EXPECT_EQ(no.err, "");
  EXPECT_EQ(nlohmann::json::parse(no.out), nlohmann::json::parse(R"({"valid": false, "file": ")" + bad + R"(",
      "problems": [{"path": "env.allow[0]", "message": "must be a string, not a number"},
                   {"path": "limits.pids", "message": "must be a whole number, not a string; use 0 for no limit"}]})"));
}

TEST_F(CliUxTest, NarrowerJsonGivesTheVerdictAndTheWidening) {
  std::string base = file("base.json", R"({"filesystem": {"allowWrite": ["/var/tmp"]}, "network": {"allowedDomains": ["*.github.com"]}})");
  std::string narrow = file("narrow.json", R"({"filesystem": {"allowWrite": ["/var/tmp/x"]}, "network": {"allowedDomains": ["api.github.com"]}})");
  std::string wide = file("wide.json", R"({"filesystem": {"allowWrite": ["/var/tmp", "/srv/data"]}, "network": {"allowedDomains": ["*.github.com"]}})");
  auto yes = cli({"policy", "narrower", base, narrow, "--json"});
  EXPECT_EQ(yes.exitCode, 0) << yes.err;
  EXPECT_EQ(nlohmann::json::parse(yes.out),
            nlohmann::json({{"base", base}, {"candidate", narrow}, {"narrower", true}, {"widening", nullptr}}));
  auto no = cli({"policy", "narrower", base, wide, "--json"});
  EXPECT_EQ(no.exitCode, 3);
  EXPECT_EQ(nlohmann::json::parse(no.out)["widening"],
            nlohmann::json({{"axis", "filesystem.allowWrite"},
                            {"entry", "/srv/data"},
                            {"message", "filesystem.allowWrite: \"/srv/data\" is not inside any writable path of the base policy"}}));
  auto invalid = cli({"policy", "narrower", base, file("x.json", "{"), "--json"});
  EXPECT_EQ(invalid.exitCode, 2);
  EXPECT_EQ(nlohmann::json::parse(invalid.out)["valid"], false);
}

// ---- sandbox-runtime settings files ----

TEST_F(CliUxTest, KeysThatDoNotApplyGetOneWarningListingThem) {
  std::string s = file("srt.json", R"({"filesystem": {"denyRead": [], "allowWrite": ["."], "denyWrite": []},
      "network": {"allowedDomains": [], "deniedDomains": [], "httpProxyPort": 8080},
      "allowAppleEvents": false, "ripgrep": {"command": "rg"}, "mandatoryDenySearchDepth": 4})");
  auto r = cli({"run", "--settings", s, "--cwd", work_, "--", "/bin/true"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.err, "stockade: warning: " + s +
                       ": sandbox-runtime settings that do not apply to stockade, ignored: network.httpProxyPort "
                       "(stockade's own proxy always carries and filters the traffic); allowAppleEvents (macOS only); "
                       "ripgrep (stockade finds mandatory-deny names itself, without ripgrep)\n"
                       "stockade: note: " + s + ": enforced more strictly than asked: mandatoryDenySearchDepth "
                       "(mandatory-deny names are protected at every depth)\n");
}

TEST_F(CliUxTest, AKeyThatWouldWeakenEnforcementIsRefusedWithTheReason) {
  std::string s = file("weak.json", R"({"enableWeakerNestedSandbox": true, "filesystem": {"disabled": true}})");
  auto r = cli({"run", "--settings", s, "--", "/bin/true"});
  EXPECT_EQ(r.exitCode, 125);
  EXPECT_EQ(r.err, "stockade run: " + s +
                       ": enableWeakerNestedSandbox: true is refused: it would weaken enforcement, and stockade never "
                       "runs a weaker sandbox; run it where unprivileged user namespaces are allowed; remove the key "
                       "or set it to false\n"
                       "stockade run: " + s +
                       ": filesystem.disabled: true is refused: it would weaken enforcement, and stockade always "
                       "enforces the filesystem rules; remove the key or set it to false\n");
}

TEST_F(CliUxTest, PolicyAndSettingsAreOneFlagGivenOnce) {
  std::string s = file("s.json", "{}");
  auto r = cli({"run", "--policy", s, "--settings", s, "--", "/bin/true"});
  EXPECT_EQ(r.exitCode, 125);
  EXPECT_EQ(r.err, "stockade run: --policy and --settings name the same thing; give one of them\n");
}

// The settings file decides what the child reads: a denied file shows
// nothing while its neighbour is readable, with --settings and from
// ~/.srt-settings.json; without that file the default policy applies.
TEST_F(CliUxTest, SettingsFromTheFlagOrTheDefaultLocationAreThePolicy) {
  std::string secret = t_.file("home/plans.txt", "PLANS\n");
  std::string notes = t_.file("home/notes.txt", "NOTES\n");
  const std::string settings = R"({"filesystem": {"denyRead": ["~/plans.txt"], "allowWrite": ["."], "denyWrite": []},
                                   "network": {"allowedDomains": [], "deniedDomains": []}})";
  auto show = [&](std::vector<std::string> flags) {
    std::vector<std::string> args = {"run", "--cwd", work_};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", "cat " + secret + " " + notes + " 2>/dev/null; true"});
    return cliWithHome(args);
  };
  EXPECT_EQ(show({}).out, "PLANS\nNOTES\n") << "no settings file: the default policy reads both";
  std::string flagFile = file("settings.json", settings);
  EXPECT_EQ(show({"--settings", flagFile}).out, "NOTES\n");
  file("home/.srt-settings.json", settings);
  auto fromHome = show({});
  EXPECT_EQ(fromHome.out, "NOTES\n") << fromHome.err;
  EXPECT_EQ(show({"--policy", file("open.json", R"({"filesystem": {"denyRead": []}})")}).out, "PLANS\nNOTES\n")
      << "a named policy wins over the default settings file";
}

// ---- --strict, --quiet, and diagnostics that are stockade's ----

// A list of socket paths allows socket(AF_UNIX) as a whole: a degradation
// on every kernel, which --strict refuses.
const char* kWeakerPolicy = R"({"network": {"allowUnixSockets": ["/run/stockade-test.sock"]}, "allowAppleEvents": false})";

TEST_F(CliUxTest, StrictRefusesToRunWeakerThanThePolicyAsks) {
  std::string p = file("weaker.json", kWeakerPolicy);
  auto r = cli({"run", "--strict", "--policy", p, "--cwd", work_, "--", "/bin/sh", "-c", "echo ran"});
  EXPECT_EQ(r.exitCode, 125);
  EXPECT_EQ(r.out, "") << "the program must not run";
  EXPECT_NE(r.err.find("stockade run: setup step \"prepare\": refusing to run weaker than the rules: "
                       "network.allowUnixSockets: unix sockets are allowed as a whole"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(r.err.ends_with(" (--strict)\n")) << r.err;
  // Without --strict it runs, and says what is weaker.
  auto warned = cli({"run", "--policy", p, "--cwd", work_, "--", "/bin/sh", "-c", "echo ran"});
  EXPECT_EQ(warned.exitCode, 0);
  EXPECT_EQ(warned.out, "ran\n");
  EXPECT_NE(warned.err.find("stockade: warning: weaker enforcement: network.allowUnixSockets"), std::string::npos);
  // A fully enforced policy runs under --strict.
  EXPECT_EQ(cli({"run", "--strict", "--cwd", work_, "--", "/bin/sh", "-c", "echo ran"}).out, "ran\n");
}

TEST_F(CliUxTest, QuietLeavesStderrToTheProgramAndTheDiagnosticsToTheAudit) {
  std::string p = file("weaker.json", R"({"network": {"allowUnixSockets": ["/run/stockade-test.sock"]},
                                         "allowAppleEvents": false, "ripgrep": {}})");
  std::string audit = t_.path() + "/audit.jsonl";
  auto r = cli({"run", "--quiet", "--policy", p, "--cwd", work_, "--audit", audit, "--timeout-ms", "300", "--",
                "/bin/sh", "-c", "echo child-err >&2; sleep 30"});
  EXPECT_EQ(r.exitCode, 124);
  EXPECT_EQ(r.err, "child-err\n") << "only the program's own stderr";
  std::set<std::string> events;
  std::istringstream lines(testing::readWholeFile(audit));
  for (std::string line; std::getline(lines, line);) {
    auto e = nlohmann::json::parse(line);
    events.insert(e["event"].get<std::string>());
    if (e["event"] == "policy_notes") {
      EXPECT_EQ(e["notes"][1]["path"], "ripgrep") << line;
    }
    if (e["event"] == "exit") {
      EXPECT_EQ(e["reason"], "timed_out") << line;
    }
  }
  for (const char* e : {"policy_notes", "degraded", "spawn", "exit"}) EXPECT_TRUE(events.count(e)) << e;
}

TEST_F(CliUxTest, EveryLineStockadeWritesOnStderrStartsWithStockade) {
  std::string p = file("weaker.json", R"({"network": {"allowUnixSockets": ["/run/stockade-test.sock"]},
                                         "ripgrep": {}, "mandatoryDenySearchDepth": 2})");
  auto r = cli({"run", "--policy", p, "--cwd", work_, "--timeout-ms", "300", "--", "/bin/sh", "-c",
                "echo child-err >&2; sleep 30"});
  EXPECT_EQ(r.exitCode, 124);
  std::istringstream lines(r.err);
  int ours = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line == "child-err") continue;
    EXPECT_TRUE(line.starts_with("stockade: ") || line.starts_with("stockade run: ")) << line;
    ++ours;
  }
  EXPECT_EQ(ours, 4) << r.err << "(the ignored-keys warning, the stronger note, the degradation, the timeout)";
}

// ---- nested use ----

TEST_F(CliUxTest, StockadeRunInsideASandboxSaysNestedSandboxesAreNotSupported) {
  // A copy in the workspace: the build tree may lie under /tmp, which inside is the sandbox's own.
  const std::string inner = work_ + "/stockade";
  std::filesystem::copy_file(stockadeBinary(), inner);
  // An ASan build's inner CLI runs without LeakSanitizer: at exit it stops the
  // world with ptrace, which the sandbox's filter refuses as it should
  // (tests/support/sanitizer.h). The outer CLI is still leak-checked.
  auto innerRun = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"run", "--cwd", work_, "--"};
    if (testing::kAddressSanitized) argv.insert(argv.end(), {"/usr/bin/env", "ASAN_OPTIONS=detect_leaks=0"});
    argv.push_back(inner);
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  };
  auto r = cli(innerRun({"run", "--", "/bin/echo", "inner"}));
  EXPECT_EQ(r.exitCode, 125);
  EXPECT_EQ(r.out, "") << "the inner program never ran";
  EXPECT_EQ(r.err, "stockade run: nested sandboxes are not supported: this runs inside a stockade sandbox already, "
                   "whose seccomp filter refuses the user, mount and pid namespaces a sandbox is made of (an inner "
                   "sandbox could only be weaker than the one it is in); run the program directly, it is sandboxed, "
                   "or start stockade outside the sandbox\n");
  // The allowed neighbour: stockade's policy commands work inside.
  auto check = cli(innerRun({"policy", "check", "-", "--cwd", work_}), "{}");
  EXPECT_EQ(check.exitCode, 0) << check.err;
  EXPECT_EQ(check.out, "-: valid\n");
}

// ---- denial events decode their arguments ----

TEST_F(CliUxTest, DenialEventsDecodeSyscallSocketAndNamespaceArguments) {
  std::string audit = t_.path() + "/audit.jsonl";  // outside the writable work tree
  auto r = cli({"run", "--cwd", work_, "--audit", audit, "--", "/bin/sh", "-c",
                "unshare -U true 2>/dev/null; /usr/bin/python3 -c 'import socket; socket.socket(17, 3, 0)' 2>/dev/null; "
                "echo ran"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "ran\n");
  std::vector<nlohmann::json> denials;
  std::istringstream lines(testing::readWholeFile(audit));
  for (std::string line; std::getline(lines, line);) {
    auto e = nlohmann::json::parse(line);
    if (e["event"] == "denial") denials.push_back(e);
  }
  auto find = [&](const char* syscall) {
    auto it = std::find_if(denials.begin(), denials.end(), [&](const auto& e) { return e["syscall"] == syscall; });
    return it == denials.end() ? nlohmann::json() : *it;
  };
  nlohmann::json unshare = find("unshare");
  ASSERT_FALSE(unshare.is_null()) << nlohmann::json(denials).dump();
  EXPECT_EQ(unshare["decoded"]["flags"], "CLONE_NEWUSER");
  EXPECT_EQ(unshare["args"][0], 0x10000000) << "the raw arguments stay beside the decoding";
  nlohmann::json packet = find("socket");
  ASSERT_FALSE(packet.is_null()) << nlohmann::json(denials).dump();
  EXPECT_EQ(packet["decoded"], nlohmann::json({{"family", "AF_PACKET"}, {"type", "SOCK_RAW|SOCK_CLOEXEC"}, {"protocol", "0"}}))
      << packet.dump();
}

// ---- help ----

TEST_F(CliUxTest, EveryCommandPrintsItsOwnHelp) {
  struct Case {
    std::vector<std::string> args;
    std::string usage;
  };
  for (const Case& c : {Case{{"run", "-h"}, "usage: stockade run "}, Case{{"run", "--help"}, "usage: stockade run "},
                        Case{{"policy", "check", "--help"}, "usage: stockade policy check FILE"},
                        Case{{"policy", "derive", "-h"}, "usage: stockade policy derive FILE"},
                        Case{{"policy", "narrower", "--help"}, "usage: stockade policy narrower BASE CANDIDATE"},
                        Case{{"policy", "diff", "--help"}, "usage: stockade policy diff A B"},
                        Case{{"help", "policy", "check"}, "usage: stockade policy check FILE"},
                        Case{{"help", "run"}, "usage: stockade run "}}) {
    auto r = cli(c.args);
    EXPECT_EQ(r.exitCode, 0) << c.args.back();
    EXPECT_TRUE(r.out.starts_with(c.usage)) << r.out;
    EXPECT_EQ(r.err, "");
  }
}

TEST_F(CliUxTest, PolicyHelpDocumentsThePolicyFormat) {
  for (std::vector<std::string> args : {std::vector<std::string>{"policy", "--help"}, {"help", "policy"}}) {
    auto r = cli(args);
    EXPECT_EQ(r.exitCode, 0);
    for (const char* part : {"POLICY FORMAT", "filesystem.denyRead", "network.deniedDomains", "env.allow",
                             "limits.*", "leaves out takes the bundled default", "\"literal\": true",
                             "docs/srt-compat.md"})
      EXPECT_NE(r.out.find(part), std::string::npos) << part;
  }
  auto unknown = cli({"help", "nothing"});
  EXPECT_EQ(unknown.exitCode, 2);
  EXPECT_EQ(unknown.err, "stockade: no help for \"nothing\"; topics: run, policy, policy check, policy derive, policy "
                         "narrower, policy diff, sandbox, sandbox create, sandbox ls, sandbox show, sandbox narrow, "
                         "sandbox rm, exec, ps, logs, kill, wait, attach, cp, ls, persist, restore, snapshot, code\n");
}

// The man page and the completion script are rendered from the tables that
// print --help: every flag a command's help names is in the man page, and
// bash completes commands, subcommands and flags.
TEST_F(CliUxTest, TheManPageDocumentsEveryFlagOfEveryCommand) {
  const std::string man = testing::readWholeFile(STOCKADE_MAN_PAGE);
  for (std::vector<std::string> cmd : {std::vector<std::string>{"run"}, {"policy", "check"}, {"policy", "derive"},
                                       {"policy", "narrower"}, {"policy", "diff"}}) {
    std::string name = cmd[0] + (cmd.size() > 1 ? " " + cmd[1] : "");
    EXPECT_NE(man.find(".SS stockade " + name + "\n"), std::string::npos) << name;
    cmd.push_back("--help");
    std::string help = cli(cmd).out;
    std::set<std::string> flags;
    std::regex flag("--[a-z-]+");
    for (auto it = std::sregex_iterator(help.begin(), help.end(), flag); it != std::sregex_iterator(); ++it)
      flags.insert(it->str());
    EXPECT_FALSE(flags.empty());
    for (const auto& f : flags) {
      std::string roff;  // man(7) writes every "-" of a flag as "\-"
      for (char c : f) roff += c == '-' ? std::string("\\-") : std::string(1, c);
      EXPECT_NE(man.find(roff), std::string::npos) << name << " " << f;
    }
  }
  EXPECT_NE(man.find(".SH POLICY FORMAT"), std::string::npos);
  auto groff = runProcess({"/bin/sh", "-c", "command -v groff >/dev/null || exit 77; groff -man -ww -z " + std::string(STOCKADE_MAN_PAGE)});
  if (groff.exitCode == 77) GTEST_SKIP() << "groff is not installed";
  EXPECT_EQ(groff.exitCode, 0);
  EXPECT_EQ(groff.err, "") << "groff warnings";
}

TEST_F(CliUxTest, BashCompletesCommandsSubcommandsFlagsAndTheProgram) {
  std::string program = t_.file("work/stockade-completion-probe", "#!/bin/sh\n");
  ASSERT_EQ(::chmod(program.c_str(), 0755), 0);
  auto complete = [](const std::string& words, int cword) {
    auto r = runProcess({"/bin/bash", "-c",
                         "source " + std::string(STOCKADE_BASH_COMPLETION) + "; COMP_WORDS=(" + words +
                             "); COMP_CWORD=" + std::to_string(cword) + "; _stockade; echo \"${COMPREPLY[*]}\""});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return r.out;
  };
  EXPECT_EQ(complete("stockade po", 1), "policy\n");
  EXPECT_EQ(complete("stockade policy na", 2), "narrower\n");
  EXPECT_EQ(complete("stockade policy check --j", 3), "--json\n");
  EXPECT_EQ(complete("stockade run --se", 2), "--settings\n");
  EXPECT_EQ(complete("stockade run --audit-m", 2), "--audit-max-events\n");
  EXPECT_EQ(complete("stockade help policy", 1 + 1), "policy\n");
  EXPECT_EQ(complete("stockade run -- " + work_ + "/stockade-completion-pr", 3), program + "\n") << "after --, the program";
}

}  // namespace
}  // namespace stockade
