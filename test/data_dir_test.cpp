// The data directory with real node processes: queue names never become paths, one node at a
// time owns a data dir, a newer format is refused and an older one upgraded (also when an
// upgrade was cut short by a crash). Its own suite because it is about the data dir's layout
// and format version, not about which messages a crash leaves (durability_test).
#include <boost/test/unit_test.hpp>

#include "node_client.hpp"
#include "persistence/crc32c.hpp"
#include "persistence/lmdb_store.hpp"
#include "persistence/metadata_codec.hpp"
#include "storage.capnp.h"
#include "subprocess.hpp"
#include "warren/channel.hpp"
#include "warren/connection.hpp"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <lmdb.h>

#include <filesystem>
#include <fstream>
#include <set>

using namespace warren::client;
using namespace warren::test;
namespace fs = std::filesystem;

BOOST_AUTO_TEST_SUITE(data_dir)

BOOST_AUTO_TEST_CASE(queue_names_never_become_paths) {
  temp_dir dir;
  {
    node_process node({}, dir.path() + "/data");
    auto conn = connect_to(node);
    auto ch = conn->open_channel();
    ch->queue_declare("../../x", durable);
    ch->confirm_select();
    ch->publish(persistent("../../x", "contained"));
    BOOST_TEST(drain(*conn, "../../x").size() == 1u);
    ch->publish(persistent("../../x", "again"));
  }
  std::set<std::string> top;
  for (const auto& e : fs::directory_iterator(dir.path())) top.insert(e.path().filename().string());
  BOOST_TEST((top == std::set<std::string>{"data"}));
  std::set<std::string> inside;
  for (const auto& e : fs::directory_iterator(dir.path() + "/data"))
    inside.insert(e.path().filename().string());
  BOOST_TEST((inside == std::set<std::string>{"lock", "meta", "queues"}));
  for (const auto& q : fs::directory_iterator(dir.path() + "/data/queues"))
    BOOST_TEST(q.path().filename().string().find_first_not_of("0123456789") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(two_nodes_cannot_share_a_data_dir) {
  temp_dir dir;
  node_process first({}, dir.path());
  auto r = warren::test::run_command({WARREN_NODE_PATH, "--port", "0", "--data-dir", dir.path()});
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(r.err.find("in use by another warren-node (pid " + std::to_string(first.pid()) +
                        ")") != std::string::npos);
  BOOST_TEST(first.alive());
}

// Stamps a data dir's metadata with another format version, as another build would have.
void stamp_format_version(const std::string& data_dir, uint32_t version) {
  MDB_env* env = nullptr;
  mdb_env_create(&env);
  mdb_env_set_maxdbs(env, 8);
  BOOST_REQUIRE(mdb_env_open(env, (data_dir + "/meta").c_str(), 0, 0644) == 0);
  MDB_txn* txn = nullptr;
  mdb_txn_begin(env, nullptr, 0, &txn);
  MDB_dbi dbi;
  mdb_dbi_open(txn, "meta", MDB_CREATE, &dbi);
  std::string key = "format-version", value = warren::persistence::encode_format_version(version);
  MDB_val k{key.size(), key.data()}, v{value.size(), value.data()};
  mdb_put(txn, dbi, &k, &v, 0);
  BOOST_REQUIRE(mdb_txn_commit(txn) == 0);
  mdb_env_close(env);
}

uint32_t format_version_of(const std::string& data_dir) {
  MDB_env* env = nullptr;
  mdb_env_create(&env);
  mdb_env_set_maxdbs(env, 8);
  BOOST_REQUIRE(mdb_env_open(env, (data_dir + "/meta").c_str(), MDB_RDONLY, 0644) == 0);
  MDB_txn* txn = nullptr;
  mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn);
  MDB_dbi dbi;
  mdb_dbi_open(txn, "meta", 0, &dbi);
  std::string key = "format-version";
  MDB_val k{key.size(), key.data()}, v;
  BOOST_REQUIRE(mdb_get(txn, dbi, &k, &v) == 0);
  auto version = warren::persistence::decode_format_version(
      std::string_view(static_cast<const char*>(v.mv_data), v.mv_size));
  mdb_txn_abort(txn);
  mdb_env_close(env);
  return version;
}

BOOST_AUTO_TEST_CASE(a_newer_format_is_refused_with_a_clear_message) {
  temp_dir dir;
  { node_process node({}, dir.path()); }
  stamp_format_version(dir.path(), 99);
  auto r = warren::test::run_command({node_binary(), "--port", "0", "--data-dir", dir.path()});
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(r.err.find("format version 99") != std::string::npos);
}

// A first start stores the format version first and vhost '/' with its user later: a power cut
// (or kill -9) in between used to leave a node that started and answered "no vhost '/'" for
// ever. Metadata without a single record is a first start cut short, and is started over.
BOOST_AUTO_TEST_CASE(a_first_start_cut_short_is_started_over) {
  temp_dir dir;
  fs::create_directories(dir.path() + "/meta");
  stamp_format_version(dir.path(), 2);  // as the build before format 3 left it
  node_process node({}, dir.path());
  auto conn = connect_to(node);
  auto ch = conn->open_channel();
  ch->queue_declare("q", durable);
  ch->confirm_select();
  publish_confirmed(*ch, "q", 3);
}

// A format-1 segment as the previous build wrote it: u32 length | u32 crc32c(payload) | u8 flags
// (bit 0 live, bit 1 delivered) | 3 reserved | a Cap'n Proto StoredMessage.
std::string format1_record(uint64_t seq, const std::string& body, uint8_t flags) {
  capnp::MallocMessageBuilder builder;
  auto r = builder.initRoot<warren::storage::StoredMessage>();
  r.setSeq(seq);
  auto id = warren::next_message_id();
  r.setId(kj::arrayPtr(id.bytes.data(), id.bytes.size()));
  r.setRoutingKey("q");
  r.initProperties().setPersistent(true);
  r.setBody(kj::arrayPtr(reinterpret_cast<const kj::byte*>(body.data()), body.size()));
  auto words = capnp::messageToFlatArray(builder);
  auto bytes = words.asBytes();
  std::string payload(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
  std::string out(12, '\0');
  auto put = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>(v >> (8 * i));
  };
  put(0, static_cast<uint32_t>(payload.size()));
  put(4, warren::persistence::crc32c(payload.data(), payload.size()));
  out[8] = static_cast<char>(flags);
  return out + payload;
}

// A data dir of format 1: the durable queue "q" with five records, the second acked, the third
// delivered.
std::string make_format1_dir(const std::string& data_dir) {
  auto folder = make_queue(data_dir, 1);  // the queue's record and folder
  fs::remove_all(folder);
  fs::create_directories(folder);
  std::ofstream seg(folder + "/00000000000000000001.seg", std::ios::binary);
  for (uint64_t i = 1; i <= 5; ++i)
    seg << format1_record(i, "v1-" + std::to_string(i), i == 2 ? 0 : i == 3 ? 3 : 1);
  seg.close();
  stamp_format_version(data_dir, 1);
  return folder;
}

void expect_format1_messages_upgraded(const std::string& data_dir) {
  node_process node({}, data_dir);
  BOOST_TEST(node.log().find("from format 1 to 3") != std::string::npos);
  auto conn = connect_to(node);
  auto all = drain(*conn, "q");
  std::vector<std::string> bodies;
  for (const auto& d : all) bodies.push_back(d.body);
  BOOST_TEST(bodies == (std::vector<std::string>{"v1-1", "v1-3", "v1-4", "v1-5"}),
             boost::test_tools::per_element());
  BOOST_REQUIRE(all.size() == 4u);
  BOOST_TEST(!all[0].redelivered);
  BOOST_TEST(all[1].redelivered);  // its delivered bit became a delivered mark
  BOOST_TEST(format_version_of(data_dir) == 3u);
  std::set<std::string> entries;
  for (const auto& e : fs::directory_iterator(data_dir + "/queues"))
    entries.insert(e.path().filename().string());
  BOOST_TEST((entries == std::set<std::string>{"1"}));  // no copy left behind
}

BOOST_AUTO_TEST_CASE(an_older_format_with_queue_files_is_upgraded) {
  temp_dir dir;
  make_format1_dir(dir.path());
  expect_format1_messages_upgraded(dir.path());
}

// A crash between moving the old folder aside and putting the new one in place.
BOOST_AUTO_TEST_CASE(an_upgrade_cut_short_by_a_crash_is_finished_by_the_next_start) {
  temp_dir dir;
  auto folder = make_format1_dir(dir.path());
  fs::rename(folder, folder + ".format1");
  fs::create_directories(folder + ".upgrade");
  std::ofstream(folder + ".upgrade/00000000000000000001.seg") << "half written";
  expect_format1_messages_upgraded(dir.path());
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A format-1 data dir like make_format1_dir's whose segment ends in 40 bytes no record can be
// read from; returns the segment's bytes.
std::string make_damaged_format1_dir(const std::string& data_dir) {
  auto folder = make_format1_dir(data_dir);
  auto segment = folder + "/00000000000000000001.seg";
  std::ofstream(segment, std::ios::binary | std::ios::app) << std::string(40, '\x7f');
  return file_bytes(segment);
}

// The originals of a folder in which the upgrade found damage are kept, byte for byte, beside
// the upgraded queue, whose messages are all there once.
void expect_damaged_originals_kept(const std::string& data_dir, const std::string& original) {
  auto folder = data_dir + "/queues/1";
  {
    node_process node({}, data_dir);
    auto bodies = std::vector<std::string>{};
    for (const auto& d : drain(*connect_to(node), "q")) bodies.push_back(d.body);
    BOOST_TEST(bodies == (std::vector<std::string>{"v1-1", "v1-3", "v1-4", "v1-5"}),
               boost::test_tools::per_element());
  }
  BOOST_TEST(format_version_of(data_dir) == 3u);
  BOOST_TEST(!fs::exists(folder + ".format1"));
  auto kept = folder + ".format1-damaged/00000000000000000001.seg";
  BOOST_TEST(fs::exists(kept));
  BOOST_TEST((file_bytes(kept) == original), "the kept segment differs from the original");
}

BOOST_AUTO_TEST_CASE(damaged_originals_are_kept_after_an_upgrade) {
  temp_dir dir;
  auto original = make_damaged_format1_dir(dir.path());
  expect_damaged_originals_kept(dir.path(), original);
}

// A crash between the last two renames of an upgrade: the new folder is in place, the damaged
// originals still carry their temporary name (.format1), the metadata is not stamped yet. The
// next start must keep them, not take them for a clean copy to remove. (Built as the crash
// leaves it: renames are atomic, so these are the only states a crash there can leave.)
BOOST_AUTO_TEST_CASE(damaged_originals_survive_a_crash_between_the_last_two_renames) {
  temp_dir dir;
  auto original = make_damaged_format1_dir(dir.path());
  auto folder = dir.path() + "/queues/1";
  { node_process node({}, dir.path()); }  // a whole upgrade, to get the new folder
  BOOST_REQUIRE(fs::exists(folder + ".format1-damaged"));
  fs::rename(folder + ".format1-damaged", folder + ".format1");
  stamp_format_version(dir.path(), 1);
  expect_damaged_originals_kept(dir.path(), original);
}

// The same crash with clean originals: the copy goes once the metadata is stamped.
BOOST_AUTO_TEST_CASE(clean_originals_left_by_a_crash_are_removed) {
  temp_dir dir;
  auto folder = make_format1_dir(dir.path());
  { node_process node({}, dir.path()); }
  fs::create_directories(folder + ".format1");
  std::ofstream(folder + ".format1/00000000000000000001.seg", std::ios::binary)
      << format1_record(1, "v1-1", 1);
  stamp_format_version(dir.path(), 1);
  { node_process node({}, dir.path()); }
  BOOST_TEST(!fs::exists(folder + ".format1"));
  BOOST_TEST(!fs::exists(folder + ".format1-damaged"));
}

BOOST_AUTO_TEST_CASE(an_older_format_without_queue_files_is_upgraded_in_place) {
  temp_dir dir;
  {
    node_process node({}, dir.path());
    exchange_options o;
    o.durable = true;
    connect_to(node)->open_channel()->exchange_declare("logs", "fanout", o);
  }
  stamp_format_version(dir.path(), 1);
  {
    node_process node({}, dir.path());
    auto conn = connect_to(node);
    bool found = false;
    for (const auto& e : conn->list_exchanges()) found = found || e.name == "logs";
    BOOST_TEST(found);
  }
  BOOST_TEST(format_version_of(dir.path()) == 3u);
}

BOOST_AUTO_TEST_SUITE_END()
