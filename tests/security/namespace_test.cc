// What the sandbox's own namespaces hide, where no other layer does: a host
// SysV message queue (no filter row or mount stands between a program and
// msgget()), beside the queue the program makes for itself.
#include <sys/ipc.h>
#include <sys/msg.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "tests/security/sandbox_fixture.h"

namespace stockade::testing {
namespace {

using NamespaceTest = SandboxTest;

TEST_F(NamespaceTest, AHostMessageQueueIsInvisibleWhileOneMadeInsideIsListed) {
  const key_t key = 0x5c0000 | (::getpid() & 0xffff);
  const int queue = ::msgget(key, IPC_CREAT | IPC_EXCL | 0600);
  ASSERT_GE(queue, 0) << "msgget(" << key << "): " << std::strerror(errno);
  // /proc/sysvipc/msg lists the queues of the reader's IPC namespace, keys in decimal.
  auto argv = stockadeArgv();
  argv.insert(argv.end(), {"/bin/sh", "-c", "ipcmk -Q >/dev/null && echo made; awk 'NR > 1 { print $1 }' /proc/sysvipc/msg"});
  auto r = runProcess(argv);
  ::msgctl(queue, IPC_RMID, nullptr);
  ASSERT_TRUE(r.out.starts_with("made\n")) << r.out << r.err;
  EXPECT_EQ(r.out.find("\n" + std::to_string(key) + "\n"), std::string::npos) << "the host's queue is visible: " << r.out;
  // Only the program's own queue.
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
}

}  // namespace
}  // namespace stockade::testing
