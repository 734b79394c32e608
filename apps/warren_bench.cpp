// warren-bench: a load generator in the spirit of RabbitMQ's PerfTest. Producers and consumers
// on their own connections, fixed-size bodies carrying their publish time, a progress line per
// second and a summary (text or --json) at the end. It declares what it uses and removes it
// afterwards unless --keep.
#include "warren/channel.hpp"
#include "warren/client_error.hpp"
#include "warren/connection.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <iostream>
#include <mutex>
#include <thread>

using namespace warren::client;
using clock_type = std::chrono::steady_clock;

namespace {

struct options {
  connect_options connect;
  unsigned producers = 1, consumers = 1, queues = 1;
  size_t size = 64;
  uint64_t count = 0;
  double time = 0;
  double rate = 0;
  bool persistent = false;
  uint32_t confirm = 0;
  uint32_t prefetch = 100;
  bool auto_ack = false;
  uint32_t deliver_calls = 0;  // the consumers' delivery window; 0 = the broker's default
  uint32_t deliver_batch = 0;
  uint32_t multi_ack = 0;
  std::string exchange_type = "direct";
  size_t batch = 100;
  bool keep = false;
  bool json = false;
};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch())
      .count();
}

// Counters shared by all threads; latencies in microseconds, collected per interval.
struct stats {
  std::atomic<uint64_t> sent{0}, confirmed{0}, received{0}, refused{0};
  // When the last confirm and the last delivery happened: rates are over the time really used.
  std::atomic<int64_t> last_confirm_ns{0}, last_receive_ns{0};
  std::mutex mutex;
  std::vector<uint32_t> interval_latency, all_latency;

  void record_latency(uint32_t us) {
    std::lock_guard<std::mutex> guard(mutex);
    interval_latency.push_back(us);
  }
};

double percentile(std::vector<uint32_t>& v, double p) {
  if (v.empty()) return 0;
  auto k = static_cast<size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k] / 1000.0;
}

std::string queue_name(unsigned i) {
  return "warren-bench-" + std::to_string(i);
}
// Direct runs publish through the default exchange, as amqp-bench's publish and e2e modes do.
std::string exchange_name(const options& o) {
  return o.exchange_type == "direct" ? "" : "warren-bench." + o.exchange_type;
}

// Topic runs use amqp-bench's topology so that the figures compare: queues in groups of four,
// bound with *, # and literal words so that every routing key matches exactly its group.
std::string topic_binding(unsigned q) {
  auto g = std::to_string(q / 4);
  switch (q % 4) {
    case 0:
      return "g" + g + ".*.*";
    case 1:
      return "g" + g + ".#";
    case 2:
      return "*.m" + g + ".*";
    default:
      return "#.m" + g + ".#";
  }
}

std::string routing_key(const options& o, uint64_t n) {
  unsigned q = static_cast<unsigned>(n % o.queues);
  if (o.exchange_type == "topic") {
    auto g = std::to_string(n % (o.queues / 4));
    return "g" + g + ".m" + g + ".t" + std::to_string(n % 1000);
  }
  if (o.exchange_type == "fanout") return "";
  return queue_name(q);
}

void setup(const options& o) {
  auto conn = connection::open(o.connect);
  auto ch = conn->open_channel();
  bool named_exchange = !exchange_name(o).empty();
  if (named_exchange) {
    exchange_options xo;
    xo.durable = o.persistent;
    ch->exchange_declare(exchange_name(o), o.exchange_type, xo);
  }
  for (unsigned i = 0; i < o.queues; ++i) {
    queue_options qo;
    qo.durable = o.persistent;
    ch->queue_declare(queue_name(i), qo);
    if (!named_exchange) continue;
    std::string key = o.exchange_type == "topic"    ? topic_binding(i)
                      : o.exchange_type == "fanout" ? ""
                                                    : queue_name(i);
    ch->queue_bind(queue_name(i), exchange_name(o), key);
  }
}

void teardown(const options& o) {
  auto conn = connection::open(o.connect);
  auto ch = conn->open_channel();
  for (unsigned i = 0; i < o.queues; ++i) ch->queue_delete(queue_name(i));
  if (!exchange_name(o).empty()) ch->exchange_delete(exchange_name(o));
}

void produce(const options& o, unsigned index, uint64_t quota, std::atomic<bool>& stop, stats& s) {
  auto conn = connection::open(o.connect);
  auto ch = conn->open_channel();
  if (o.confirm > 0) ch->confirm_select();
  // In flight: the confirm window when set, else four batches.
  size_t window_batches = o.confirm > 0 ? std::max<size_t>(1, o.confirm / o.batch) : 4;
  std::deque<std::pair<size_t, std::future<std::vector<publish_result>>>> in_flight;
  auto settle_one = [&] {
    auto results = in_flight.front().second.get();
    in_flight.pop_front();
    for (const auto& r : results)
      (r.outcome == publish_outcome::routed ? s.confirmed : s.refused)++;
    s.last_confirm_ns = now_ns();
  };
  double per_producer_rate = o.rate > 0 ? o.rate / o.producers : 0;
  auto start = clock_type::now();
  uint64_t n = index;  // spreads producers over the routing keys
  uint64_t done = 0;
  while (!stop && (quota == 0 || done < quota)) {
    size_t this_batch = o.batch;
    if (quota > 0) this_batch = static_cast<size_t>(std::min<uint64_t>(this_batch, quota - done));
    if (per_producer_rate > 0) {
      // Never ahead of the schedule: sleep until this batch is due.
      auto due =
          start + std::chrono::duration<double>(static_cast<double>(done) / per_producer_rate);
      std::this_thread::sleep_until(due);
      this_batch = std::min<size_t>(
          this_batch, std::max<size_t>(1, static_cast<size_t>(per_producer_rate / 1000)));
    }
    std::vector<outbound_message> batch(this_batch);
    for (auto& m : batch) {
      m.exchange = exchange_name(o);
      m.routing_key = routing_key(o, n++);
      m.properties.persistent = o.persistent;
      m.body.assign(std::max<size_t>(o.size, sizeof(int64_t)), 'b');
      int64_t stamp = now_ns();
      std::memcpy(m.body.data(), &stamp, sizeof stamp);
    }
    in_flight.emplace_back(this_batch, ch->publish_batch(std::move(batch)));
    s.sent += this_batch;
    done += this_batch;
    while (in_flight.size() >= window_batches) settle_one();
  }
  while (!in_flight.empty()) settle_one();
}

void consume(const options& o, unsigned index, std::atomic<bool>& stop, stats& s) {
  auto conn = connection::open(o.connect);
  auto ch = conn->open_channel();
  consume_options co;
  co.no_ack = o.auto_ack;
  co.prefetch = o.prefetch;
  co.max_calls = o.deliver_calls;
  co.max_batch = o.deliver_batch;
  uint64_t since_ack = 0;
  ch->consume(queue_name(index % o.queues), co, [&](const delivery& d) {
    int64_t stamp = 0;
    if (d.body.size() >= sizeof stamp) std::memcpy(&stamp, d.body.data(), sizeof stamp);
    s.record_latency(static_cast<uint32_t>(std::max<int64_t>(0, now_ns() - stamp) / 1000));
    ++s.received;
    s.last_receive_ns = now_ns();
    if (o.auto_ack) return;
    if (o.multi_ack == 0) {
      ch->ack(d.delivery_tag);
    } else if (++since_ack >= o.multi_ack) {
      ch->ack(d.delivery_tag, true);
      since_ack = 0;
    }
  });
  while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

void add_options(CLI::App& app, options& o) {
  app.add_option("--host", o.connect.host)->capture_default_str();
  app.add_option("--port", o.connect.port)->capture_default_str();
  app.add_flag("--tls", o.connect.tls, "connect over TLS (the node's --tls-port)");
  app.add_option("--tls-ca", o.connect.tls_ca, "PEM CA certificates for the node's certificate");
  app.add_option("--producers", o.producers)->capture_default_str();
  app.add_option("--consumers", o.consumers)->capture_default_str();
  app.add_option("--size", o.size, "body bytes (at least 8: the publish time)")
      ->capture_default_str();
  auto* count = app.add_option("--count", o.count, "messages to publish in all");
  auto* time = app.add_option("--time", o.time, "seconds to run");
  count->excludes(time);
  app.add_option("--rate", o.rate, "messages per second in all (0 = as fast as possible)");
  app.add_flag("--persistent", o.persistent, "persistent messages in durable queues");
  app.add_option("--confirm", o.confirm, "confirm mode with this many messages in flight");
  app.add_option("--prefetch", o.prefetch)->capture_default_str();
  app.add_flag("--auto-ack", o.auto_ack);
  app.add_option("--deliver-calls", o.deliver_calls,
                 "deliver calls outstanding per consumer (1-64; 0 = the broker's default, 4)");
  app.add_option("--deliver-batch", o.deliver_batch,
                 "deliveries per deliver call (1-10000; 0 = the broker's default, 256)");
  app.add_option("--multi-ack", o.multi_ack, "ack every N messages with multiple");
  app.add_option("--queues", o.queues)->capture_default_str();
  app.add_option("--exchange-type", o.exchange_type)
      ->check(CLI::IsMember({"direct", "fanout", "topic"}))
      ->capture_default_str();
  app.add_option("--batch", o.batch, "messages per publish call")->capture_default_str();
  app.add_flag("--keep", o.keep, "keep the queues and exchange afterwards");
  app.add_flag("--json", o.json, "print the summary as one JSON object");
}

// The time of a run: all of it, and up to the last confirm and the last delivery (rates are
// taken over those).
struct run_times {
  double elapsed, publish_s, receive_s;
};

// Deliveries expected once publishing ends: fanout copies to every queue. Without producers the
// consumers drain --count messages already queued.
uint64_t expected_deliveries(const options& o, const stats& s) {
  uint64_t routed = s.confirmed.load();
  if (o.consumers == 0) return 0;
  if (o.producers == 0) return o.count;
  if (o.exchange_type == "fanout") return routed * o.queues;
  if (o.exchange_type == "topic") return routed * 4;  // every key matches one group of four
  return routed;
}

// One progress line on stderr: rates over the last second and its latency percentiles.
struct progress {
  uint64_t sent = 0, confirmed = 0, received = 0, idle_seconds = 0;

  void report(int second, stats& s) {
    std::vector<uint32_t> lat;
    {
      std::lock_guard<std::mutex> guard(s.mutex);
      lat.swap(s.interval_latency);
      s.all_latency.insert(s.all_latency.end(), lat.begin(), lat.end());
    }
    uint64_t now_sent = s.sent, now_confirmed = s.confirmed + s.refused, now_received = s.received;
    std::fprintf(stderr,
                 "%4ds  sent %8llu/s  confirmed %8llu/s  received %8llu/s  latency p50 %.2f ms "
                 "p99 %.2f ms\n",
                 second, (unsigned long long)(now_sent - sent),
                 (unsigned long long)(now_confirmed - confirmed),
                 (unsigned long long)(now_received - received), percentile(lat, 0.5),
                 percentile(lat, 0.99));
    idle_seconds = now_received == received ? idle_seconds + 1 : 0;
    sent = now_sent, confirmed = now_confirmed, received = now_received;
  }
};

// Runs producers and consumers until the count or time is reached and the deliveries are in
// (or stop coming for 3 s).
run_times drive(const options& o, stats& s) {
  std::atomic<bool> producers_stop{false}, consumers_stop{false};
  std::vector<std::thread> consumers, producers;
  for (unsigned i = 0; i < o.consumers; ++i)
    consumers.emplace_back([&, i] { consume(o, i, consumers_stop, s); });
  auto start = clock_type::now();
  int64_t start_ns = now_ns();
  for (unsigned i = 0; i < o.producers; ++i) {
    uint64_t quota = o.count == 0 ? 0 : o.count / o.producers + (i < o.count % o.producers);
    producers.emplace_back([&, i, quota] { produce(o, i, quota, producers_stop, s); });
  }
  progress p;
  bool publishing = o.producers > 0;
  for (int second = 1;; ++second) {
    std::this_thread::sleep_until(start + std::chrono::seconds(second));
    if (o.time > 0 && second >= o.time) producers_stop = true;
    p.report(second, s);
    if (publishing && (producers_stop || (o.count > 0 && p.confirmed >= o.count))) {
      producers_stop = true;
      for (auto& t : producers) t.join();
      publishing = false;
    }
    bool timed_drain = o.producers == 0 && o.count == 0;  // consumers only, for --time
    if (timed_drain
            ? second >= o.time
            : !publishing && (s.received >= expected_deliveries(o, s) || p.idle_seconds >= 3))
      break;
  }
  auto elapsed = std::chrono::duration<double>(clock_type::now() - start).count();
  auto span = [&](int64_t last_ns) {
    return last_ns > start_ns ? static_cast<double>(last_ns - start_ns) / 1e9 : elapsed;
  };
  run_times t{elapsed, span(s.last_confirm_ns), span(s.last_receive_ns)};
  consumers_stop = true;
  for (auto& c : consumers) c.join();
  return t;
}

void print_summary(const options& o, stats& s, const run_times& t) {
  std::vector<uint32_t> all;
  {
    std::lock_guard<std::mutex> guard(s.mutex);
    all = s.all_latency;
    all.insert(all.end(), s.interval_latency.begin(), s.interval_latency.end());
  }
  double max_ms = all.empty() ? 0 : *std::max_element(all.begin(), all.end()) / 1000.0;
  if (!o.json) {
    std::printf("sent %.0f msgs/s, confirmed %.0f msgs/s (%.2f s), received %.0f msgs/s (%.2f s)\n",
                s.sent / t.publish_s, s.confirmed / t.publish_s, t.publish_s,
                s.received / t.receive_s, t.receive_s);
    std::printf("latency p50 %.3f ms, p95 %.3f ms, p99 %.3f ms, max %.3f ms\n",
                percentile(all, 0.5), percentile(all, 0.95), percentile(all, 0.99), max_ms);
    return;
  }
  nlohmann::json summary{{"sent_per_s", s.sent / t.publish_s},
                         {"confirmed_per_s", s.confirmed / t.publish_s},
                         {"received_per_s", s.received / t.receive_s},
                         {"p50_ms", percentile(all, 0.50)},
                         {"p95_ms", percentile(all, 0.95)},
                         {"p99_ms", percentile(all, 0.99)},
                         {"max_ms", max_ms},
                         {"sent", s.sent.load()},
                         {"confirmed", s.confirmed.load()},
                         {"refused", s.refused.load()},
                         {"received", s.received.load()},
                         {"seconds", t.elapsed}};
  std::cout << summary.dump() << '\n';
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app{"warren-bench: load generator for warren-node"};
  add_options(app, o);
  try {
    app.parse(argc, argv);
    if (o.count == 0 && o.time == 0) throw CLI::ValidationError("--count or --time is required");
    if (o.batch == 0 || o.queues == 0)
      throw CLI::ValidationError("--batch and --queues must be > 0");
    if (o.exchange_type == "topic" && o.queues % 4 != 0)
      throw CLI::ValidationError("topic runs bind queues in groups of four: --queues 4, 8, 16...");
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  o.connect.client_name = "warren-bench";
  stats s;
  try {
    setup(o);
    auto times = drive(o, s);
    if (!o.keep) teardown(o);
    print_summary(o, s, times);
  } catch (const error& e) {
    std::cerr << "error: " << e.code() << ": " << e.text() << '\n';
    return 1;
  }
  return 0;
}
