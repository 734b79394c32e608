// What the segment store suites share: a temporary queue folder with ways to fill, reopen and
// list it (segment_store_fixture), messages with nested headers, byte-level edits of files, and
// the sets and bodies of what a store recovered.
#pragma once

#include "persistence/segment_format.hpp"
#include "persistence/segment_store.hpp"
#include "subprocess.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

namespace warren::test::segments {

using namespace warren::persistence;
namespace fs = std::filesystem;

inline message make_message(const std::string& body) {
  message m;
  m.id = next_message_id();
  m.exchange = "ex";
  m.routing_key = "key";
  message_properties p;
  p.persistent = true;
  p.headers = {{"h", field_value::of_int(7)},
               {"nested", field_value::of_table(
                              {{"hops", field_value::of_array({field_value::of_text("a"),
                                                               field_value::of_int(2)})}})}};
  m.set_properties(std::move(p));
  m.body = body;
  return m;
}

struct segment_store_fixture {
  warren::test::temp_dir tmp;
  std::string dir = tmp.path() + "/queues/1";

  std::vector<recovered_message> reopen(recovery_report& report, segment_store::options opts = {}) {
    segment_store store(dir, "'t'", opts);
    return store.recover(report);
  }

  // The folder's files ending in `suffix`, in name order.
  std::vector<fs::path> files(const std::string& suffix = ".seg") {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == suffix) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<fs::path> segment_files() { return files(".seg"); }

  // A store with `n` messages "m1".."mn" synced, then closed.
  void fill(uint64_t n, segment_store::options opts = {}) {
    segment_store store(dir, "'t'", opts);
    recovery_report r;
    store.recover(r);
    for (uint64_t i = 1; i <= n; ++i) store.append(i, make_message("m" + std::to_string(i)));
    BOOST_REQUIRE(store.sync(true));
  }
};

inline std::string read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_bytes(const fs::path& file, uint64_t offset, const std::string& bytes) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline void flip_bit(const fs::path& file, uint64_t offset, uint8_t mask) {
  auto data = read_bytes(file);
  write_bytes(file, offset, std::string(1, static_cast<char>(data.at(offset) ^ mask)));
}

// Offsets of the frames of a segment file, as a reader that knows the format finds them.
inline std::vector<uint64_t> frame_offsets(const fs::path& file) {
  auto data = read_bytes(file);
  auto scan =
      format::scan_frames(data, format::file_header_size, [](std::string_view) { return true; });
  std::vector<uint64_t> out;
  for (const auto& f : scan.frames) out.push_back(f.offset);
  return out;
}

inline std::set<uint64_t> seqs(const std::vector<recovered_message>& rs) {
  std::set<uint64_t> out;
  for (const auto& r : rs) out.insert(r.seq);
  return out;
}

inline std::set<uint64_t> range(uint64_t from, uint64_t to) {
  std::set<uint64_t> out;
  for (auto i = from; i <= to; ++i) out.insert(i);
  return out;
}

inline std::vector<std::string> bodies(const std::vector<recovered_message>& rs) {
  std::vector<std::string> out;
  for (const auto& r : rs) out.push_back(r.msg->body);
  return out;
}

using strings = std::vector<std::string>;

}  // namespace warren::test::segments
