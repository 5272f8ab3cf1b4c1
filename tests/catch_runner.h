// Runs Catch2's session for the test binaries that write their own main() (exit 77 when the
// hardware is missing, MPI set up first). Catch2 v2 declares Catch::Session only where its
// implementation is compiled, so the one session lives in catch_runner.cc.
#pragma once

namespace fb::test {
int runCatchSession(int argc, char** argv);
}
