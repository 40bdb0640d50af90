#include "src/cli/help.h"

#include <algorithm>
#include <array>

#include "stockade/version.h"

namespace stockade::cli {
namespace {

constexpr std::string_view kMainUsage = R"(usage: stockade COMMAND [ARGS]

Runs programs under a policy with kernel enforcement (namespaces, read-only
mounts and masks, Landlock, seccomp, its own egress proxy).

Commands:
  run              run a program under a policy
  policy check     validate a policy and derive it, as run would
  policy derive    print the rules a policy derives to, and where each value came from
  policy narrower  is one policy a narrowing of another?
  policy diff      per-axis difference of two policies
  sandbox create   create a sandbox in a running stockaded (also ls, show, narrow, rm)
  exec             run a program in a sandbox of stockaded, streaming its output
  ps, logs, kill, wait, attach
                   processes of a sandbox: list, output, signal, wait, PTY terminal
  cp, ls           copy files and directories between the host and a sandbox; list one
  persist, restore save a project directory of a sandbox as a checkpoint; put it back
  snapshot         capture a sandbox's workspace with its processes frozen
  code             run Python in a sandbox's kernel, which keeps its state across calls
  help TOPIC       the help of a command ("stockade help policy" documents the policy format)

Options:
  --help     show this help
  --version  print the version
)";

constexpr HelpFlag kRunFlags[] = {
    {"policy", "FILE", "the policy, JSON (see stockade help policy); \"-\" reads standard input"},
    {"settings", "FILE", "the same, as sandbox-runtime users spell it (srt --settings)"},
    {"cwd", "DIR",
     "working directory (default: the current one); relative policy paths\nresolve against it. With --workspace: "
     "in the sandbox's view, relative to\n/workspace (default: /workspace)"},
    {"workspace", "DIR",
     "show DIR at /workspace inside (and at its own path), with the policy's\nrules for DIR; relative policy paths "
     "resolve against DIR. Without it the\nprogram sees only the host's paths"},
    {"env", "NAME=VALUE",
     "set a variable after the policy's env.allow names; the proxy variables\n"
     "(HTTP_PROXY, ...) are refused when stockade sets them, that is when the\npolicy allows domains",
     true},
    {"timeout-ms", "N", "kill the child's whole sandbox after N milliseconds (exit 124)"},
    {"resolve", "HOST=ADDR", "the proxy connects to IP address ADDR for HOST (trusted operator input)", true},
    {"audit", "FILE",
     "append one JSON line per enforcement event; FILE must lie outside every\n"
     "writable path of the policy, and is never followed through a symlink"},
    {"tty", "",
     "give the program a fresh pseudo-terminal, relayed to this one (the default\n"
     "when stdin and stdout are terminals): raw mode here, restored at the end;\n"
     "window size changes are passed on",
     false, 't'},
    {"no-tty", "",
     "no pseudo-terminal: the program gets stdin, stdout and stderr as they are;\n"
     "a terminal among them has its attributes restored at the end, and the\n"
     "terminal ioctls whose effect outlives the program are refused",
     false, 'T'},
    {"quiet", "", "write no warning or note on stderr (they go to the --audit log); only an\n"
                  "error that ends stockade is printed"},
    {"strict", "", "refuse to run when any enforcement layer is weaker than the policy asks\n"
                   "(a degradation), instead of warning (exit 125)"},
    {"audit-max-events", "N",
     "write at most N decisions (denials, proxy verdicts) for this run (default\n"
     "10000, 0: no cap); repeats of one decision are counted, the decisions\n"
     "dropped past the cap are counted at the end, and spawn and exit are\nalways written"},
};

constexpr HelpFlag kCwdFlag[] = {
    {"cwd", "DIR", "relative policy paths resolve against DIR (default: the current directory)"},
};
constexpr HelpFlag kCwdJsonFlags[] = {
    {"cwd", "DIR", "relative policy paths resolve against DIR (default: the current directory)"},
    {"json", "", "print the outcome as one JSON object on standard output"},
};

constexpr std::string_view kRunDetails = R"(The policy is, in order: --policy or --settings; else ~/.srt-settings.json
when it exists (sandbox-runtime's default location); else the bundled default
policy (credential stores unreadable, "." writable, no network, env PATH HOME
LANG TERM). A sandbox-runtime settings key that does not apply to stockade is
named in one warning; one that would weaken enforcement is refused.

Every line stockade writes on stderr starts with "stockade", so its
diagnostics stand apart from the program's own output there; --quiet leaves
the program's output alone on stderr. Security teams: use --strict.

Exit status: the child's; 128+N when it died of signal N; 124 when
--timeout-ms expired; 125 when stockade failed (a bad flag or policy, a setup
step: the message names the step, the system call and errno); 126 the program
is not executable; 127 not found.)";

constexpr std::string_view kPolicyDetails = R"(Subcommands (stockade policy SUBCOMMAND --help for each):
  check FILE [--cwd DIR] [--json]           validate and derive, as run would
  derive FILE [--cwd DIR]                   the DerivedRules as JSON, with each field's source
  narrower BASE CANDIDATE [--cwd DIR] [--json]
                                            exit 0 narrower or equal, 3 widens
  diff A B [--cwd DIR]                      per-axis added/removed entries as JSON

FILE may be "-" for standard input. Exit status 2: invalid input (every
problem of a file is reported, each naming its JSON path, the value and the
fix).)";

constexpr std::string_view kCheckDetails = R"(Parses FILE and derives its rules against the live file system (relative
paths against --cwd, "~" against $HOME), as stockade run would, and checks
that the sandbox this machine would build enforces every rule (a writable tree
the host does not have and no writable tree holds, a mask that would hide the
default write paths, ...): a file that passes check does not fail at run
because of what it says. Exit 0 valid, 2
invalid, with every problem on standard error (or under "problems" with
--json). Sandbox-runtime settings keys that do not apply to stockade are named
in one warning.)";

constexpr std::string_view kDeriveDetails = R"(Prints {"fingerprint", "rules", "sources"}: the DerivedRules stockade would
enforce (absolute real paths, glob matches, default write paths, the protected
names and the hooks directories git's configuration names, normalised domains),
the SHA-256 of their canonical JSON,
and for every policy field whether its value came from the "file" or is the
bundled "default" (a field the file leaves out).)";

constexpr std::string_view kNarrowerDetails = R"(Exit 0 when every path CANDIDATE lets a child read or write, every
destination it allows, every variable it passes and every limit lies within
BASE; 3 when it widens (the message names the axis and the first widening
entry); 2 for invalid input.)";

constexpr std::string_view kDiffDetails = R"(Prints {"axes": {AXIS: {"added", "removed"}}, "widens", "widening"} for the
derived rules of A and B. Exit 0.)";

constexpr std::string_view kPolicyFormat = R"(POLICY FORMAT
A policy is a JSON object; field names follow Anthropic's sandbox-runtime
settings, so its settings files load as they are:

  {"filesystem": {"denyRead": [...], "allowRead": [...], "allowWrite": [...], "denyWrite": [...]},
   "network": {"allowedDomains": [...], "deniedDomains": [...], "allowUnixSockets": [...],
               "allowAllUnixSockets": false, "allowLocalBinding": false},
   "env": {"allow": [...]},
   "limits": {"memoryBytes": 0, "pids": 0, "cpuSeconds": 0, "fileSizeBytes": 0}}

A section or field the policy leaves out takes the bundled default's value;
an explicit value, [] included, replaces it (stockade policy derive shows
which is which). Unknown keys, duplicate keys and wrong types are errors.

filesystem.denyRead    paths the child cannot read (masked). Globs: * ? [...]
                       and ** (any depth), expanded to what exists when the
                       rules are derived.
filesystem.allowRead   carve-outs inside denied trees (globs too); the most
                       specific entry wins.
filesystem.allowWrite  the only writable trees (no globs; "dir/**" is dir),
                       besides /dev/null, /dev/std*, /dev/tty and the private
                       /tmp.
filesystem.denyWrite   read-only inside writable trees (globs too). Shell rc
                       files, .gitconfig, git hooks and config, .vscode,
                       .idea, .mcp.json and .claude settings are always
                       read-only, at every depth.
  A path is absolute, "~/..." or relative to the working directory; every
  symlink on it is resolved. {"path": P, "literal": true} names P exactly,
  never as a pattern.
network.allowedDomains "host", "*.host" (subdomains, not the apex),
                       "host:port", IP literals. No network without any.
network.deniedDomains  win over allowedDomains; also "*" and "*:port".
network.allowUnixSockets, allowAllUnixSockets
                       unix sockets (a list of paths allows socket(AF_UNIX)
                       as a whole, reported as weaker than asked).
network.allowLocalBinding
                       servers may listen on the sandbox's own loopback.
env.allow              host variables the child sees ([A-Za-z_][A-Za-z0-9_]*).
limits.*               0 is no limit; pids counts tasks.

Sandbox-runtime keys that are not stockade fields are accepted when they do
not apply on Linux or to stockade (one warning lists them), noted when
stockade enforces more than they ask (mandatoryDenySearchDepth: every depth
is protected), and refused when honouring them would weaken enforcement
(enableWeakerNestedSandbox, allowNestedUserNamespaces, filesystem.disabled,
...). docs/srt-compat.md lists every key.)";

// Every command that talks to a daemon takes these.
#define STOCKADE_CLIENT_FLAGS                                                                        \
  {"connect", "ADDR",                                                                                \
   "the daemon: unix:PATH or HOST:PORT (default $STOCKADE_CONNECT, else\n"                           \
   "unix:/run/stockade/stockaded.sock)"},                                                            \
      {"token-file", "FILE", "the daemon's bearer token, its first line (default $STOCKADE_TOKEN_FILE)"}, \
      {"json", "", "print the daemon's JSON replies"}

constexpr HelpFlag kClientFlags[] = {STOCKADE_CLIENT_FLAGS};
constexpr HelpFlag kSandboxCreateFlags[] = {
    {"policy", "FILE", "the sandbox's policy; it must narrow the daemon's (default: the bundled\ndefault policy)"},
    {"workspace", "DIR", "an existing host directory as its workspace (default: one the daemon\ncreates, and removes at rm)"},
    {"from-snapshot", "ID", "fill the new workspace from a snapshot (stockade snapshot prints its id)"},
    STOCKADE_CLIENT_FLAGS};
constexpr HelpFlag kSandboxNarrowFlags[] = {
    {"policy", "FILE", "the narrower policy"},
    STOCKADE_CLIENT_FLAGS};
constexpr HelpFlag kExecFlags[] = {
    {"cwd", "DIR",
     "its working directory, absolute, in the sandbox (default: /workspace,\nwhere the sandbox's workspace is mounted)"},
    {"env", "NAME=VALUE", "a variable added after the policy's env.allow names", true},
    {"timeout-ms", "N", "the daemon kills it after N milliseconds (exit 124)"},
    {"key", "KEY", "its processKey: the durable name terminate and crash recovery use"},
    {"name", "NAME", "a name shown by ps"},
    {"stdin", "", "send this standard input to it (otherwise it reads EOF)"},
    {"detach", "", "print its id and return at once instead of streaming"},
    STOCKADE_CLIENT_FLAGS};
constexpr HelpFlag kPsFlags[] = {
    {"state", "STATE", "running, terminal or all (default)"},
    STOCKADE_CLIENT_FLAGS};
constexpr HelpFlag kLogsFlags[] = {
    {"follow", "", "follow the output until the process ends, across lost connections", false, 'f'},
    {"since", "CURSOR", "only output after this cursor (--json prints every frame's)"},
    STOCKADE_CLIENT_FLAGS};
constexpr HelpFlag kKillFlags[] = {
    {"signal", "SIGNAL", "TERM (default), KILL, INT, HUP, QUIT, USR1 or USR2"},
    {"escalate-after", "MS", "send KILL if anything of it is left MS milliseconds later"},
    STOCKADE_CLIENT_FLAGS};
constexpr HelpFlag kWaitFlags[] = {
    {"timeout-ms", "N", "give up after N milliseconds (exit 124; the process goes on)"},
    STOCKADE_CLIENT_FLAGS};
constexpr HelpFlag kPersistFlags[] = {
    {"exclude", "NAME", "a directory name to leave out, at any depth, beside the default excludes", true},
    {"timeout", "SECONDS", "give up after this long (1 to 86400; default 180)"},
    STOCKADE_CLIENT_FLAGS};
constexpr HelpFlag kRestoreFlags[] = {
    {"timeout", "SECONDS", "give up after this long (1 to 86400; default 180)"},
    STOCKADE_CLIENT_FLAGS};
constexpr HelpFlag kSnapshotFlags[] = {
    {"key", "KEY", "its operation key (default: a new random one): the same key answers with the\nsame snapshot"},
    {"lookup", "KEY", "print the snapshot taken under KEY instead of taking one"},
    STOCKADE_CLIENT_FLAGS};
constexpr HelpFlag kCodeFlags[] = {
    {"language", "LANG", "the code's language: python (the default, and the only one)"},
    {"timeout", "SECONDS", "interrupt the code after this long (a fraction allowed); the kernel keeps\nits state"},
    STOCKADE_CLIENT_FLAGS};
#undef STOCKADE_CLIENT_FLAGS

constexpr std::string_view kSandboxDetails = R"(These commands talk to a running stockaded (docs/api.md). Its sandboxes
each have a policy, which must narrow the daemon's own (stockaded --policy);
a section or field the policy file leaves out takes the bundled default's
value. Exit status: 0; 1 when the daemon refused (the message ends with its
code, such as (E_SANDBOX_POLICY_CONFLICT)) or could not be reached; 2 for a
usage error.)";

constexpr std::string_view kExecDetails = R"(PROGRAM runs directly (argv, no shell): use /bin/sh -c 'LINE' for a shell.
Its stdout and stderr stream to stockade's as they come, resumed from the
last cursor if the connection is lost. Exit status: the program's; 128+N
when it died of signal N; 124 when --timeout-ms killed it; 125 when it was
lost or could not be supervised; 1 when the daemon refused to start it (a
program that does not exist: E_SANDBOX_SPAWN_FAILED naming execve and
ENOENT); 2 for a usage error.)";

constexpr std::string_view kProcessDetails = R"(PROCESS is the id exec --detach or ps prints. Exit status: 0; for wait,
the process's status (as exec's); 1 when the daemon refused; 2 for a usage
error.)";

constexpr std::string_view kAttachDetails = R"(The process must be a PTY (POST /v1/sandboxes/ID/ptys). This terminal is
put in raw mode while attached and restored on every way out; its window
size is sent when attaching and on every change. Ctrl-] detaches (the
process goes on). Exit status: the process's when it ended, 0 when detached.)";

constexpr std::string_view kCpDetails = R"(One of SRC and DST is SANDBOX:PATH, PATH beneath /workspace (absolute, or
relative to it: sb_1:src/main.c); the other a host path (./a:b for one with a
colon). Files stream as raw bytes, any size, in bounded memory; a directory
goes as a tar tree (its content into DST, created when missing). Into a
sandbox, every name is judged by the sandbox's policy (invalid_path,
permission_denied). Out of a sandbox, a tree is untrusted: it is extracted by
stockade's own importer, as strictly as into a sandbox (no "..", no links
leading out, no devices, no protected names such as .git/hooks or .bashrc:
such an archive is refused whole and nothing is written). A file is written
beside DST and renamed over it once complete. Progress is shown on stderr for
transfers over 4 MiB when stdout is a terminal. Exit status: 0; 1 when the
daemon refused or could not be reached; 2 for a usage error.)";

constexpr std::string_view kPersistDetails = R"(PATH is a directory beneath /workspace (not /workspace itself). persist
archives it, leaving out node_modules .next .git dist build out coverage
.cache .turbo .vite .parcel-cache __pycache__ .venv venv .edgeone and every
--exclude, and keeps it in the daemon's state directory (at most
stockaded --max-persist-bytes, 25 MiB: SANDBOX_LIMIT_EXCEEDED beyond).
restore replaces the directory with it, in this sandbox or a later one, once
its size and SHA-256 match (SANDBOX_DATA_CORRUPTED otherwise, the directory
untouched). Exit status: 0; 1 when the daemon refused, or when there was no
checkpoint to restore; 2 for a usage error.)";

constexpr std::string_view kCodeDetails = R"(Runs CODE (or standard input, with "-") in the sandbox's Python kernel: an
IPython shell that is a process of the sandbox, under its policy, and keeps
variables, imports and functions from one call to the next until the sandbox
is removed. Prints what the code wrote (stdout and stderr as it wrote them),
then its results: the last expression's value as text, and the rich formats
of each result by name (html, png, ...); an exception's traceback goes to
stderr. Calls on one sandbox run one at a time. --json prints the daemon's
Execution. Exit status: 0; 1 when the code raised, or the daemon refused or
could not be reached; 124 when --timeout interrupted it (the state is kept);
125 when the kernel ended (its state is lost: the next call starts afresh);
2 for a usage error.)";

constexpr std::string_view kSnapshotDetails = R"(Freezes every process of the sandbox, archives its whole workspace with its
SHA-256, thaws them, and returns once the snapshot is on disk; prints its id
(details on stderr). The daemon records the key before it captures: run the
same command with the same --key (or --lookup KEY) to find a snapshot whose
reply was lost. stockade sandbox create --from-snapshot ID starts a sandbox
from it. Exit status: 0; 1 when the daemon refused (not_quiescent: a process
could not be frozen); 2 for a usage error.)";

constexpr std::array kTopics = {
    HelpTopic{"run",
              "[--policy FILE | --settings FILE] [--workspace DIR] [--cwd DIR] [--env NAME=VALUE]...\n"
              "             [--timeout-ms N]"
              "             [--resolve HOST=ADDR]... [--quiet] [--strict] [--audit FILE]\n"
              "             [--audit-max-events N] [-t|-T] -- PROGRAM [ARG...]",
              "run a program under a policy", kRunFlags, kRunDetails},
    HelpTopic{"policy", "SUBCOMMAND ...", "check, derive, compare and diff policies", {}, kPolicyDetails},
    HelpTopic{"policy check", "FILE [--cwd DIR] [--json]", "validate a policy and derive it, as run would",
              kCwdJsonFlags, kCheckDetails},
    HelpTopic{"policy derive", "FILE [--cwd DIR]", "print the rules a policy derives to, as JSON", kCwdFlag,
              kDeriveDetails},
    HelpTopic{"policy narrower", "BASE CANDIDATE [--cwd DIR] [--json]", "is CANDIDATE a narrowing of BASE?",
              kCwdJsonFlags, kNarrowerDetails},
    HelpTopic{"policy diff", "A B [--cwd DIR]", "per-axis difference of the derived rules of A and B", kCwdFlag,
              kDiffDetails},
    HelpTopic{"sandbox", "SUBCOMMAND ...", "create, list, show, narrow and close sandboxes of a running stockaded",
              {}, kSandboxDetails},
    HelpTopic{"sandbox create", "[--policy FILE] [--workspace DIR] [--from-snapshot ID]", "create a sandbox; prints its id",
              kSandboxCreateFlags, kSandboxDetails},
    HelpTopic{"sandbox ls", "", "list the sandboxes: id, state, created, workspace", kClientFlags, kSandboxDetails},
    HelpTopic{"sandbox show", "ID", "one sandbox, with its live derived rules", kClientFlags, kSandboxDetails},
    HelpTopic{"sandbox narrow", "ID --policy FILE", "narrow one sandbox's policy (never another's)",
              kSandboxNarrowFlags, kSandboxDetails},
    HelpTopic{"sandbox rm", "ID...", "close sandboxes: kill their processes, release them", kClientFlags,
              kSandboxDetails},
    HelpTopic{"exec", "SANDBOX [--cwd DIR] [--env NAME=VALUE]... [--timeout-ms N] [--key KEY] [--stdin]\n"
                      "             [--detach] [--] PROGRAM [ARG...]",
              "run a program in a sandbox of stockaded and stream its output", kExecFlags, kExecDetails},
    HelpTopic{"ps", "SANDBOX [--state running|terminal|all]", "a sandbox's processes: id, kind, state, exit, command",
              kPsFlags, kProcessDetails},
    HelpTopic{"logs", "SANDBOX PROCESS [-f] [--since CURSOR]", "a process's output: stdout to stdout, stderr to stderr",
              kLogsFlags, kProcessDetails},
    HelpTopic{"kill", "SANDBOX PROCESS [--signal SIGNAL] [--escalate-after MS]",
              "signal every process of a process's sandbox", kKillFlags, kProcessDetails},
    HelpTopic{"wait", "SANDBOX PROCESS [--timeout-ms N]", "wait for a process to end; exit with its status",
              kWaitFlags, kProcessDetails},
    HelpTopic{"attach", "SANDBOX PROCESS", "attach this terminal to a PTY process", kClientFlags, kAttachDetails},
    HelpTopic{"cp", "SRC DST", "copy a file or a directory between the host and a sandbox (SANDBOX:PATH)",
              kClientFlags, kCpDetails},
    HelpTopic{"ls", "SANDBOX[:PATH]", "list a directory of a sandbox's workspace: type and name", kClientFlags,
              kCpDetails},
    HelpTopic{"persist", "SANDBOX PATH [--exclude NAME]... [--timeout SECONDS]",
              "save a project directory of a sandbox as its checkpoint", kPersistFlags, kPersistDetails},
    HelpTopic{"restore", "SANDBOX PATH [--timeout SECONDS]", "replace a project directory with its checkpoint",
              kRestoreFlags, kPersistDetails},
    HelpTopic{"snapshot", "SANDBOX [--key KEY] | --lookup KEY",
              "capture a sandbox's workspace with its processes frozen; prints the snapshot's id", kSnapshotFlags,
              kSnapshotDetails},
    HelpTopic{"code", "SANDBOX [--language LANG] [--timeout SECONDS] CODE|-",
              "run code in a sandbox's kernel, which keeps its state across calls", kCodeFlags, kCodeDetails},
};

// Text indented by `n` spaces, line by line.
std::string indent(std::string_view text, std::size_t n) {
  std::string out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    out.append(n, ' ').append(text.substr(0, nl)).push_back('\n');
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  return out;
}

std::string flagLabel(const HelpFlag& f) {
  std::string label = (f.shortName ? std::string("-") + f.shortName + ", " : std::string()) + "--" + std::string(f.name);
  if (!f.value.empty()) label += " " + std::string(f.value);
  return label;
}

// man(7) text: a leading "." or "'" and every "\" must not reach troff as markup.
std::string roff(std::string_view text) {
  std::string out;
  bool lineStart = true;
  for (char c : text) {
    if (lineStart && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\') out += "\\e";
    else if (c == '-') out += "\\-";
    else out += c;
    lineStart = c == '\n';
  }
  return out;
}

// Preformatted text in a man page.
std::string roffBlock(std::string_view text) { return ".nf\n" + roff(text) + "\n.fi\n"; }

}  // namespace

std::span<const HelpTopic> helpTopics() noexcept { return kTopics; }

const HelpTopic* findHelpTopic(std::string_view command) noexcept {
  auto it = std::find_if(kTopics.begin(), kTopics.end(), [&](const HelpTopic& t) { return t.command == command; });
  return it == kTopics.end() ? nullptr : &*it;
}

std::string_view mainUsage() noexcept { return kMainUsage; }

std::string_view policyFormatText() noexcept { return kPolicyFormat; }

std::string helpText(const HelpTopic& topic) {
  std::string out = "usage: stockade " + std::string(topic.command) + " " + std::string(topic.synopsis) + "\n\n" +
                    std::string(topic.summary) + "\n";
  if (!topic.flags.empty()) {
    out += "\nOptions:\n";
    constexpr std::size_t kColumn = 22;
    for (const auto& f : topic.flags) {
      std::string label = "  " + flagLabel(f);
      std::string text = indent(std::string(f.text) + (f.repeatable ? " (repeatable)" : ""), kColumn);
      if (label.size() < kColumn) out += label + text.substr(label.size());  // the label in the first line's indent
      else out += label + "\n" + text;
    }
    out += "  --help              show this help\n";
  }
  out += "\n" + std::string(topic.details) + "\n";
  if (topic.command == "policy") out += "\n" + std::string(kPolicyFormat) + "\n";
  return out;
}

std::vector<FlagSpec> flagSpecs(const HelpTopic& topic) {
  std::vector<FlagSpec> specs;
  for (const auto& f : topic.flags)
    specs.push_back({std::string(f.name), !f.value.empty(), f.repeatable, f.shortName});
  return specs;
}

std::string manPage() {
  std::string out = ".TH STOCKADE 1 \"\" \"stockade " + std::string(version()) + "\" \"User Commands\"\n";
  out += ".SH NAME\nstockade \\- run programs under a policy with kernel enforcement\n";
  out += ".SH SYNOPSIS\n.nf\n";
  for (const auto& t : kTopics) out += roff("stockade " + std::string(t.command) + " " + std::string(t.synopsis)) + "\n";
  out += "stockade help TOPIC\n.fi\n";
  out += ".SH DESCRIPTION\n" + roffBlock(kMainUsage);
  out += ".SH COMMANDS\n";
  for (const auto& t : kTopics) {
    out += ".SS " + roff("stockade " + std::string(t.command)) + "\n" + roff(t.summary) + ".\n";
    for (const auto& f : t.flags) {
      out += ".TP\n.B " + roff(flagLabel(f)) + "\n" + roff(f.text) + (f.repeatable ? " (repeatable)" : "") + "\n";
    }
    out += ".PP\n" + roffBlock(t.details);
  }
  out += ".SH POLICY FORMAT\n" + roffBlock(kPolicyFormat.substr(kPolicyFormat.find('\n') + 1));
  out += ".SH FILES\n.TP\n.I ~/.srt-settings.json\nthe policy of stockade run when neither --policy nor --settings is given "
         "(sandbox-runtime's settings file)\n";
  out += ".SH SEE ALSO\n.BR bwrap (1),\n.BR landlock (7),\n.BR seccomp (2)\n";
  return out;
}

std::string bashCompletion() {
  std::string out = "# bash completion for stockade (generated by stockade_doc from src/cli/help.cc)\n";
  out += "_stockade() {\n  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} i\n";
  out += "  for ((i = 1; i < COMP_CWORD; i++)); do\n";
  out += "    if [[ ${COMP_WORDS[i]} == -- ]]; then\n";
  out += "      if ((i + 1 == COMP_CWORD)); then COMPREPLY=($(compgen -c -- \"$cur\")); else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n";
  out += "      return\n    fi\n  done\n";
  // Commands, and the subcommands of those that have them ("policy check").
  std::vector<std::string> commands, parents;
  for (const auto& t : kTopics) {
    std::string first(t.command.substr(0, t.command.find(' ')));
    if (std::find(commands.begin(), commands.end(), first) == commands.end()) commands.push_back(first);
    if (t.command.find(' ') != std::string_view::npos &&
        std::find(parents.begin(), parents.end(), first) == parents.end())
      parents.push_back(first);
  }
  std::string words;
  for (const auto& c : commands) words += c + " ";
  out += "  if ((COMP_CWORD == 1)); then COMPREPLY=($(compgen -W \"" + words +
         "help --help --version\" -- \"$cur\")); return; fi\n";
  out += "  local topic=${COMP_WORDS[1]}\n";
  for (const auto& parent : parents) {
    std::string subcommands;
    for (const auto& t : kTopics)
      if (t.command.starts_with(parent + " "))
        subcommands += (subcommands.empty() ? "" : " ") + std::string(t.command.substr(parent.size() + 1));
    out += "  if [[ $topic == " + parent + " ]] && ((COMP_CWORD == 2)); then COMPREPLY=($(compgen -W \"" +
           subcommands + "\" -- \"$cur\")); return; fi\n";
    out += "  [[ $topic == " + parent + " ]] && topic=\"" + parent + " ${COMP_WORDS[2]}\"\n";
  }
  out += "  if [[ $topic == help ]] && ((COMP_CWORD == 2)); then COMPREPLY=($(compgen -W \"" + words +
         "\" -- \"$cur\")); return; fi\n";
  out += "  case $prev in\n";
  std::string fileFlags, dirFlags;
  for (const auto& t : kTopics) {
    for (const auto& f : t.flags) {
      std::string flag = "--" + std::string(f.name);
      std::string& list = f.value == "DIR" ? dirFlags : fileFlags;
      if ((f.value == "FILE" || f.value == "DIR") && list.find(flag + "|") == std::string::npos &&
          !list.ends_with(flag))
        list += (list.empty() ? "" : "|") + flag;
    }
  }
  if (!fileFlags.empty()) out += "    " + fileFlags + ") COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n";
  if (!dirFlags.empty()) out += "    " + dirFlags + ") COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n";
  out += "  esac\n  local flags\n  case $topic in\n";
  for (const auto& t : kTopics) {
    std::string flags = "--help";
    for (const auto& f : t.flags) flags += " --" + std::string(f.name);
    if (t.command == "run" || t.command == "exec") flags += " --";
    out += "    \"" + std::string(t.command) + "\") flags=\"" + flags + "\" ;;\n";
  }
  out += "  esac\n";
  out += "  if [[ $cur == -* || $topic == run || $topic == exec ]]; then COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\")); "
         "else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n}\ncomplete -F _stockade stockade\n";
  return out;
}

}  // namespace stockade::cli
