// What a node's data dir holds beyond a new node's defaults (vhost "/", user guest and its
// permissions), so that a node about to join a cluster for the first time, whose own metadata
// the cluster's would replace, can refuse to and say what would be lost. RabbitMQ likewise wants a
// reset node for join_cluster; Warren's reset moves the data dir aside and never deletes it.
#pragma once

#include "persistence/lmdb_store.hpp"

#include <string>

namespace warren::node {

/// "2 vhosts (v, w), 3 durable queues with 1.2 MiB of message files, 1 exchange, 2 users"; ""
/// when `contents` and the queue folders hold nothing beyond the defaults.
std::string describe_local_data(const persistence::metadata_contents& contents,
                                const std::string& data_dir);

/// Renames `from` to FROM.before-join-YYYYMMDDTHHMMSSZ beside it (with -2, -3... when that
/// exists: an earlier copy is never overwritten) and returns the new path. Throws
/// std::runtime_error when it cannot.
std::string move_aside_before_join(const std::string& from);

/// move_aside_before_join of the data dir itself.
std::string move_data_dir_aside(const std::string& data_dir);

}  // namespace warren::node
