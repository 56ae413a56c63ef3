// tests/runtime/test_serial_blas.cpp — SerialBlas (runtime/parallel.h): OpenBLAS's thread count
// is process-wide, so scopes open on several threads at once share it — 1 while any scope is
// open, num_threads() again once the last one closes, whatever order they close in; and a
// set_num_threads made inside a scope reaches OpenBLAS when the last scope closes.
#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

#include "helpers.h"
#include "runtime/cpu/blas.h"
#include "runtime/parallel.h"

using namespace mase;

namespace {

// Runs the case with `n` threads set, then puts back the count it found.
struct ThreadsFor {
  const int before = num_threads();
  explicit ThreadsFor(int n) { set_num_threads(n); }
  ~ThreadsFor() { set_num_threads(before); }
};

}  // namespace

TEST_CASE("SerialBlas: scopes on several threads keep OpenBLAS at 1 until the last closes") {
  if (blas::num_threads() == 0) return test::skip("this OpenBLAS has no openblas_get_num_threads");
  ThreadsFor threads(4);
  REQUIRE(blas::num_threads() == 4);
  // Each round every thread opens a scope, all wait until all are inside, then they close one
  // at a time in a rotating order; each checks OpenBLAS's count just before closing its own —
  // after others closed theirs (a save/restore per scope has put 4 back by then).
  constexpr int kThreads = 6, kRounds = 20;
  std::barrier sync(kThreads);
  std::atomic<int> turn{0}, not_serial{0}, not_restored{0}, max_open{0};
  std::vector<std::thread> pool;
  for (int i = 0; i < kThreads; ++i)
    pool.emplace_back([&, i] {
      for (int r = 0; r < kRounds; ++r) {
        {
          SerialBlas serial;
          sync.arrive_and_wait();  // all inside
          int open = SerialBlas::open_scopes(), seen = max_open.load();
          while (open > seen && !max_open.compare_exchange_weak(seen, open)) {
          }
          const int my_turn = r * kThreads + (i + r) % kThreads;
          while (turn.load() != my_turn) std::this_thread::yield();
          if (blas::num_threads() != 1) ++not_serial;
        }  // closes
        ++turn;
        sync.arrive_and_wait();  // all closed
        if (i == 0 && (blas::num_threads() != 4 || SerialBlas::open_scopes() != 0)) ++not_restored;
        sync.arrive_and_wait();  // checked before the next round opens
      }
    });
  for (std::thread& t : pool) t.join();
  CHECK(max_open.load() == kThreads);  // the scopes really were open together
  CHECK(not_serial.load() == 0);
  CHECK(not_restored.load() == 0);
  CHECK(SerialBlas::open_scopes() == 0);
  CHECK(blas::num_threads() == 4);
}

TEST_CASE("SerialBlas: many threads opening and closing at random leave the count restored") {
  if (blas::num_threads() == 0) return test::skip("this OpenBLAS has no openblas_get_num_threads");
  ThreadsFor threads(3);
  std::atomic<int> not_serial{0};
  std::vector<std::thread> pool;
  for (int i = 0; i < 8; ++i)
    pool.emplace_back([&] {
      for (int r = 0; r < 300; ++r) {
        SerialBlas serial;
        SerialBlas nested;  // nesting on one thread counts the same way
        if (blas::num_threads() != 1) ++not_serial;
        std::this_thread::yield();
        if (blas::num_threads() != 1) ++not_serial;
      }
    });
  for (std::thread& t : pool) t.join();
  CHECK(not_serial.load() == 0);
  CHECK(SerialBlas::open_scopes() == 0);
  CHECK(blas::num_threads() == 3);
}

TEST_CASE("SerialBlas: set_num_threads inside a scope reaches OpenBLAS when it closes") {
  if (blas::num_threads() == 0) return test::skip("this OpenBLAS has no openblas_get_num_threads");
  ThreadsFor threads(2);
  {
    SerialBlas serial;
    set_num_threads(3);
    CHECK(num_threads() == 3);       // TBB's count at once
    CHECK(blas::num_threads() == 1);  // OpenBLAS stays serial for the open scope
  }
  CHECK(blas::num_threads() == 3);
  set_num_threads(1);
  {
    SerialBlas serial;  // one thread already: nothing to change
    CHECK(blas::num_threads() == 1);
    set_num_threads(2);
    CHECK(blas::num_threads() == 1);
  }
  CHECK(blas::num_threads() == 2);
}
