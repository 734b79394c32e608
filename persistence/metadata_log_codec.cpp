#include "persistence/metadata_log_codec.hpp"

#include "storage.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cstring>
#include <stdexcept>
#include <utility>

namespace warren::persistence {

namespace {

constexpr uint8_t table_count = static_cast<uint8_t>(meta_table::queue_homes) + 1;

std::string to_bytes(capnp::MallocMessageBuilder& builder) {
  auto words = capnp::messageToFlatArray(builder);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

kj::ArrayPtr<const kj::byte> data_of(const std::string& s) {
  return {reinterpret_cast<const kj::byte*>(s.data()), s.size()};
}

std::string text_of(capnp::Data::Reader d) {
  return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
}

uint8_t table_number(uint8_t table) {
  if (table >= table_count)
    throw std::runtime_error("metadata log: table " + std::to_string(table) + " does not exist");
  return table;
}

void fill(capnp::List<storage::MetadataMutation>::Builder list,
          const std::vector<meta_mutation>& from) {
  for (unsigned i = 0; i < from.size(); ++i) {
    auto m = list[i];
    m.setTable(static_cast<uint8_t>(from[i].table));
    m.setKey(data_of(from[i].key));
    m.setValue(data_of(from[i].value));
    m.setErase(from[i].erase);
  }
}

std::vector<meta_mutation> read(capnp::List<storage::MetadataMutation>::Reader list) {
  std::vector<meta_mutation> out;
  out.reserve(list.size());
  for (auto m : list) {
    out.push_back({static_cast<meta_table>(table_number(m.getTable())), text_of(m.getKey()),
                   text_of(m.getValue()), m.getErase()});
  }
  return out;
}

// Parses `bytes` (copied into aligned words) as a `Root`; the traversal limit is the message's
// own size, as a snapshot may be larger than Cap'n Proto's default limit.
template <class Root, class F>
auto parse(std::string_view bytes, const char* what, F take) {
  if (bytes.size() % sizeof(capnp::word) != 0)
    throw std::runtime_error(std::string("metadata log: ") + what + " of " +
                             std::to_string(bytes.size()) + " bytes is not whole words");
  auto words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  capnp::ReaderOptions options;
  options.traversalLimitInWords = words.size() + 1;
  try {
    capnp::FlatArrayMessageReader reader(words, options);
    return take(reader.getRoot<Root>());
  } catch (const kj::Exception& e) {
    throw std::runtime_error(std::string("metadata log: ") + what +
                             " does not parse: " + e.getDescription().cStr());
  }
}

}  // namespace

std::string encode_metadata_entry(const metadata_entry& entry) {
  capnp::MallocMessageBuilder builder;
  auto root = builder.initRoot<storage::MetadataBatch>();
  fill(root.initMutations(static_cast<unsigned>(entry.changes.size())), entry.changes);
  if (!entry.conditions.empty()) {
    auto list = root.initConditions(static_cast<unsigned>(entry.conditions.size()));
    for (unsigned i = 0; i < entry.conditions.size(); ++i) {
      list[i].setTable(static_cast<uint8_t>(entry.conditions[i].table));
      list[i].setKey(data_of(entry.conditions[i].key));
      list[i].setPresent(entry.conditions[i].present);
      list[i].setPrefix(entry.conditions[i].prefix);
    }
  }
  root.setSeed(entry.seed);
  return to_bytes(builder);
}

metadata_entry decode_metadata_entry(std::string_view bytes) {
  return parse<storage::MetadataBatch>(bytes, "an entry", [](storage::MetadataBatch::Reader r) {
    metadata_entry out;
    out.changes = read(r.getMutations());
    for (auto c : r.getConditions())
      out.conditions.push_back({static_cast<meta_table>(table_number(c.getTable())),
                                text_of(c.getKey()), c.getPresent(), c.getPrefix()});
    out.seed = r.getSeed();
    if (out.seed && !out.conditions.empty())
      throw std::runtime_error("metadata log: a seed entry with conditions");
    for (const auto& m : out.changes)
      if (out.seed && m.erase)
        throw std::runtime_error("metadata log: a seed entry holds an erase");
    return out;
  });
}

std::string encode_metadata_batch(const std::vector<meta_mutation>& batch) {
  return encode_metadata_entry({batch, {}});
}

std::vector<meta_mutation> decode_metadata_batch(std::string_view bytes) {
  auto entry = decode_metadata_entry(bytes);
  if (!entry.conditions.empty() || entry.seed)
    throw std::runtime_error("metadata log: an entry with conditions read as a plain batch");
  return std::move(entry.changes);
}

std::string encode_metadata_snapshot(const metadata_snapshot& snapshot) {
  capnp::MallocMessageBuilder builder;
  auto root = builder.initRoot<storage::MetadataSnapshot>();
  root.setAppliedIndex(snapshot.applied_index);
  root.setSeeded(snapshot.seeded);
  fill(root.initRecords(static_cast<unsigned>(snapshot.records.size())), snapshot.records);
  return to_bytes(builder);
}

metadata_snapshot decode_metadata_snapshot(std::string_view bytes) {
  return parse<storage::MetadataSnapshot>(
      bytes, "a snapshot", [](storage::MetadataSnapshot::Reader r) {
        metadata_snapshot out;
        out.applied_index = r.getAppliedIndex();
        out.seeded = r.getSeeded();
        out.records = read(r.getRecords());
        for (const auto& m : out.records)
          if (m.erase) throw std::runtime_error("metadata log: a snapshot holds an erase");
        return out;
      });
}

}  // namespace warren::persistence
