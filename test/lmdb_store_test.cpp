// The metadata store against real LMDB files in a temporary directory: a map that fills up is
// grown and the batch written again, so that metadata is never refused for want of address
// space, and what was written reads back, also after reopening with a smaller map. Every value
// is sealed with a checksum: a damaged one is reported with its table and key, and a format-2
// directory (values unsealed) is sealed when opened.
#include <boost/test/unit_test.hpp>

#include "persistence/lmdb_store.hpp"
#include "persistence/metadata_codec.hpp"
#include "subprocess.hpp"

#include <lmdb.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

using warren::persistence::lmdb_store;
using warren::persistence::meta_mutation;
using warren::persistence::meta_table;

BOOST_AUTO_TEST_SUITE(lmdb_store_suite)

namespace {

constexpr size_t small_map = 256 * 1024;

// `count` users from `first` on, each with a 1 KiB password hash, in batches of 100.
void add_users(lmdb_store& store, int first, int count) {
  std::vector<meta_mutation> batch;
  for (int i = first; i < first + count; ++i) {
    warren::user_record u{"user-" + std::to_string(i), std::string(1024, 'h'), {}};
    batch.push_back({meta_table::users, warren::persistence::user_key(u.name),
                     warren::persistence::encode_user(u), false});
    if (batch.size() == 100) {
      store.apply(batch);
      batch.clear();
    }
  }
  store.apply(batch);
}

// Flips a bit in every copy of `text` in the LMDB data file (older copies in free pages too).
size_t flip_every(const std::string& dir, const std::string& text) {
  auto file = dir + "/data.mdb";
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  size_t n = 0;
  for (auto at = bytes.find(text); at != std::string::npos; at = bytes.find(text, at + 1), ++n)
    bytes[at + text.size() / 2] ^= 0x01;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  return n;
}

// A directory as format 2 left it: values without seals, stamped 2; `count` users (named
// `user`, then user-1, user-2, ...), in a map of `map_bytes` (LMDB's default when 0).
void write_format2(const std::string& dir, const std::string& user, int count = 1,
                   const std::string& hash = "hash", size_t map_bytes = 0) {
  MDB_env* env = nullptr;
  mdb_env_create(&env);
  mdb_env_set_maxdbs(env, 16);
  if (map_bytes != 0) mdb_env_set_mapsize(env, map_bytes);
  BOOST_REQUIRE(mdb_env_open(env, dir.c_str(), 0, 0644) == 0);
  MDB_txn* txn = nullptr;
  mdb_txn_begin(env, nullptr, 0, &txn);
  MDB_dbi meta, users;
  mdb_dbi_open(txn, "meta", MDB_CREATE, &meta);
  mdb_dbi_open(txn, "users", MDB_CREATE, &users);
  std::string vk = "format-version", vv = warren::persistence::encode_format_version(2);
  MDB_val k1{vk.size(), vk.data()}, v1{vv.size(), vv.data()};
  mdb_put(txn, meta, &k1, &v1, 0);
  for (int i = 0; i < count; ++i) {
    auto name = i == 0 ? user : "user-" + std::to_string(i);
    std::string uk = warren::persistence::user_key(name);
    std::string uv = warren::persistence::encode_user({name, hash, {}});
    MDB_val k2{uk.size(), uk.data()}, v2{uv.size(), uv.data()};
    BOOST_REQUIRE(mdb_put(txn, users, &k2, &v2, 0) == 0);
  }
  BOOST_REQUIRE(mdb_txn_commit(txn) == 0);
  mdb_env_close(env);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_damaged_value_is_reported_with_its_table_and_key) {
  warren::test::temp_dir dir;
  {
    lmdb_store store(dir.path());
    warren::user_record u{"alice", "a-password-hash-only-found-in-the-value", {}};
    store.apply({{meta_table::users, warren::persistence::user_key(u.name),
                  warren::persistence::encode_user(u), false}});
  }
  BOOST_REQUIRE(flip_every(dir.path(), "a-password-hash-only-found-in-the-value") >= 1u);
  lmdb_store store(dir.path());
  try {
    store.load();
    BOOST_FAIL("a damaged value was decoded");
  } catch (const std::runtime_error& e) {
    std::string what = e.what();
    BOOST_TEST(what.find("metadata record damaged: table 'users', key '") != std::string::npos,
               what);
    BOOST_TEST(what.find("alice") != std::string::npos, what);
  }
}

BOOST_AUTO_TEST_CASE(a_format_2_directory_is_sealed_when_opened) {
  warren::test::temp_dir dir;
  write_format2(dir.path(), "bob");
  {
    lmdb_store store(dir.path());
    BOOST_TEST(store.found_version() == lmdb_store::format_version);
    auto users = store.load().users;
    BOOST_REQUIRE(users.size() == 1u);
    BOOST_TEST(users.front().name == "bob");
  }
  lmdb_store again(dir.path());  // sealed once, not twice
  BOOST_TEST(again.load().users.size() == 1u);
  BOOST_TEST(again.load().users.front().password_hash == "hash");
}

// Sealing rewrites every value in the one transaction that opens the directory, which needs
// about as many new pages as the data holds: a directory that filled most of its map still opens.
BOOST_AUTO_TEST_CASE(a_format_2_directory_that_fills_its_map_is_sealed_when_opened) {
  warren::test::temp_dir dir;
  constexpr size_t map = 8 << 20;
  write_format2(dir.path(), "bob", 3000, std::string(1024, 'h'), map);  // about 6 MiB
  lmdb_store store(dir.path(), {}, small_map);
  auto users = store.load().users;
  BOOST_REQUIRE(users.size() == 3000u);
  BOOST_TEST(users.front().password_hash == std::string(1024, 'h'));
}

BOOST_AUTO_TEST_CASE(a_full_map_is_grown_and_nothing_is_refused) {
  warren::test::temp_dir dir;
  {
    lmdb_store store(dir.path(), {}, small_map);
    add_users(store, 0, 2000);  // about 2 MiB: eight times the map
    BOOST_TEST(store.load().users.size() == 2000u);
  }
  // Reopened with the small map again: LMDB maps what the file holds, and it grows on.
  lmdb_store store(dir.path(), {}, small_map);
  BOOST_TEST(store.load().users.size() == 2000u);
  add_users(store, 2000, 1000);
  auto users = store.load().users;
  BOOST_REQUIRE(users.size() == 3000u);
  BOOST_TEST(users.front().password_hash == std::string(1024, 'h'));
}

// The metadata log's thread reads and writes beside the persistence actor. A map grown under a
// reader's open transaction could leave it reading unmapped pages: growth waits for readers.
BOOST_AUTO_TEST_CASE(the_map_grows_while_another_thread_reads) {
  warren::test::temp_dir dir;
  lmdb_store store(dir.path(), {}, small_map);
  std::atomic<bool> writing{true};
  std::atomic<size_t> reads{0}, wrong{0};
  std::thread reader([&] {
    size_t last = 0;
    do {
      auto users = store.load().users.size();         // one read transaction over every table
      if (users < last || users % 100 != 0) ++wrong;  // batches land whole, and never go
      last = users;
      ++reads;
    } while (writing);
  });
  add_users(store, 0, 3000);  // grows the map from 256 KiB to over 3 MiB, step by step
  writing = false;
  reader.join();
  BOOST_TEST(wrong == 0u);
  BOOST_TEST(reads > 0u);
  BOOST_TEST(store.load().users.size() == 3000u);
}

BOOST_AUTO_TEST_SUITE_END()
