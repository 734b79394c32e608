// topology_view: what a vhost must change to take another member's exchanges and bindings.
// Pure, unit-tested in cluster_parts_test; the vhost actor applies the result in order through
// the same handlers as changes replicated one at a time.
//
// Caveats: exchanges compare by every property (equivalence.hpp); one that differs is deleted
// and declared again, which drops its bindings here before the view's are made. Built-in
// exchanges are never in a vhost_topology, so they are never deleted.
#pragma once

#include "actors/common/cluster_protocol.hpp"

#include <string>
#include <vector>

namespace warren {

/// The identity of a binding: its ends, its key and its arguments in canonical form.
std::string binding_identity(const binding_spec& b);

/// The changes that turn `ours` into `theirs`, in the order to apply them: exchanges `theirs`
/// lacks or has otherwise are deleted, then exchanges it has and we lack (or had otherwise) are
/// declared, then its bindings we lack are bound, and last our bindings it lacks are unbound
/// (so that an auto-delete exchange is not deleted for losing a binding it is about to regain).
std::vector<topology_change> changes_to_adopt(const vhost_topology& ours,
                                              const vhost_topology& theirs);

}  // namespace warren
