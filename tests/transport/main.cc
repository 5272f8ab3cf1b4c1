// transport_conformance: the same cases for every Transport backend, ranks as threads.
//   transport_conformance --transport tcp [catch options]     (or FB_TRANSPORT=verbs)
//   --tcp-if / --ib-dev / --gid-index pass through to TransportOptions.
// Exit 77 (skipped) with the reason when the backend is not built or finds no hardware.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

#include "bootstrap/thread_bootstrap.h"
#include "core/error.h"
#include "harness.h"

int main(int argc, char** argv) {
  using namespace fb::test;
  if (const char* e = std::getenv("FB_TRANSPORT"); e && *e) g_transport = e;
  g_options.connectTimeout = std::chrono::milliseconds(20000);

  Catch::Session session;
  using Catch::clara::Opt;
  session.cli(session.cli() |
              Opt(g_transport, "name")["--transport"]("transport under test: tcp, verbs (default: $FB_TRANSPORT or tcp)") |
              Opt(g_options.tcpInterface, "if")["--tcp-if"]("tcp: interface name or IPv4 address") |
              Opt(g_options.verbsDevice, "dev")["--ib-dev"]("verbs: device, e.g. rxe0") |
              Opt(g_options.gidIndex, "n")["--gid-index"]("verbs: GID index (-1 = choose)"));
  if (int rc = session.applyCommandLine(argc, argv); rc != 0) return 2;
  if (session.configData().showHelp || session.configData().listTests || session.configData().listTestNamesOnly ||
      session.configData().listTags)
    return session.run();

  // Skip (77) when the backend can't run here; bad options are exit 2.
  fb::PathInfo path;
  try {
    fb::runRanks(2, [&](fb::Bootstrap& bs) {
      auto t = connectAll(bs);
      if (bs.rank() == 0) path = t->path();
    });
  } catch (const fb::UnavailableError& e) {
    std::printf("SKIPPED: transport '%s' is unavailable: %s\n", g_transport.c_str(), e.what());
    return 77;
  } catch (const fb::ConfigError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "transport '%s' failed to connect 2 ranks: %s\n", g_transport.c_str(), e.what());
    return 1;
  }
  std::printf("transport under test: %s; path of rank 0 with 2 ranks: %s\n", g_transport.c_str(), path.label.c_str());
  for (auto& [k, v] : path.details) std::printf("  %s: %s\n", k.c_str(), v.c_str());
  return session.run();
}
