#include "policy/srt_settings.h"

#include <algorithm>
#include <array>

namespace stockade::policy {
namespace {

using enum SrtHandling;

constexpr SrtKey flag(std::string_view path, SrtHandling whenTrue, SrtHandling whenFalse, std::string_view why) {
  return {path, true, whenTrue, whenFalse, kSame, why};
}
constexpr SrtKey any(std::string_view path, SrtHandling handling, std::string_view why) {
  return {path, false, kSame, kSame, handling, why};
}

// sandbox-runtime 0.0.83's settings schema, less the keys that are stockade
// fields (the four filesystem lists, allowedDomains, deniedDomains,
// allowUnixSockets, allowAllUnixSockets, allowLocalBinding) and the three the
// parser reads itself (credentials, network.deniedResolvedAddresses,
// mandatoryDenySearchDepth).
constexpr std::array kKeys = {
    any("ignoreViolations", kStronger, "no violation is ignored: every denied call is refused and audited"),
    flag("enableWeakerNestedSandbox", kRefused, kSame,
         "stockade never runs a weaker sandbox; run it where unprivileged user namespaces are allowed"),
    flag("allowNestedUserNamespaces", kRefused, kSame,
         "a user namespace of the command's own could take away the read-only binds that hold denyWrite and the "
         "mandatory denies; stockade's seccomp filter refuses it"),
    any("enableWeakerNetworkIsolation", kNotApplicable, "macOS only (com.apple.trustd.agent)"),
    any("allowAppleEvents", kNotApplicable, "macOS only"),
    any("allowPty", kNotApplicable, "macOS only; on Linux the sandbox has its own /dev/pts"),
    any("ripgrep", kNotApplicable, "stockade finds mandatory-deny names itself, without ripgrep"),
    any("seccomp", kNotApplicable, "stockade installs its own seccomp filter"),
    any("bwrapPath", kNotApplicable, "stockade does not use bubblewrap"),
    any("socatPath", kNotApplicable, "stockade does not use socat: the proxy listens in the sandbox's own network"),
    any("javaAgentJarPath", kNotApplicable, "stockade injects no JVM agent"),
    any("windows", kNotApplicable, "Windows only"),
    any("git", kNotApplicable, "stockade injects no git configuration"),
    any("credentials.allowPlaintextInject", kNotApplicable,
        "only for masked credentials, which stockade does not mask but denies"),
    any("credentials.awsPairs", kNotApplicable, "only for masked credentials, which stockade does not mask but denies"),
    any("credentials.sigv4", kNotApplicable, "only for masked credentials, which stockade does not mask but denies"),
    any("network.deniedDomainReasons", kNotApplicable, "a denial names the entry that decided it, not a custom reason"),
    flag("network.strictAllowlist", kSame, kStronger,
         "there is no ask callback: a host outside allowedDomains is always denied"),
    any("network.allowMachLookup", kNotApplicable, "macOS only"),
    any("network.httpProxyPort", kNotApplicable, "stockade's own proxy always carries and filters the traffic"),
    any("network.socksProxyPort", kNotApplicable, "stockade's own proxy always carries and filters the traffic"),
    any("network.mitmProxy", kNotApplicable, "stockade connects allowed destinations itself, through no upstream proxy"),
    any("network.parentProxy", kNotApplicable, "stockade connects allowed destinations itself, through no upstream proxy"),
    any("network.tlsTerminate", kNotApplicable,
        "stockade does not terminate TLS; allowedDomains and deniedDomains apply to every tunnel"),
    any("network.filterRequest", kRefused, "a library callback: a settings file cannot hold one, and stockade has none"),
    any("network.allowPlaintextHeaderSet", kNotApplicable, "only with filterRequest"),
    any("network.ambiguousRequestTarget", kNotApplicable, "only with filterRequest"),
    any("network.stripResponseHeaders", kNotApplicable, "stockade does not rewrite responses"),
    flag("network.refuseOpaqueTunnels", kRefused, kSame,
         "stockade relays CONNECT and SOCKS tunnels without looking inside them, so it cannot refuse them by content"),
    flag("network.requireHostMatch", kRefused, kSame,
         "stockade does not compare a request's Host header with its destination"),
    flag("filesystem.disabled", kRefused, kSame, "stockade always enforces the filesystem rules"),
    flag("filesystem.allowGitConfig", kRefused, kSame,
         ".git/config can name programs git runs (core.fsmonitor, core.sshCommand); it stays read-only"),
};

}  // namespace

std::span<const SrtKey> srtKeys() noexcept { return kKeys; }

const SrtKey* findSrtKey(std::string_view path) noexcept {
  auto it = std::find_if(kKeys.begin(), kKeys.end(), [&](const SrtKey& k) { return k.path == path; });
  return it == kKeys.end() ? nullptr : &*it;
}

SrtHandling srtHandling(const SrtKey& key, bool value) noexcept { return value ? key.whenTrue : key.whenFalse; }

}  // namespace stockade::policy
