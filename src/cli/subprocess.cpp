#include "cli/subprocess.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>

namespace gpubench::cli {

int run_child(const std::vector<std::string>& args, const std::string& store) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (store.empty()) {
      ::unsetenv(kStoreEnv);
    } else {
      ::setenv(kStoreEnv, store.c_str(), 1);
    }
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "gpubench: could not run %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace gpubench::cli
