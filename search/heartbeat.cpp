// search/heartbeat.cpp — the heartbeat thread. Read search/heartbeat.h first.
#include "search/heartbeat.h"

#include <chrono>
#include <exception>

namespace mase::search {

Heartbeat::Heartbeat(const Study& study, int64_t number, double interval_s) {
  thread_ = std::thread([this, storage = study.storage(), name = study.name(), number, interval_s] {
    std::optional<Study> own;  // opened in the thread: its connection never crosses threads
    const auto interval = std::chrono::duration<double>(interval_s);
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      lock.unlock();
      bool ok = false;
      try {
        if (!own) own.emplace(Study::load(storage, name));
        own->heartbeat(number);
        ok = true;
      } catch (const std::exception&) {
        // A missed beat: the trial ended under us, or the file was busy. Try again next time.
      }
      lock.lock();
      beats_ += ok;
      stop_cv_.wait_for(lock, interval, [this] { return stop_; });
    }
  });
}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
}

int Heartbeat::beats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return beats_;
}

}  // namespace mase::search
