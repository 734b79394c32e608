// recovery_fuzz: damages copies of a real data dir at random and starts a real node on each.
//
// A pristine data dir is made once: a durable queue with messages spread over several small
// segments, some acked, some delivered. The node keeps only 64 KiB of the queue in memory, so
// most of it stays on disk at a restart, indexed from the segments' index files and read back
// as the queue drains. Each round copies it, does one kind of damage (bit flips, overwritten
// bytes, a truncated file, a stray file, a deleted segment, mark or index file, truncated or
// deleted metadata), and then checks:
//   - the node starts, or refuses with a message naming the metadata (only metadata damage may
//     stop it);
//   - while it runs and takes new publishes, no byte of an existing file is written over
//     (files only grow, except a torn tail cut at the damage; index files, checkpoints derived
//     from the segments, are replaced whole when they no longer match);
//   - every live message whose record the damage did not touch comes back, once, and no
//     message comes back that was never published (damage to an index file costs nothing);
//   - a message handed out before the stop comes back marked redelivered (a damaged mark file
//     marks every message of its segment), except after a mark file was cut between frames.
// The seed is printed; WARREN_FUZZ_SEED=N repeats a run, WARREN_FUZZ_ROUNDS=N changes its size.
#include <boost/test/unit_test.hpp>

#include "node_client.hpp"
#include "persistence/segment_format.hpp"
#include "subprocess.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

using namespace warren::client;
using namespace warren::test;
namespace fs = std::filesystem;
namespace format = warren::persistence::format;

namespace {

const std::vector<std::string> node_args = {"--segment-bytes", "16384", "--queue-memory-per-queue",
                                            "65536"};

struct record_place {
  std::string file;  // relative to the data dir
  uint64_t begin, end;
};

// The pristine data dir and what it holds.
struct pristine {
  temp_dir dir;
  std::set<std::string> published;           // every body ever published
  std::set<std::string> delivered;           // handed out, not acked: must come back marked
  std::map<std::string, record_place> live;  // body -> where its record is
  std::vector<std::string> queue_files;      // relative paths of .seg, .ack and .idx files
};

std::string relative(const fs::path& p, const std::string& root) {
  return fs::relative(p, root).string();
}

// Reads where each live record sits, with the format's own scanner and the marks on disk.
void map_records(pristine& p) {
  std::set<uint64_t> acked;
  std::map<uint64_t, std::pair<std::string, record_place>> by_seq;
  for (const auto& e : fs::recursive_directory_iterator(p.dir.path() + "/queues")) {
    if (!e.is_regular_file()) continue;
    auto rel = relative(e.path(), p.dir.path());
    p.queue_files.push_back(rel);
    if (e.path().extension() == ".idx") continue;  // says where records are; holds none
    auto data = read_bytes(e.path());
    auto scan =
        format::scan_frames(data, format::file_header_size, [](std::string_view) { return true; });
    for (const auto& f : scan.frames) {
      auto payload = std::string_view(data).substr(f.offset + format::frame_header_size, f.length);
      if (e.path().extension() == ".ack") {
        format::decode_marks(payload, [&](format::mark kind, uint64_t seq) {
          if (kind == format::mark::acked) acked.insert(seq);
        });
        continue;
      }
      uint64_t seq = 0;
      auto m = format::decode_message(payload, seq);
      by_seq[seq] = {m->body, {rel, f.offset, f.offset + format::frame_header_size + f.length}};
    }
  }
  for (const auto& [seq, entry] : by_seq)
    if (acked.count(seq) == 0) p.live[entry.first] = entry.second;
}

std::unique_ptr<pristine> make_pristine(std::mt19937& random) {
  auto p = std::make_unique<pristine>();
  node_process node(node_args, p->dir.path());
  auto conn = connect_to(node);
  auto ch = conn->open_channel();
  ch->queue_declare("q", durable);
  ch->confirm_select();
  std::vector<outbound_message> batch;
  for (int i = 0; i < 3000; ++i) {
    auto body = "p" + std::to_string(i) + "-" + std::string(random() % 100, 'x');
    p->published.insert(body);
    batch.push_back(persistent("q", body));
  }
  for (const auto& r : ch->publish_batch(std::move(batch)).get())
    BOOST_REQUIRE(r.outcome == publish_outcome::routed);
  for (int i = 0; i < 600; ++i) BOOST_REQUIRE(ch->get("q", true).has_value());  // acked
  for (int i = 0; i < 100; ++i) {
    auto d = ch->get("q", false);  // delivered, never acked
    BOOST_REQUIRE(d.has_value());
    p->delivered.insert(d->body);
  }
  node.stop();
  map_records(*p);
  BOOST_REQUIRE(p->live.size() == 2400u);
  return p;
}

enum class damage_kind {
  bit_flips,
  overwrite,
  truncate,
  stray,
  delete_segment,
  delete_marks,
  truncate_meta,
  delete_meta
};
const char* names[] = {"bit flips",          "overwritten bytes", "truncated file",
                       "stray file",         "deleted segment",   "deleted mark file",
                       "truncated metadata", "deleted metadata"};

struct damage {
  damage_kind kind;
  std::string file;             // relative; empty for stray files
  uint64_t begin = 0, end = 0;  // damaged byte range (end = UINT64_MAX: to the end or deleted)
  std::string text() const {
    return std::string(names[static_cast<int>(kind)]) + " in " + file + " [" +
           std::to_string(begin) + ", " + (end == UINT64_MAX ? "end" : std::to_string(end)) + ")";
  }
};

void overwrite(const fs::path& file, uint64_t offset, const std::string& bytes) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

damage do_damage(const pristine& p, const std::string& root, std::mt19937& random) {
  damage d{static_cast<damage_kind>(random() % 8), {}};
  // A data file, or one time in four an index file.
  auto target = [&](const char* data_ext) { return random() % 4 == 0 ? ".idx" : data_ext; };
  auto pick = [&](const char* ext) {
    std::vector<std::string> files;
    for (const auto& f : p.queue_files)
      if (fs::path(f).extension() == ext) files.push_back(f);
    return files.at(random() % files.size());
  };
  switch (d.kind) {
    case damage_kind::bit_flips:
    case damage_kind::overwrite: {
      d.file = pick(target(random() % 3 == 0 ? ".ack" : ".seg"));
      auto path = root + "/" + d.file;
      auto data = read_bytes(path);
      uint64_t at = random() % data.size();
      uint64_t n = d.kind == damage_kind::overwrite ? 1 + random() % 64 : 1 + random() % 5;
      n = std::min<uint64_t>(n, data.size() - at);
      std::string bytes = data.substr(at, n);
      for (auto& c : bytes)
        c = d.kind == damage_kind::overwrite ? static_cast<char>(random())
                                             : static_cast<char>(c ^ (1 << (random() % 8)));
      overwrite(path, at, bytes);
      d.begin = at;
      d.end = at + n;
      break;
    }
    case damage_kind::truncate: {
      d.file = pick(target(random() % 3 == 0 ? ".ack" : ".seg"));
      auto path = root + "/" + d.file;
      d.begin = random() % fs::file_size(path);
      d.end = UINT64_MAX;
      fs::resize_file(path, d.begin);
      break;
    }
    case damage_kind::stray: {
      auto folder = fs::path(root + "/" + p.queue_files.front()).parent_path();
      const char* stray[] = {"99999999999999999999999.seg", "00000000000000099999.seg", "junk.bin",
                             "00000000000000000001.seg.bak"};
      d.file = relative(folder / stray[random() % 4], root);
      std::ofstream(root + "/" + d.file) << std::string(random() % 200, 'z');
      break;
    }
    case damage_kind::delete_segment:
    case damage_kind::delete_marks:
      d.file = pick(d.kind == damage_kind::delete_segment ? ".seg" : target(".ack"));
      d.end = UINT64_MAX;
      fs::remove(root + "/" + d.file);
      break;
    case damage_kind::truncate_meta:
      d.file = "meta/data.mdb";
      d.begin = random() % fs::file_size(root + "/" + d.file);
      d.end = UINT64_MAX;
      fs::resize_file(root + "/" + d.file, d.begin);
      break;
    case damage_kind::delete_meta:
      d.file = "meta/data.mdb";
      d.end = UINT64_MAX;
      fs::remove(root + "/" + d.file);
      break;
  }
  return d;
}

bool touches(const damage& d, const record_place& r) {
  if (d.kind == damage_kind::stray || d.file != r.file) return false;
  return d.begin < r.end && r.begin < d.end;
}

// The data files of the queues (index files are checkpoints, replaced whole when stale).
std::map<std::string, std::string> queue_files_now(const std::string& root) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root + "/queues"))
    if (e.is_regular_file() && e.path().extension() != ".idx")
      out[relative(e.path(), root)] = read_bytes(e.path());
  return out;
}

// Where the frame holding byte `at` of a file begins (a torn tail is cut there).
uint64_t frame_start(const std::string& bytes, uint64_t at) {
  uint64_t start = std::min<uint64_t>(at, format::file_header_size);
  auto scan =
      format::scan_frames(bytes, format::file_header_size, [](std::string_view) { return true; });
  for (const auto& f : scan.frames)
    if (f.offset + format::frame_header_size + f.length <= at)
      start = f.offset + format::frame_header_size + f.length;
  return start;
}

// Files only grow by appends; a damaged file may also lose its tail from the frame the damage
// hit on.
void check_nothing_overwritten(const std::map<std::string, std::string>& before,
                               const std::string& root, const damage& d) {
  auto after = queue_files_now(root);
  for (const auto& [file, bytes] : before) {
    auto i = after.find(file);
    if (i == after.end()) continue;  // a segment whose messages were all acked may go
    auto keep = bytes.size();
    if (file == d.file) keep = std::min<uint64_t>(keep, frame_start(bytes, d.begin));
    BOOST_TEST_REQUIRE(i->second.size() >= keep,
                       file << " shrank below its undamaged part after " << d.text());
    BOOST_TEST_REQUIRE(i->second.compare(0, keep, bytes, 0, keep) == 0,
                       file << " was written over after " << d.text());
  }
}

size_t env_number(const char* name, size_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != 0 ? std::stoull(v) : fallback;
}

}  // namespace

BOOST_AUTO_TEST_CASE(damaged_data_dirs_start_or_refuse_and_lose_only_what_was_damaged) {
  auto seed = env_number("WARREN_FUZZ_SEED", std::random_device{}());
  auto rounds = env_number("WARREN_FUZZ_ROUNDS", 60);
  BOOST_TEST_MESSAGE("recovery_fuzz seed " << seed << ", " << rounds << " rounds");
  std::mt19937 random(static_cast<uint32_t>(seed));
  auto p = make_pristine(random);
  std::map<std::string, size_t> started, refused;
  size_t kept = 0, lost = 0;
  for (size_t round = 0; round < rounds; ++round) {
    temp_dir copy;
    fs::copy(p->dir.path(), copy.path(), fs::copy_options::recursive);
    fs::remove(copy.path() + "/lock");
    auto d = do_damage(*p, copy.path(), random);
    BOOST_TEST_CHECKPOINT("round " << round << ": " << d.text());
    auto before = queue_files_now(copy.path());
    std::unique_ptr<node_process> node;
    try {
      node = std::make_unique<node_process>(node_args, copy.path());
    } catch (const std::exception& e) {
      // Only damaged metadata may stop a node, and it must say which file.
      bool meta = d.kind == damage_kind::truncate_meta || d.kind == damage_kind::delete_meta;
      BOOST_TEST_REQUIRE(meta, "the node did not start after " << d.text() << ": " << e.what());
      BOOST_TEST_REQUIRE(std::string(e.what()).find(copy.path() + "/meta") != std::string::npos,
                         e.what());
      BOOST_TEST_REQUIRE((queue_files_now(copy.path()) == before));
      ++refused[names[static_cast<int>(d.kind)]];
      continue;
    }
    ++started[names[static_cast<int>(d.kind)]];
    {
      auto conn = connect_to(*node);
      auto ch = conn->open_channel();
      ch->confirm_select();
      std::vector<outbound_message> batch;
      for (int i = 0; i < 20; ++i) batch.push_back(persistent("q", "new" + std::to_string(i)));
      for (const auto& r : ch->publish_batch(std::move(batch)).get())
        BOOST_TEST_REQUIRE((r.outcome == publish_outcome::routed), d.text());
    }
    node->stop();
    check_nothing_overwritten(before, copy.path(), d);
    node = std::make_unique<node_process>(node_args, copy.path());
    auto conn = connect_to(*node);
    std::map<std::string, int> back;
    for (const auto& m : drain(*conn, "q")) {
      ++back[m.body];
      // A mark file cut exactly between two frames looks like a shorter file: its last marks
      // are gone without a trace (as after a power loss before unsynced marks reached the
      // disk), so only that damage may cost a redelivered flag.
      bool cut_marks = d.kind == damage_kind::truncate && fs::path(d.file).extension() == ".ack";
      if (p->delivered.count(m.body) != 0 && !cut_marks)
        BOOST_TEST_REQUIRE(m.redelivered, m.body << " lost its delivered mark after " << d.text());
    }
    for (const auto& [body, n] : back) {
      BOOST_TEST_REQUIRE(n == 1, body << " came back " << n << " times after " << d.text());
      bool known = p->published.count(body) != 0 || body.rfind("new", 0) == 0;
      BOOST_TEST_REQUIRE(known, "unknown message " << body << " after " << d.text());
    }
    for (int i = 0; i < 20; ++i)
      BOOST_TEST_REQUIRE(back.count("new" + std::to_string(i)) == 1u, d.text());
    for (const auto& [body, place] : p->live) {
      if (touches(d, place)) {
        lost += back.count(body) == 0;
        continue;
      }
      BOOST_TEST_REQUIRE(back.count(body) == 1u,
                         body << " (untouched, at " << place.file << " [" << place.begin << ", "
                              << place.end << ")) lost after " << d.text() << "; the node said:\n"
                              << node->log());
      ++kept;
    }
  }
  for (const auto& [kind, n] : started) BOOST_TEST_MESSAGE("started after " << kind << ": " << n);
  for (const auto& [kind, n] : refused) BOOST_TEST_MESSAGE("refused after " << kind << ": " << n);
  BOOST_TEST_MESSAGE(kept << " untouched live messages checked, all back; " << lost
                          << " damaged records lost");
}
