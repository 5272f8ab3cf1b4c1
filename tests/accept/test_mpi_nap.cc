// MpiLink's nap between MPI_Testall polls when the ranks share cores (lib/app/accept_pairs.h):
// its length for the ping-pong and the bandwidth exchange, and the bound on how late it sees the
// end of an exchange.
#include <catch2/catch.hpp>

#include <chrono>

#include "app/accept_pairs.h"

using namespace std::chrono;
using fb::acceptcmd::mpiNap;

TEST_CASE("mpiNap: the ping-pong naps 10 us whatever it waited") {
  for (microseconds w : {microseconds(0), microseconds(15), microseconds(3000), microseconds(2000000)})
    CHECK(mpiNap(false, duration_cast<fb::acceptcmd::Clock::duration>(w)) == microseconds(10));
}

TEST_CASE("mpiNap: the exchange naps 1 % of the wait, 10 to 200 us") {
  auto nap = [](auto w) { return mpiNap(true, duration_cast<fb::acceptcmd::Clock::duration>(w)); };
  CHECK(nap(microseconds(0)) == microseconds(10));
  CHECK(nap(microseconds(999)) == microseconds(10));
  CHECK(nap(milliseconds(5)) == microseconds(50));
  CHECK(nap(milliseconds(20)) == microseconds(200));
  CHECK(nap(milliseconds(67)) == microseconds(200));
  CHECK(nap(seconds(10)) == microseconds(200));
  // Seen late by at most one nap plus the kernel's 50 us timer slack: for every wait from 10 ms
  // (a 4 MiB exchange at 3.4 Gbit/s) to 1 s, under 3 % of it; for the lab's 67 ms, under 0.4 %.
  int over = 0;
  for (auto w = milliseconds(10); w <= seconds(1); w += milliseconds(1))
    if (duration<double>(nap(w) + microseconds(50)) / duration<double>(w) >= 0.03) ++over;
  CHECK(over == 0);
  CHECK(duration<double>(nap(milliseconds(67)) + microseconds(50)) / duration<double>(milliseconds(67)) < 0.004);
}
