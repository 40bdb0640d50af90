// A host application: admit a policy, narrow it, run a command, dispose.
// Prints the child's output and the rules' fingerprint; exit 0 on success.
#include <stockade/stockade.h>

#include <iostream>

int main() {
  using namespace stockade;
  try {
    SandboxPolicy p = SandboxPolicy::fromJson(R"({"filesystem": {"allowWrite": ["/var/tmp"]},
                                                 "env": {"allow": ["PATH"]}})");
    SandboxHandle h = SandboxManager::instance().createSandbox(p);
    DerivedRules rules = h.effectivePolicy();
    Epoch e = h.epoch();
    h.narrow(SandboxPolicy::fromJson(R"({"filesystem": {"allowWrite": []}, "env": {"allow": ["PATH"]}})"));
    RunOptions o{.argv = {"/bin/echo", "hi"}, .correlationId = "c-1", .cwd = "/"};
    o.env = {{"FOO", "bar"}};
    stockade::Run r = h.run(std::move(o));
    RunOutput out = r.collect();
    std::cout << "output: " << out.out << "exit: " << out.completion.exitCode << "\n"
              << "admitted: " << rules.fingerprint() << "\n";
    h.dispose();
    if (h.isEpochLive(e)) return 1;
    return out.out == "hi\n" && out.completion.exitCode == 0 ? 0 : 1;
  } catch (const SandboxError& err) {
    std::cerr << err.codeName() << ": " << err.what() << "\n";
    return 2;
  }
}
