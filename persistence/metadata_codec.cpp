#include "persistence/metadata_codec.hpp"

#include "core/wire_fields.hpp"
#include "storage.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace warren::persistence {

namespace {

std::string to_bytes(capnp::MallocMessageBuilder& builder) {
  auto words = capnp::messageToFlatArray(builder);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

// Reads a record; copies into aligned words because LMDB values carry no alignment promise.
template <class Root, class F>
auto from_bytes(std::string_view bytes, const char* what, F read) {
  if (bytes.size() % sizeof(capnp::word) != 0)
    throw std::runtime_error(std::string("corrupt ") + what + " record (size " +
                             std::to_string(bytes.size()) + ")");
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  try {
    capnp::FlatArrayMessageReader reader(words);
    return read(reader.getRoot<Root>());
  } catch (const kj::Exception& e) {
    throw std::runtime_error(std::string("corrupt ") + what +
                             " record: " + e.getDescription().cStr());
  }
}

std::string joined(std::initializer_list<std::string_view> parts) {
  std::string out;
  bool first = true;
  for (auto p : parts) {
    if (!first) out += '\0';
    out.append(p.data(), p.size());
    first = false;
  }
  return out;
}

}  // namespace

std::string canonical_arguments(const field_table& args) {
  std::vector<std::string> parts;
  for (const auto& f : args)
    parts.push_back(f.key + '\x1f' + std::to_string(f.value.kind) + to_string(f.value));
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (auto& p : parts) out += p + '\x1e';
  return out;
}

std::string vhost_key(std::string_view vhost) {
  return std::string(vhost);
}
std::string exchange_key(std::string_view vhost, std::string_view name) {
  return joined({vhost, name});
}
std::string queue_key(std::string_view vhost, std::string_view name) {
  return joined({vhost, name});
}
std::string binding_key(std::string_view vhost, const binding_spec& b) {
  auto args = canonical_arguments(b.arguments);
  // Bindings to exchanges carry a sixth part, so that an exchange and a queue of one name are
  // different destinations; keys of bindings to queues are as format 1 wrote them.
  if (b.to_exchange) return joined({vhost, b.exchange, b.destination, b.key, args, "exchange"});
  return joined({vhost, b.exchange, b.destination, b.key, args});
}

std::string binding_prefix(std::string_view vhost, std::string_view source) {
  return joined({vhost, source, ""});
}

binding_key_parts parse_binding_key(std::string_view key) {
  binding_key_parts out;
  constexpr std::string_view exchange_tail{"\0exchange", 9};
  out.to_exchange = key.size() >= exchange_tail.size() &&
                    key.substr(key.size() - exchange_tail.size()) == exchange_tail;
  std::string_view* parts[] = {&out.vhost, &out.source, &out.destination};
  for (auto* part : parts) {
    auto cut = key.find('\0');
    *part = key.substr(0, cut);
    if (cut == std::string_view::npos) break;
    key.remove_prefix(cut + 1);
  }
  return out;
}

std::string encode_format_version(uint32_t version) {
  capnp::MallocMessageBuilder builder;
  builder.initRoot<storage::FormatVersion>().setVersion(version);
  return to_bytes(builder);
}

uint32_t decode_format_version(std::string_view bytes) {
  return from_bytes<storage::FormatVersion>(
      bytes, "format-version", [](storage::FormatVersion::Reader r) { return r.getVersion(); });
}

std::string encode_vhost(const std::string& name, const vhost_limits& limits) {
  capnp::MallocMessageBuilder builder;
  auto r = builder.initRoot<storage::VhostRecord>();
  r.setName(name);
  r.setMaxConnections(limits.max_connections);
  r.setMaxQueues(limits.max_queues);
  return to_bytes(builder);
}

stored_vhost decode_vhost(std::string_view bytes) {
  return from_bytes<storage::VhostRecord>(bytes, "vhost", [](storage::VhostRecord::Reader r) {
    return stored_vhost{wire::text(r.getName()), {r.getMaxConnections(), r.getMaxQueues()}};
  });
}

std::string user_key(std::string_view name) {
  return std::string(name);
}

std::string encode_user(const user_record& u) {
  capnp::MallocMessageBuilder builder;
  auto r = builder.initRoot<storage::UserRecord>();
  r.setName(u.name);
  r.setPasswordHash(u.password_hash);
  auto tags = r.initTags(static_cast<unsigned>(u.tags.size()));
  for (unsigned i = 0; i < u.tags.size(); ++i) tags.set(i, u.tags[i]);
  return to_bytes(builder);
}

user_record decode_user(std::string_view bytes) {
  return from_bytes<storage::UserRecord>(bytes, "user", [](storage::UserRecord::Reader r) {
    user_record u{wire::text(r.getName()), wire::text(r.getPasswordHash()), {}};
    for (auto t : r.getTags()) u.tags.push_back(wire::text(t));
    return u;
  });
}

std::string permission_key(std::string_view user, std::string_view vhost) {
  return joined({user, vhost});
}

std::string encode_permission(const permission_record& p) {
  capnp::MallocMessageBuilder builder;
  auto r = builder.initRoot<storage::PermissionRecord>();
  r.setUser(p.user);
  r.setVhost(p.vhost);
  r.setConfigure(p.configure);
  r.setWrite(p.write);
  r.setRead(p.read);
  return to_bytes(builder);
}

permission_record decode_permission(std::string_view bytes) {
  return from_bytes<storage::PermissionRecord>(
      bytes, "permission", [](storage::PermissionRecord::Reader r) {
        return permission_record{wire::text(r.getUser()), wire::text(r.getVhost()),
                                 wire::text(r.getConfigure()), wire::text(r.getWrite()),
                                 wire::text(r.getRead())};
      });
}

std::string grant_key(const grant_record& g) {
  return g.token_hash;
}

std::string encode_grant(const grant_record& g) {
  capnp::MallocMessageBuilder builder;
  auto r = builder.initRoot<storage::GrantRecord>();
  r.setTokenHash(g.token_hash);
  r.setTokenPrefix(g.token_prefix);
  r.setKind(static_cast<uint8_t>(g.kind));
  r.setVhost(g.vhost);
  r.setUser(g.user);
  r.setTarget(g.target);
  r.setKeyPattern(g.key_pattern);
  r.setCreatedMs(g.created_ms);
  r.setExpiresMs(g.expires_ms);
  return to_bytes(builder);
}

grant_record decode_grant(std::string_view bytes) {
  return from_bytes<storage::GrantRecord>(bytes, "grant", [](storage::GrantRecord::Reader r) {
    if (r.getKind() > static_cast<uint8_t>(grant_kind::consumer))
      throw std::runtime_error("grant record of unknown kind " + std::to_string(r.getKind()));
    return grant_record{wire::text(r.getTokenHash()),
                        wire::text(r.getTokenPrefix()),
                        static_cast<grant_kind>(r.getKind()),
                        wire::text(r.getVhost()),
                        wire::text(r.getUser()),
                        wire::text(r.getTarget()),
                        wire::text(r.getKeyPattern()),
                        r.getCreatedMs(),
                        r.getExpiresMs()};
  });
}

std::string member_key(std::string_view name) {
  return std::string(name);
}

std::string encode_member(const cluster_member& m) {
  capnp::MallocMessageBuilder builder;
  auto r = builder.initRoot<storage::MemberRecord>();
  r.setName(m.name);
  r.setAddress(m.address);
  return to_bytes(builder);
}

cluster_member decode_member(std::string_view bytes) {
  return from_bytes<storage::MemberRecord>(bytes, "member", [](storage::MemberRecord::Reader r) {
    return cluster_member{wire::text(r.getName()), wire::text(r.getAddress())};
  });
}

std::string stream_offsets_prefix(uint64_t queue_id) {
  std::string key(8, '\0');
  for (int i = 7; i >= 0; --i, queue_id >>= 8)
    key[static_cast<size_t>(i)] = static_cast<char>(queue_id & 0xff);
  return key;
}

std::string stream_offset_key(uint64_t queue_id, std::string_view group) {
  return stream_offsets_prefix(queue_id) + std::string(group);
}

std::string encode_stream_offset(const stored_stream_offset& o) {
  capnp::MallocMessageBuilder builder;
  auto r = builder.initRoot<storage::StreamOffsetRecord>();
  r.setQueueId(o.queue_id);
  r.setGroup(o.group);
  r.setOffset(o.offset);
  r.setCommittedAt(o.committed_at_ms);
  return to_bytes(builder);
}

stored_stream_offset decode_stream_offset(std::string_view bytes) {
  return from_bytes<storage::StreamOffsetRecord>(
      bytes, "stream offset", [](storage::StreamOffsetRecord::Reader r) {
        return stored_stream_offset{r.getQueueId(), wire::text(r.getGroup()), r.getOffset(),
                                    r.getCommittedAt()};
      });
}

std::string encode_cluster_state(uint64_t metadata_version) {
  capnp::MallocMessageBuilder builder;
  builder.initRoot<storage::ClusterStateRecord>().setMetadataVersion(metadata_version);
  return to_bytes(builder);
}

uint64_t decode_cluster_state(std::string_view bytes) {
  return from_bytes<storage::ClusterStateRecord>(
      bytes, "cluster state",
      [](storage::ClusterStateRecord::Reader r) { return r.getMetadataVersion(); });
}

std::string encode_exchange(const stored_exchange& e) {
  capnp::MallocMessageBuilder builder;
  auto r = builder.initRoot<storage::ExchangeRecord>();
  r.setVhost(e.vhost);
  r.setName(e.spec.name);
  r.setType(to_string(e.spec.type));
  r.setAutoDelete(e.spec.auto_delete);
  r.setInternal(e.spec.internal);
  wire::write_table(e.spec.arguments,
                    r.initArguments(static_cast<unsigned>(e.spec.arguments.size())));
  return to_bytes(builder);
}

stored_exchange decode_exchange(std::string_view bytes) {
  return from_bytes<storage::ExchangeRecord>(
      bytes, "exchange", [](storage::ExchangeRecord::Reader r) {
        stored_exchange e;
        e.vhost = wire::text(r.getVhost());
        e.spec.name = wire::text(r.getName());
        if (!parse_exchange_type(wire::text(r.getType()), e.spec.type))
          throw std::runtime_error("exchange record '" + e.spec.name + "' has unknown type '" +
                                   wire::text(r.getType()) + "'");
        e.spec.durable = true;
        e.spec.auto_delete = r.getAutoDelete();
        e.spec.internal = r.getInternal();
        e.spec.arguments = wire::read_table(r.getArguments());
        return e;
      });
}

std::string encode_queue(const stored_queue& q) {
  capnp::MallocMessageBuilder builder;
  auto r = builder.initRoot<storage::QueueRecord>();
  r.setVhost(q.vhost);
  r.setName(q.spec.name);
  r.setId(q.id);
  r.setAutoDelete(q.spec.auto_delete);
  if (!q.spec.home.empty()) r.setHome(q.spec.home);
  wire::write_table(q.spec.arguments,
                    r.initArguments(static_cast<unsigned>(q.spec.arguments.size())));
  return to_bytes(builder);
}

stored_queue decode_queue(std::string_view bytes) {
  return from_bytes<storage::QueueRecord>(bytes, "queue", [](storage::QueueRecord::Reader r) {
    stored_queue q;
    q.vhost = wire::text(r.getVhost());
    q.spec.name = wire::text(r.getName());
    q.spec.durable = true;
    q.spec.auto_delete = r.getAutoDelete();
    q.spec.arguments = wire::read_table(r.getArguments());
    q.spec.home = wire::text(r.getHome());
    q.id = r.getId();
    return q;
  });
}

std::string encode_binding(const stored_binding& b) {
  capnp::MallocMessageBuilder builder;
  auto r = builder.initRoot<storage::BindingRecord>();
  r.setVhost(b.vhost);
  r.setExchange(b.spec.exchange);
  r.setQueue(b.spec.destination);
  r.setToExchange(b.spec.to_exchange);
  r.setKey(b.spec.key);
  wire::write_table(b.spec.arguments,
                    r.initArguments(static_cast<unsigned>(b.spec.arguments.size())));
  return to_bytes(builder);
}

stored_binding decode_binding(std::string_view bytes) {
  return from_bytes<storage::BindingRecord>(bytes, "binding", [](storage::BindingRecord::Reader r) {
    stored_binding b;
    b.vhost = wire::text(r.getVhost());
    b.spec = {wire::text(r.getExchange()), wire::text(r.getQueue()), wire::text(r.getKey()),
              wire::read_table(r.getArguments()), r.getToExchange()};
    return b;
  });
}

}  // namespace warren::persistence
