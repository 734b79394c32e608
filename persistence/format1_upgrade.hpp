// format1_upgrade: brings a data dir written by format 1 (one file per segment, records with a
// flags byte for acks and deliveries, Cap'n Proto payloads) to format 2 (segment_format.hpp),
// without ever writing into an old file.
//
// Per queue folder: the old segments are read (live records kept, delivered bits becoming
// delivered marks) and written as a new store into <folder>.upgrade, which is synced; then the
// old folder is renamed to <folder>.format1 and the new one takes its place. A crash anywhere
// leaves a folder that a later start finishes: an old folder renamed aside without its
// replacement is put back and converted again, a leftover .upgrade is discarded, a folder
// already in format 2 is skipped. The metadata is stamped with format 2 only after every
// folder is converted; then the .format1 copies are removed, except those in which damage was
// found, which are kept as <folder>.format1-damaged for whoever wants to look into them. A
// .format1 copy a crash left behind is read again before it goes: the crash may have come
// before damaged originals were renamed to be kept.
#pragma once

#include "persistence/data_dir.hpp"
#include "persistence/lmdb_store.hpp"

#include <string>
#include <vector>

namespace warren::persistence {

struct format1_report {
  size_t messages = 0;       // live messages carried over
  size_t damaged_bytes = 0;  // skipped as unreadable
};

/// True when `folder` holds a file with a format-2 header (it was converted already).
bool holds_format2(const std::string& folder);

/// Converts one queue folder (see above); throws std::runtime_error naming the file when it
/// cannot read or write.
format1_report upgrade_format1_folder(const std::string& folder, const std::string& label);

/// Converts every queue folder of `queues` if the metadata is of format 1, then stamps it with
/// the current format; removes what an earlier upgrade left behind. Throws on failure, leaving
/// the metadata at format 1 so that the next start tries again.
void upgrade_data_dir(const data_dir& dir, lmdb_store& metadata,
                      const std::vector<stored_queue>& queues);

}  // namespace warren::persistence
