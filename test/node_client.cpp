#include "node_client.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <iterator>
#include <mutex>

namespace warren::test {

namespace fs = std::filesystem;

const client::queue_options durable = [] {
  client::queue_options o;
  o.durable = true;
  return o;
}();

std::unique_ptr<client::connection> connect_to(const node_process& node) {
  client::connect_options o;
  o.port = node.port();
  return client::connection::open(o);
}

client::outbound_message persistent(const std::string& queue, const std::string& body) {
  client::outbound_message m;
  m.routing_key = queue;
  m.body = body;
  m.properties.persistent = true;
  return m;
}

namespace {

// Ready and unacked messages of `queue`.
uint64_t held_by(client::connection& conn, const std::string& queue) {
  for (const auto& q : conn.list_queues())
    if (q.name == queue) return q.messages_ready + q.messages_unacked;
  return 0;
}

}  // namespace

std::vector<client::delivery> drain(client::connection& conn, const std::string& queue) {
  uint64_t ready = held_by(conn, queue);
  // Declared before the channel, whose destructor waits for its callbacks: they use these.
  std::mutex mutex;
  std::condition_variable done;
  std::vector<client::delivery> out;
  auto ch = conn.open_channel();
  // Manual acks: a message leaves the queue's count only once its callback ran and acked it, so
  // "the queue holds nothing" below also means "every delivery reached `out`" (with no-ack,
  // deliveries still on their way to the callbacks would be cut off by the cancel).
  ch->qos(1000);
  auto* chp = ch.get();
  auto tag = ch->consume(queue, {}, [&](const client::delivery& d) {
    std::lock_guard<std::mutex> guard(mutex);
    out.push_back(d);
    chp->ack(d.delivery_tag);
    done.notify_all();
  });
  // Until as many as were counted arrived, or the queue holds nothing: a paged-out message
  // found damaged when it is read back leaves the count only then. Two minutes guard against a
  // hang.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  std::unique_lock<std::mutex> lock(mutex);
  while (out.size() < ready) {
    if (done.wait_for(lock, std::chrono::milliseconds(200), [&] { return out.size() >= ready; }))
      break;
    lock.unlock();
    bool empty = held_by(conn, queue) == 0;
    lock.lock();
    if (empty) break;
    BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                          queue << ": " << out.size() << " of " << ready << " drained");
  }
  lock.unlock();
  ch->cancel(tag);
  ch->close();  // waits for a callback still running: it uses `out`
  return out;
}

void publish_confirmed(client::channel& ch, const std::string& queue, int n,
                       const std::string& prefix) {
  std::vector<client::outbound_message> batch;
  for (int i = 0; i < n; ++i) batch.push_back(persistent(queue, prefix + std::to_string(i)));
  for (const auto& r : ch.publish_batch(std::move(batch)).get())
    BOOST_REQUIRE(r.outcome == client::publish_outcome::routed);
}

std::string make_queue(const std::string& data_dir, int n) {
  node_process node({}, data_dir);
  auto conn = connect_to(node);
  auto ch = conn->open_channel();
  ch->queue_declare("q", durable);
  ch->confirm_select();
  publish_confirmed(*ch, "q", n);
  node.stop();
  return fs::directory_iterator(data_dir + "/queues")->path().string();
}

std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<fs::path> segments_of(const std::string& data_dir) {
  std::vector<fs::path> out;
  for (const auto& q : fs::directory_iterator(data_dir + "/queues"))
    for (const auto& f : fs::directory_iterator(q.path()))
      if (f.path().extension() == ".seg") out.push_back(f.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace warren::test
