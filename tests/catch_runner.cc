// Catch2's implementation without its main(), compiled once for the test binaries that write
// their own main(); the others link Catch2::Catch2WithMain, Debian's prebuilt one with main().
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_runner.h"

int fb::test::runCatchSession(int argc, char** argv) { return Catch::Session().run(argc, argv); }
