// The check of raft's messages on a stream a peer opened (persistence/raft_wire_check.hpp): the
// layouts raft_uv writes pass, whole or byte by byte; each one its decoder would read out of
// bounds, or size without limit, fails with its reason.
#include <boost/test/unit_test.hpp>

#include "persistence/raft_wire_check.hpp"

#include <string>
#include <vector>

using warren::persistence::raft_wire_check;

namespace {

void put64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

std::string message(uint64_t type, const std::string& header, const std::string& payload = {}) {
  std::string out;
  put64(out, type);
  put64(out, header.size());
  return out + header + payload;
}

std::string words(size_t n, uint64_t value = 7) {
  std::string out;
  for (size_t i = 0; i < n; ++i) put64(out, value);
  return out;
}

// term, prev index, prev term, commit; then the entries' headers.
std::string append_entries(const std::vector<std::pair<uint8_t, uint32_t>>& entries) {
  std::string h = words(4);
  put64(h, entries.size());
  std::string payload;
  for (auto [type, len] : entries) {
    put64(h, 3);  // term
    h.push_back(static_cast<char>(type));
    h.append(3, '\0');
    for (int i = 0; i < 4; ++i) h.push_back(static_cast<char>(len >> (8 * i)));
    payload.append(len, 'e');
  }
  put64(h, 0);  // raft sizes the header one u64 longer than it writes
  return message(1, h, payload);
}

// A configuration as raft encodes it: format, count, then id, address and NUL, role; padded.
std::string configuration(const std::vector<std::string>& addresses) {
  std::string c(1, '\1');
  put64(c, addresses.size());
  for (const auto& a : addresses) {
    put64(c, 42);
    c += a;
    c.push_back('\0');
    c.push_back('\1');
  }
  while (c.size() % 8 != 0) c.push_back('\0');
  return c;
}

std::string install_snapshot(const std::string& conf, uint64_t conf_len, uint64_t data_len,
                             const std::string& data) {
  std::string h = words(4);
  put64(h, conf_len);
  h += conf;
  put64(h, data_len);
  put64(h, 0);  // as raft sizes it
  return message(5, h, data);
}

std::string fails_with(const std::string& bytes) {
  raft_wire_check check;
  BOOST_TEST(!check.feed(bytes.data(), bytes.size()));
  return check.problem();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(raft_wire_check_suite)

BOOST_AUTO_TEST_CASE(raft_uvs_own_layouts_pass_whole_and_byte_by_byte) {
  auto conf = configuration({"warren@a:1", "warren@b:2"});
  std::string stream = message(3, words(5)) + message(4, words(3)) + message(2, words(3)) +
                       message(6, words(3)) + append_entries({{1, 8}, {3, 24}, {2, 0}}) +
                       install_snapshot(conf, conf.size(), 16, std::string(16, 's')) +
                       message(3, words(4));  // a version-1 request vote
  raft_wire_check whole;
  BOOST_TEST(whole.feed(stream.data(), stream.size()));
  BOOST_TEST(whole.problem() == "");
  raft_wire_check bytewise;
  for (char c : stream) BOOST_REQUIRE(bytewise.feed(&c, 1));
}

BOOST_AUTO_TEST_CASE(headers_too_short_for_their_type_fail) {
  BOOST_TEST(fails_with(message(9, words(3))) == "message type 9");
  BOOST_TEST(fails_with(message(3, words(1))).find("a header of 8 bytes") != std::string::npos);
  BOOST_TEST(fails_with(message(4, words(1))).find("message type 4") != std::string::npos);
  BOOST_TEST(fails_with(message(2, words(2))).find("16 bytes") != std::string::npos);
  BOOST_TEST(fails_with(message(6, "")).find("a header of 0 bytes") != std::string::npos);
  std::string huge;
  put64(huge, 3);
  put64(huge, ~0ull);
  BOOST_TEST(fails_with(huge).find("bytes for message type 3") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(append_entries_with_lying_counts_types_or_sizes_fail) {
  auto bad_count = append_entries({{1, 8}});
  bad_count[16 + 32] = 5;  // says 5 entries, holds 1
  BOOST_TEST(fails_with(bad_count).find("5 entries") != std::string::npos);
  BOOST_TEST(fails_with(append_entries({{7, 8}})) == "entry type 7");
  BOOST_TEST(fails_with(append_entries({{1, 5}})).find("not padded") != std::string::npos);
}

// The frame that made raft read from a wild address: a configuration length of 2^40.
BOOST_AUTO_TEST_CASE(install_snapshot_with_a_configuration_out_of_bounds_fails) {
  std::string conf = configuration({"warren@a:1"});
  BOOST_TEST(fails_with(install_snapshot(conf, 1ull << 40, 0, "")).find("configuration of") !=
             std::string::npos);
  auto many = conf;
  many[8] = '\x7f';  // a server count far beyond what follows
  BOOST_TEST(fails_with(install_snapshot(many, many.size(), 0, "")).find("servers") !=
             std::string::npos);
  auto no_nul = std::string(1, '\1');
  put64(no_nul, 1);
  put64(no_nul, 42);
  no_nul += "warren@a:1xxxxxx";  // no NUL before the end
  BOOST_TEST(fails_with(install_snapshot(no_nul, no_nul.size(), 0, "")) ==
             "a configuration cut short");
  BOOST_TEST(fails_with(install_snapshot(conf, conf.size(), 1ull << 40, "")).find("snapshot of") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_stream_that_failed_stays_failed) {
  raft_wire_check check;
  auto bad = message(9, words(3));
  BOOST_TEST(!check.feed(bad.data(), bad.size()));
  auto good = message(3, words(5));
  BOOST_TEST(!check.feed(good.data(), good.size()));
  BOOST_TEST(check.problem() == "message type 9");
}

BOOST_AUTO_TEST_SUITE_END()
