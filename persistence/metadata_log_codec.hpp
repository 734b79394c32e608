// metadata_log_codec: the bytes of the cluster's metadata log (capnp/storage.capnp,
// MetadataBatch and MetadataSnapshot). A log entry is one batch of LMDB changes; a snapshot is
// every record with the last log index applied. Both come from other members, so decoding
// checks what it reads (a table out of range, a message that does not parse) and throws
// std::runtime_error naming the problem.
#pragma once

#include "persistence/lmdb_store.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace warren::persistence {

/// One log entry: changes, applied only if every condition holds. A seed entry is the log's
/// first state (a leader's records when the log had none): its changes replace every record of
/// the tables the log carries, once; a later seed changes nothing.
struct metadata_entry {
  std::vector<meta_mutation> changes;
  std::vector<meta_condition> conditions;
  bool seed = false;
};

std::string encode_metadata_entry(const metadata_entry& entry);
metadata_entry decode_metadata_entry(std::string_view bytes);
/// An entry without conditions.
std::string encode_metadata_batch(const std::vector<meta_mutation>& batch);
/// An entry's changes; throws when the entry has conditions (a caller that would ignore them).
std::vector<meta_mutation> decode_metadata_batch(std::string_view bytes);

struct metadata_snapshot {
  uint64_t applied_index = 0;
  std::vector<meta_mutation> records;  // puts only
  bool seeded = false;
};

std::string encode_metadata_snapshot(const metadata_snapshot& snapshot);
metadata_snapshot decode_metadata_snapshot(std::string_view bytes);

}  // namespace warren::persistence
