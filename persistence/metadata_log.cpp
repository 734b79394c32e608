#include "persistence/metadata_log.hpp"

#include "persistence/data_dir.hpp"
#include "persistence/metadata_log_codec.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace warren::persistence {

namespace {

namespace fs = std::filesystem;

// --- a transport to no one (one member): no port is opened ------------------------------------

int transport_init(raft_uv_transport*, raft_id, const char*) {
  return 0;
}

int transport_listen(raft_uv_transport*, raft_uv_accept_cb) {
  return 0;
}

int transport_connect(raft_uv_transport*, raft_uv_connect*, raft_id, const char*,
                      raft_uv_connect_cb) {
  return RAFT_NOCONNECTION;
}

void transport_close(raft_uv_transport* t, raft_uv_transport_close_cb cb) {
  cb(t);
}

void check(int rc, const std::string& what, struct raft* r = nullptr) {
  if (rc == 0) return;
  std::string detail = r != nullptr ? raft_errmsg(r) : "";
  throw std::runtime_error("metadata log: " + what + ": " + raft_strerror(rc) +
                           (detail.empty() ? "" : " (" + detail + ")"));
}

// Raft's folder, durable like the data dir's others (its parent synced once it is made).
void make_log_dir(const std::string& dir) {
  std::error_code ec;
  if (fs::create_directories(dir, ec))
    sync_directory(fs::absolute(dir).lexically_normal().parent_path().string());
  if (ec) throw std::runtime_error("metadata log: cannot create " + dir + ": " + ec.message());
}

}  // namespace

metadata_log::metadata_log(lmdb_store& store, options opts)
    : store_(store), opts_(std::move(opts)), fsm_(store) {
  make_log_dir(opts_.dir);
  std::promise<void> started;
  auto ready = started.get_future();
  thread_ = std::thread([this, &started] { run(started); });
  try {
    ready.get();
  } catch (...) {
    thread_.join();
    throw;
  }
}

metadata_log::~metadata_log() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  uv_async_send(&wake_);
  thread_.join();
}

void metadata_log::propose(std::vector<meta_mutation> batch, answer done) {
  auto* p = new proposal{this, std::move(batch), std::move(done), {}};
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!stopping_) {
      incoming_.push_back(p);
      p = nullptr;
    }
  }
  if (p == nullptr) {
    uv_async_send(&wake_);
    return;
  }
  p->done("the metadata log is closing");
  delete p;
}

// The log thread: set up, then the loop until shut_down() has closed every handle.
void metadata_log::run(std::promise<void>& started) {
  try {
    open(started);
  } catch (...) {
    uv_loop_close(&loop_);
    started.set_exception(std::current_exception());
    return;
  }
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_loop_close(&loop_);
}

void metadata_log::open(std::promise<void>& started) {
  if (int rc = uv_loop_init(&loop_); rc != 0)
    throw std::runtime_error(std::string("metadata log: uv loop: ") + uv_strerror(rc));
  wake_.data = this;
  uv_async_init(&loop_, &wake_, [](uv_async_t* h) {
    auto* self = static_cast<metadata_log*>(h->data);
    self->take_incoming();
  });
  retry_.data = this;
  uv_timer_init(&loop_, &retry_);
  transport_.data = this;
  transport_.init = transport_init;
  transport_.listen = transport_listen;
  transport_.connect = transport_connect;
  transport_.close = transport_close;
  auto fail = [this](const std::string& what, int rc, struct raft* r) {
    uv_close(reinterpret_cast<uv_handle_t*>(&wake_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&retry_), nullptr);
    uv_run(&loop_, UV_RUN_DEFAULT);
    check(rc, what, r);
  };
  if (int rc = raft_uv_init(&io_, &loop_, opts_.dir.c_str(), &transport_); rc != 0)
    fail("open " + opts_.dir + " (" + io_.errmsg + ")", rc, nullptr);
  if (int rc = raft_init(&raft_, &io_, fsm_.fsm(), opts_.id, opts_.address.c_str()); rc != 0) {
    raft_uv_close(&io_);
    fail("init", rc, nullptr);
  }
  fsm_.attach(&raft_);
  raft_.data = this;
  raft_set_election_timeout(&raft_, opts_.election_timeout_ms);
  raft_set_heartbeat_timeout(&raft_, std::max(1u, opts_.election_timeout_ms / 10));
  if (opts_.snapshot_threshold != 0) raft_set_snapshot_threshold(&raft_, opts_.snapshot_threshold);
  if (opts_.snapshot_trailing != 0) raft_set_snapshot_trailing(&raft_, opts_.snapshot_trailing);
  raft_configuration conf;
  raft_configuration_init(&conf);
  int rc = raft_configuration_add(&conf, opts_.id, opts_.address.c_str(), RAFT_VOTER);
  if (rc == 0) rc = raft_bootstrap(&raft_, &conf);
  raft_configuration_close(&conf);
  if (rc == RAFT_CANTBOOTSTRAP) rc = 0;  // a log that exists keeps its configuration
  if (rc == 0) rc = raft_start(&raft_);
  if (rc != 0) {
    std::string detail = raft_errmsg(&raft_);
    raft_close(&raft_, &metadata_log::on_raft_closed);
    fail("start" + (detail.empty() ? std::string() : " (" + detail + ")"), rc, nullptr);
  }
  started.set_value();
}

void metadata_log::take_incoming() {
  bool stop = false;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    for (auto* p : incoming_) waiting_.push_back(p);
    incoming_.clear();
    stop = stopping_;
  }
  if (stop) return shut_down();
  submit_waiting();
}

// Proposals go to raft once this member leads; until then they wait and are tried again.
void metadata_log::submit_waiting() {
  while (!waiting_.empty()) {
    if (raft_state(&raft_) != RAFT_LEADER) {
      uv_timer_start(
          &retry_, [](uv_timer_t* t) { static_cast<metadata_log*>(t->data)->submit_waiting(); }, 10,
          0);
      return;
    }
    auto* p = waiting_.front();
    auto bytes = encode_metadata_batch(p->batch);
    raft_buffer buf;
    buf.len = bytes.size();
    buf.base = raft_malloc(bytes.size());  // raft owns it once raft_apply takes it
    if (buf.base == nullptr) return;       // tried again with the next proposal
    std::memcpy(buf.base, bytes.data(), bytes.size());
    p->req.data = p;
    int rc = raft_apply(&raft_, &p->req, &buf, 1, &metadata_log::on_applied);
    if (rc == RAFT_NOTLEADER) {
      raft_free(buf.base);
      continue;  // leadership lost between the check and the call: wait again
    }
    waiting_.pop_front();
    if (rc != 0) {
      raft_free(buf.base);
      p->done(std::string("refused by raft: ") + raft_strerror(rc));
      delete p;
    }
  }
}

void metadata_log::on_applied(struct raft_apply* req, int status, void*) {
  auto* p = static_cast<proposal*>(req->data);
  p->done(status == 0 ? std::string() : std::string("not committed: ") + raft_strerror(status));
  delete p;
}

void metadata_log::shut_down() {
  for (auto* p : waiting_) {
    p->done("the metadata log is closing");
    delete p;
  }
  waiting_.clear();
  uv_timer_stop(&retry_);
  uv_close(reinterpret_cast<uv_handle_t*>(&wake_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&retry_), nullptr);
  // raft answers the proposals it holds (RAFT_SHUTDOWN), then io_ can be released.
  raft_close(&raft_, &metadata_log::on_raft_closed);
}

void metadata_log::on_raft_closed(struct raft* r) {
  raft_uv_close(&static_cast<metadata_log*>(r->data)->io_);
}

}  // namespace warren::persistence
