// data_check: `warren-node --check [--repair]`, a look at a data dir while no node runs on it.
//
// It takes the data dir's lock as a node does (so it never reads files a running node writes),
// reads the metadata read-only (every record's checksum) and every queue file (every frame's
// checksum, every index against its segment), and prints one line per finding: "DAMAGED ..."
// when messages are lost or out of reach or the node refuses to start, "NOTE ..." when start-up
// handles it without losing anything; each says what a start does about it and what it costs.
//
// --repair moves the damaged queue files aside, into DATA_DIR/damaged/<time>/queues/<id>/ (a
// segment with its mark and index files), synced, never deleting anything, so that the node
// stops tripping over them. It leaves alone what start-up handles without loss (a torn tail, a
// stale index, damaged marks), what moving would only make worse, and the metadata: damaged
// metadata needs a backup of DATA_DIR/meta or a definitions import.
#pragma once

#include <ostream>
#include <string>

namespace warren::node {

/// Checks (with `repair`, repairs) the data dir at `path`, printing to `out`. Returns 0 when
/// nothing loses data or stops the node (with `repair`: once the moves are done), 1 when
/// something does, 2 when the check could not run: the dir is in use by a running warren-node,
/// is no data dir, or is of a format this build does not check.
int check_data_dir(const std::string& path, bool repair, std::ostream& out);

}  // namespace warren::node
