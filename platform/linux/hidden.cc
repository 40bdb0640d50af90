// Parent side only (it allocates and makes system calls): explains failures.
#include "platform/linux/hidden.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "policy/paths.h"
#include "policy/text.h"

namespace stockade::platform {
namespace {

// As maskOf() for a host path as written and as its real path: both must
// show (a carve-out of /usr does not make the link /lib64 -> usr/lib64 appear).
std::string hiddenBy(const MountPlan& mounts, const std::string& path) {
  if (auto mask = maskOf(mounts, mounts.workspace.hostPath(policy::lexicallyNormal(path))); !mask.empty()) return mask;
  std::string mask;
  if (char* real = ::realpath(path.c_str(), nullptr)) {
    mask = maskOf(mounts, real);
    std::free(real);
  }
  return mask;
}

// The program file execve() would run (PATH searched on the host, as the
// child does in the sandbox), and its interpreter ("#!" line or ELF
// PT_INTERP): what must be visible for the exec to work.
std::vector<std::string> programFiles(const ProgramRequest& program) {
  std::vector<std::string> out;
  const std::string& name = program.argv[0];
  if (name.find('/') != std::string::npos) {
    out.push_back(name.front() == '/' ? name : program.cwd + "/" + name);
  } else {
    std::string path = "/usr/local/bin:/usr/bin:/bin";
    for (const auto& e : program.env)
      if (e.starts_with("PATH=")) path = e.substr(5);
    for (std::size_t at = 0; at <= path.size();) {
      std::size_t end = std::min(path.find(':', at), path.size());
      std::string dir = end > at ? path.substr(at, end - at) : ".";
      std::string candidate = (dir.front() == '/' ? dir : program.cwd + "/" + dir) + "/" + name;
      if (::access(candidate.c_str(), F_OK) == 0) {
        out.push_back(candidate);
        break;
      }
      at = end + 1;
    }
  }
  if (out.empty()) return out;
  UniqueFd fd(::open(out.front().c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return out;
  char head[256] = {};
  const ssize_t n = ::pread(fd.get(), head, sizeof head - 1, 0);
  if (n > 2 && head[0] == '#' && head[1] == '!') {
    std::string_view line(head + 2, static_cast<std::size_t>(n - 2));
    line = line.substr(0, line.find('\n'));
    line.remove_prefix(std::min(line.find_first_not_of(" \t"), line.size()));
    line = line.substr(0, line.find_first_of(" \t"));
    if (!line.empty()) out.emplace_back(line);
  } else if (n >= static_cast<ssize_t>(sizeof(Elf64_Ehdr)) && std::memcmp(head, ELFMAG, SELFMAG) == 0 &&
             head[EI_CLASS] == ELFCLASS64) {
    Elf64_Ehdr eh;
    std::memcpy(&eh, head, sizeof eh);
    for (unsigned i = 0; i < eh.e_phnum && i < 64; ++i) {
      Elf64_Phdr ph;
      if (::pread(fd.get(), &ph, sizeof ph, static_cast<off_t>(eh.e_phoff + i * sizeof ph)) != sizeof ph) break;
      if (ph.p_type != PT_INTERP || ph.p_filesz == 0 || ph.p_filesz > 4096) continue;
      std::string interp(ph.p_filesz, '\0');
      if (::pread(fd.get(), interp.data(), interp.size(), static_cast<off_t>(ph.p_offset)) == static_cast<ssize_t>(interp.size()))
        out.emplace_back(interp.c_str());
      break;
    }
  }
  return out;
}

}  // namespace

std::string maskOf(const MountPlan& mounts, const std::string& normal) {
  MountView v = viewAt(mounts, normal);
  if (v.source != MountView::Source::kEmpty) return "";
  if (!v.op && mounts.root == MountPlan::Root::kRebuilt) return "";  // a top-level name the host lacks
  return v.op ? v.op->path : "/";
}

std::string hiddenCwdDetail(const std::string& cwd, const std::string& mask) {
  return "the working directory " + policy::quote(cwd) + " lies in the read-denied " + policy::quote(mask) +
         " (filesystem.denyRead): carve it out with filesystem.allowRead, or run elsewhere";
}

std::string hiddenDetail(SetupStep step, int error, const MountPlan& mounts, const ProgramRequest& program) {
  if (step == SetupStep::kWorkingDir && error == ENOENT) {
    if (std::string mask = hiddenBy(mounts, program.cwd); !mask.empty()) return hiddenCwdDetail(program.cwd, mask);
    if (viewAt(mounts, mounts.workspace.hostPath(policy::lexicallyNormal(program.cwd))).source ==
        MountView::Source::kPrivateTmp)
      return "the sandbox's /tmp is private: a host directory under /tmp is visible inside only when it is "
             "write-allowed (filesystem.allowWrite)";
    return "";
  }
  if (step != SetupStep::kExec || (error != ENOENT && error != ENOTDIR && error != EACCES)) return "";
  for (const auto& file : programFiles(program)) {
    std::string mask = hiddenBy(mounts, file);
    if (mask.empty()) continue;
    const std::string dir = file.substr(0, std::max<std::size_t>(1, file.rfind('/')));
    return policy::quote(file) + " lies in the read-denied " + policy::quote(mask) +
           " (filesystem.denyRead): carve out what the program needs with filesystem.allowRead, e.g. " +
           (mask == "/" ? std::string(R"("allowRead": ["/usr", "/lib", "/lib64", "/bin", "/etc"])")
                        : "\"allowRead\": [" + policy::quote(dir) + "]");
  }
  return "";
}

}  // namespace stockade::platform
