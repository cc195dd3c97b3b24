//===- Expect.h - the runtime tests' check macro ----------------*- C++ -*-===//
//
// EXPECT(cond, printf-style message): prints "FAIL file:line: message" and
// counts a failure when `cond` is false; tests may call it from any thread.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TESTS_EXPECT_H
#define BRAID_RUNTIME_TESTS_EXPECT_H

#include <atomic>
#include <cstdio>

namespace braid::rt {

/// The failures EXPECT has counted.
inline std::atomic<int> &expectFailures() {
  static std::atomic<int> failures{0};
  return failures;
}

} // namespace braid::rt

#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::printf("FAIL %s:%d: ", __FILE__, __LINE__);                         \
      std::printf(__VA_ARGS__);                                                \
      std::printf("\n");                                                       \
      ++braid::rt::expectFailures();                                           \
    }                                                                          \
  } while (0)

#endif // BRAID_RUNTIME_TESTS_EXPECT_H
