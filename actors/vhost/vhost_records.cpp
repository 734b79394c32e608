#include "actors/vhost/vhost_records.hpp"

#include "persistence/metadata_codec.hpp"

namespace warren::vhost_records {

using persistence::meta_table;
using persistence::stored_queue;

void put_exchange(const std::string& vhost, const exchange_spec& e, changes& out) {
  out.push_back({meta_table::exchanges, persistence::exchange_key(vhost, e.name),
                 persistence::encode_exchange({vhost, e}), false});
}

void put_queue(const std::string& vhost, const queue_spec& q, uint64_t id, changes& out) {
  stored_queue own{vhost, q, id};
  own.spec.home.clear();  // the node's own record: it is here
  out.push_back({meta_table::queues, persistence::queue_key(vhost, q.name),
                 persistence::encode_queue(own), false});
}

void put_binding(const std::string& vhost, const binding_spec& b, changes& out) {
  out.push_back({meta_table::bindings, persistence::binding_key(vhost, b),
                 persistence::encode_binding({vhost, b}), false});
}

void erase_exchange(const std::string& vhost, const std::string& name, changes& out) {
  out.push_back({meta_table::exchanges, persistence::exchange_key(vhost, name), {}, true});
}

void erase_queue(const std::string& vhost, const std::string& name, changes& out) {
  out.push_back({meta_table::queues, persistence::queue_key(vhost, name), {}, true});
}

void erase_binding(const std::string& vhost, const binding_spec& b, changes& out) {
  out.push_back({meta_table::bindings, persistence::binding_key(vhost, b), {}, true});
}

void put_queue_home(const std::string& vhost, const queue_spec& q, changes& out) {
  out.push_back({meta_table::queue_homes, persistence::queue_key(vhost, q.name),
                 persistence::encode_queue({vhost, q, 0}), false});
}

void erase_queue_home(const std::string& vhost, const std::string& name, changes& out) {
  out.push_back({meta_table::queue_homes, persistence::queue_key(vhost, name), {}, true});
}

}  // namespace warren::vhost_records
