// Metadata records (capnp/storage.capnp) to and from bytes, and the LMDB keys they live under.
// Decoding throws std::runtime_error naming the record when its bytes are not a valid record.
#pragma once

#include "core/declarations.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace warren::persistence {

struct stored_queue {
  std::string vhost;
  queue_spec spec;  // durable = true, exclusive = false
  uint64_t id = 0;
};

struct stored_exchange {
  std::string vhost;
  exchange_spec spec;  // durable = true
};

struct stored_binding {
  std::string vhost;
  binding_spec spec;
};

std::string vhost_key(std::string_view vhost);
std::string exchange_key(std::string_view vhost, std::string_view name);
std::string queue_key(std::string_view vhost, std::string_view name);
std::string binding_key(std::string_view vhost, const binding_spec& b);
/// What a binding key says of its binding without decoding the record: its vhost, source and
/// destination (names hold no NUL, so the first three parts are plain), and whether the
/// destination is an exchange (the key's sixth part; a key of a binding to a queue ends with
/// its arguments' text, "" or ending in '\x1e').
struct binding_key_parts {
  std::string_view vhost, source, destination;
  bool to_exchange = false;
};
binding_key_parts parse_binding_key(std::string_view key);
/// What the key of every binding from exchange `source` starts with.
std::string binding_prefix(std::string_view vhost, std::string_view source);

std::string encode_format_version(uint32_t version);
uint32_t decode_format_version(std::string_view bytes);

struct stored_vhost {
  std::string name;
  vhost_limits limits;
};

std::string encode_vhost(const std::string& name, const vhost_limits& limits = {});
stored_vhost decode_vhost(std::string_view bytes);
std::string user_key(std::string_view name);
std::string encode_user(const user_record& u);
user_record decode_user(std::string_view bytes);
std::string permission_key(std::string_view user, std::string_view vhost);
std::string encode_permission(const permission_record& p);
permission_record decode_permission(std::string_view bytes);
std::string grant_key(const grant_record& g);  // its token_hash
std::string encode_grant(const grant_record& g);
grant_record decode_grant(std::string_view bytes);
std::string member_key(std::string_view name);
std::string encode_member(const cluster_member& m);
cluster_member decode_member(std::string_view bytes);
/// The one key of the "cluster" table, and its record: the node's metadata version.
inline constexpr const char* cluster_state_key = "state";
std::string encode_cluster_state(uint64_t metadata_version);
uint64_t decode_cluster_state(std::string_view bytes);

/// A consumer group's committed offset in a stream (the "streams" table).
struct stored_stream_offset {
  uint64_t queue_id = 0;
  std::string group;
  int64_t offset = -1;
  int64_t committed_at_ms = 0;
};
std::string stream_offset_key(uint64_t queue_id, std::string_view group);
/// The prefix every key of one stream's groups starts with.
std::string stream_offsets_prefix(uint64_t queue_id);
std::string encode_stream_offset(const stored_stream_offset& o);
stored_stream_offset decode_stream_offset(std::string_view bytes);

std::string encode_exchange(const stored_exchange& e);
stored_exchange decode_exchange(std::string_view bytes);

std::string encode_queue(const stored_queue& q);
stored_queue decode_queue(std::string_view bytes);

std::string encode_binding(const stored_binding& b);
stored_binding decode_binding(std::string_view bytes);

/// Arguments in a canonical text form (sorted, typed): equal tables give equal strings.
std::string canonical_arguments(const field_table& args);

}  // namespace warren::persistence
